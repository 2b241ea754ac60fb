-- +goose Up
-- A payment seckill could not honour (late, duplicate or not matching the
-- order) is refunded, one refund per provider event.
CREATE TABLE refunds (
    event_id           TEXT        PRIMARY KEY,
    order_id           BIGINT,
    payment_intent_id  TEXT        NOT NULL,
    amount_cents       BIGINT      NOT NULL CHECK (amount_cents >= 0),
    currency           TEXT        NOT NULL,
    reason             TEXT        NOT NULL CHECK (reason IN ('LATE', 'DUPLICATE', 'MISMATCH')),
    status             TEXT        NOT NULL CHECK (status IN ('PENDING', 'SUCCEEDED')),
    provider_refund_id TEXT,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX refunds_order ON refunds (order_id);

-- The ledger of the development payment provider (payments.DevProvider):
-- what a real provider would keep on its side, idempotent by key.
CREATE TABLE dev_provider_refunds (
    idempotency_key   TEXT        PRIMARY KEY,
    id                TEXT        NOT NULL UNIQUE,
    payment_intent_id TEXT        NOT NULL,
    amount_cents      BIGINT      NOT NULL,
    currency          TEXT        NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE dev_provider_refunds;
DROP TABLE refunds;
