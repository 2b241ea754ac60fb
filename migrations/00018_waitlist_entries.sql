-- +goose Up
-- The durable waitlist (docs/DESIGN.md invariant 10): every buyer answered
-- 201 WAITING, and every entrant the draw queued, has a row here, written
-- after Redis put them in line and before the answer. Redis is the line;
-- this is what a re-warm rebuilds it from when Redis lost the sale's keys
-- (warmup, redisstore.RewarmRebuilding).
--
-- place is the join sequence Redis gave the buyer (the score of their
-- place in the line: segment 0 numbers the joins of a sale of several
-- segments), so the rows give each variant's line in its first come, first
-- served order, across segments. order_id is an id minted for the row (not
-- the join's, which a sale of several segments may give another buyer):
-- the order the buyer gets if a re-warm serves them. joined_at is the API's
-- clock just before the join: an order of the buyer created at or after it
-- means the line served them, and the row is not rebuilt. Leaving the line
-- deletes the row (leaving is final).
CREATE TABLE waitlist_entries (
    sale_id   bigint      NOT NULL REFERENCES sales (id),
    user_id   text        NOT NULL,
    sku       text        NOT NULL,
    quantity  integer     NOT NULL CHECK (quantity >= 1),
    order_id  bigint      NOT NULL,
    place     bigint      NOT NULL,
    joined_at timestamptz NOT NULL,
    PRIMARY KEY (sale_id, user_id)
);

-- +goose Down
DROP TABLE waitlist_entries;
