-- +goose Up
-- A restock's Redis half (docs/API.md "Restocking"): the database half
-- (00016's sale_restocks row and the units it adds) commits first; then
-- the units are handed to the waiting buyers and the stock in Redis, and
-- only then is the restock marked applied. A restock left not applied (the
-- process stopped between the halves) is findable: a retry with the same
-- Idempotency-Key, or reconciliation, runs the Redis half again, and a
-- re-warm loads the sale without its units (Redis gets them from the
-- Redis half, once), so no unit is loaded twice.
--
-- id names the restock in Redis: the Redis half is idempotent per id, and
-- the moves it parks between a sale's segments are named after it.
ALTER TABLE sale_restocks
    ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY,
    ADD COLUMN applied_at timestamptz,
    ADD CONSTRAINT sale_restocks_id UNIQUE (id);

-- Nothing ran a restock's Redis half before this migration, and nothing
-- but the database half's own tests wrote these rows: they are taken as
-- applied, so re-warm keeps counting them as it did.
UPDATE sale_restocks SET applied_at = created_at;

-- Reconciliation's question, per sale: which restocks are not applied?
CREATE INDEX sale_restocks_unapplied ON sale_restocks (sale_id, id) WHERE applied_at IS NULL;

-- +goose Down
DROP INDEX sale_restocks_unapplied;
ALTER TABLE sale_restocks
    DROP CONSTRAINT sale_restocks_id,
    DROP COLUMN applied_at,
    DROP COLUMN id;
