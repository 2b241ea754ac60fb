-- +goose Up
-- The payment object a provider other than dev makes for an order (a
-- Stripe PaymentIntent), created by the buyer's POST /orders/{id}/payment
-- or by the order's saga, whichever comes first: both ask the provider
-- with one idempotency key derived from the order id, and the first row
-- written stays. No foreign key: the buyer may ask while the order is
-- QUEUED, before its saga has written its row.
CREATE TABLE payment_intents (
    order_id      BIGINT PRIMARY KEY,
    provider      TEXT        NOT NULL,
    intent_id     TEXT        NOT NULL,
    client_secret TEXT        NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE payment_intents;
