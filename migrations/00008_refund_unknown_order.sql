-- +goose Up
-- A payment for an order that can never be honoured (never written, its
-- admission lost) is refunded too (docs/DESIGN.md invariant 5), with the
-- reason its event was given: UNKNOWN_ORDER.
ALTER TABLE refunds DROP CONSTRAINT refunds_reason_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_reason_check
    CHECK (reason IN ('LATE', 'DUPLICATE', 'MISMATCH', 'UNKNOWN_ORDER'));

-- +goose Down
ALTER TABLE refunds DROP CONSTRAINT refunds_reason_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_reason_check
    CHECK (reason IN ('LATE', 'DUPLICATE', 'MISMATCH'));
