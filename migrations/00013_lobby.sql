-- +goose Up
-- A sale may start with a lobby and a draw (docs/API.md "Fair start") and
-- may require a proof of work (docs/API.md "Proof of work").
--
-- The seed is fixed when the sale is created and kept here, secret, until
-- the draw has run: only its SHA-256 (the commitment) is shown before.
-- draw_state walks OPEN -> RANKED -> DONE; draw_next_rank is the first
-- rank the draw has not yet settled, so a draw stopped at any point goes
-- on from there.
ALTER TABLE sales
    ADD COLUMN lobby_opens_at   timestamptz,
    ADD COLUMN proof_difficulty integer NOT NULL DEFAULT 0,
    ADD COLUMN draw_seed        bytea,
    ADD COLUMN draw_state       text,
    ADD COLUMN draw_next_rank   integer NOT NULL DEFAULT 1,
    ADD COLUMN draw_entries     integer,
    ADD COLUMN draw_admitted    integer,
    ADD COLUMN drawn_at         timestamptz;

-- One entry per buyer and sale. Entries live in PostgreSQL, not Redis:
-- the draw's inputs must survive the loss of Redis, and the draw reads
-- them in batches. rank, outcome and order_id are written by the draw.
CREATE TABLE lobby_entries (
    sale_id    bigint      NOT NULL REFERENCES sales (id),
    user_id    text        NOT NULL,
    entry      bytea       NOT NULL,
    entered_at timestamptz NOT NULL DEFAULT now(),
    rank       integer,
    outcome    text,
    order_id   bigint,
    PRIMARY KEY (sale_id, user_id)
);
CREATE UNIQUE INDEX lobby_entries_entry ON lobby_entries (sale_id, entry);
CREATE UNIQUE INDEX lobby_entries_rank ON lobby_entries (sale_id, rank) WHERE rank IS NOT NULL;

-- +goose Down
DROP TABLE lobby_entries;
ALTER TABLE sales
    DROP COLUMN drawn_at,
    DROP COLUMN draw_admitted,
    DROP COLUMN draw_entries,
    DROP COLUMN draw_next_rank,
    DROP COLUMN draw_state,
    DROP COLUMN draw_seed,
    DROP COLUMN proof_difficulty,
    DROP COLUMN lobby_opens_at;
