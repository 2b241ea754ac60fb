-- +goose Up
-- Order events to the shop whose delivery gave up after retrying for days
-- (docs/API.md "Order events to the shop"): kept until an operator sends
-- them again (seckill events failed / redeliver). seq keeps an order's
-- events in the order they were to be sent.
CREATE TABLE shop_events_kept (
    id       text PRIMARY KEY,
    seq      bigserial NOT NULL,
    order_id bigint NOT NULL,
    type     text NOT NULL CHECK (type IN ('order.awaiting_payment', 'order.paid', 'order.closed', 'order.refunded')),
    event    jsonb NOT NULL,
    error    text NOT NULL,
    kept_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shop_events_kept_order ON shop_events_kept (order_id, seq);

-- +goose Down
DROP TABLE shop_events_kept;
