-- +goose Up
-- Sales hold the authoritative stock split. The CHECKs make oversell and a
-- broken split impossible at every commit (DESIGN.md invariant 1).
CREATE TABLE sales (
    id                      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                    TEXT        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    price_cents             BIGINT      NOT NULL CHECK (price_cents >= 0),
    currency                TEXT        NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    total                   BIGINT      NOT NULL CHECK (total BETWEEN 1 AND 10000000),
    available               BIGINT      NOT NULL CHECK (available >= 0),
    locked                  BIGINT      NOT NULL CHECK (locked >= 0),
    sold                    BIGINT      NOT NULL CHECK (sold >= 0),
    starts_at               TIMESTAMPTZ NOT NULL,
    ends_at                 TIMESTAMPTZ NOT NULL,
    payment_timeout_seconds INTEGER     NOT NULL CHECK (payment_timeout_seconds BETWEEN 5 AND 86400),
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT sales_split CHECK (available + locked + sold = total),
    CONSTRAINT sales_window CHECK (ends_at > starts_at)
);

-- One row per admitted claim, written by the saga (id from the API's
-- time-ordered generator). stock_locked records whether this order holds a
-- unit in sales.locked, so compensation releases exactly what it took.
CREATE TABLE orders (
    id                BIGINT      PRIMARY KEY,
    sale_id           BIGINT      NOT NULL REFERENCES sales (id),
    user_id           TEXT        NOT NULL,
    status            TEXT        NOT NULL CHECK (status IN ('QUEUED', 'AWAITING_PAYMENT', 'PAID', 'CLOSED')),
    close_reason      TEXT        CHECK (close_reason IN ('PAYMENT_TIMEOUT', 'CANCELLED', 'PAYMENT_FAILED', 'SOLD_OUT')),
    stock_locked      BOOLEAN     NOT NULL DEFAULT false,
    amount_cents      BIGINT      NOT NULL,
    currency          TEXT        NOT NULL,
    pay_by            TIMESTAMPTZ,
    payment_intent_id TEXT,
    created_at        TIMESTAMPTZ NOT NULL,
    paid_at           TIMESTAMPTZ,
    closed_at         TIMESTAMPTZ,
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT orders_closed_has_reason CHECK ((status = 'CLOSED') = (close_reason IS NOT NULL))
);

-- Invariant 3: at most one active order per user and sale, whatever Redis says.
CREATE UNIQUE INDEX orders_one_active_per_user ON orders (sale_id, user_id) WHERE status <> 'CLOSED';
CREATE INDEX orders_sale_status ON orders (sale_id, status);

-- Every webhook event, recorded (id unique) before anything else happens.
CREATE TABLE payment_events (
    id                TEXT        PRIMARY KEY,
    type              TEXT        NOT NULL,
    order_id          BIGINT,
    payment_intent_id TEXT,
    amount_cents      BIGINT,
    currency          TEXT,
    payload           JSONB       NOT NULL,
    outcome           TEXT        NOT NULL,
    received_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at      TIMESTAMPTZ
);
CREATE INDEX payment_events_order ON payment_events (order_id);

-- +goose Down
DROP TABLE payment_events;
DROP TABLE orders;
DROP TABLE sales;
