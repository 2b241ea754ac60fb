-- +goose Up
-- The W3C traceparent of the order's saga when it was written (tracing on,
-- docs/API.md "Tracing"), so a payment webhook's trace can link to the
-- order's. NULL when the saga was not traced.
ALTER TABLE orders ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE orders DROP COLUMN trace_parent;
