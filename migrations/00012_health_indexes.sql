-- +goose NO TRANSACTION
-- +goose Up
-- The worker's health gauges (package opsmetrics) read, at every scrape,
-- the orders awaiting payment past their pay_by, the refunds pending and
-- the payment events never delivered. These partial indexes hold only
-- those rows, so each read stays small however many orders, refunds and
-- events the tables keep. Built CONCURRENTLY: an upgrade does not block
-- the writes of a running sale.
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_awaiting_pay_by ON orders (pay_by) WHERE status = 'AWAITING_PAYMENT';
CREATE INDEX CONCURRENTLY IF NOT EXISTS refunds_pending ON refunds (created_at) WHERE status = 'PENDING';
CREATE INDEX CONCURRENTLY IF NOT EXISTS payment_events_undelivered ON payment_events (received_at)
    WHERE delivered_at IS NULL AND outcome = 'RECEIVED';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS payment_events_undelivered;
DROP INDEX CONCURRENTLY IF EXISTS refunds_pending;
DROP INDEX CONCURRENTLY IF EXISTS orders_awaiting_pay_by;
