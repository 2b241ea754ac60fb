-- +goose Up
-- How many parts a sale's Redis stock is split into (docs/API.md
-- "stock_segments"): each part lives in its own Redis Cluster hash slot,
-- so one hot sale can use several Redis primaries. Fixed at creation.
ALTER TABLE sales ADD COLUMN stock_segments INTEGER NOT NULL DEFAULT 1
    CHECK (stock_segments BETWEEN 1 AND 64);

-- +goose Down
ALTER TABLE sales DROP COLUMN stock_segments;
