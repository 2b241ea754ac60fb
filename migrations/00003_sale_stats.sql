-- +goose Up
-- How each sale's claims were answered. The API processes count in memory
-- and add their counts here about once a second, so the claim path never
-- waits on the database (GET /api/v1/sales/{id}/stats).
CREATE TABLE sale_claims (
    sale_id BIGINT NOT NULL REFERENCES sales (id),
    outcome TEXT   NOT NULL,
    count   BIGINT NOT NULL CHECK (count >= 0),
    PRIMARY KEY (sale_id, outcome)
);

-- When the admission script first answered SOLD_OUT for the sale.
ALTER TABLE sales ADD COLUMN sold_out_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE sales DROP COLUMN sold_out_at;
DROP TABLE sale_claims;
