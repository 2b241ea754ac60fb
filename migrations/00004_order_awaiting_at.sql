-- +goose Up
-- When the order's saga took its unit and made it payable in the database
-- (AWAITING_PAYMENT). pay_by is fixed at admission now, so it no longer
-- tells when that happened; operators and the benchmark read the saga's
-- lag here.
ALTER TABLE orders ADD COLUMN awaiting_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE orders DROP COLUMN awaiting_at;
