-- +goose Up
-- A draw nobody can bias (docs/API.md "Fair start", v4): the ranks also
-- depend on a public randomness beacon's round, fixed when the sale is
-- created (so shown from the lobby's opening), and on the entries' Merkle
-- root, committed when the lobby closes, before that round exists.
--
-- draw_beacon_chain is the drand chain's hash (hex), draw_beacon_round the
-- round R and draw_beacon_round_at its publication time (kept so the
-- worker's gauge of a late beacon needs no chain parameters): all three or
-- none (a sale drawn from its secret seed alone, SECKILL_BEACON_URLS=none).
-- draw_entries_tree is the closed lobby's tree summary (draw.Tree: size,
-- root, a hash and first entry per 1024 leaves), written once when the
-- lobby closes, draw_committed_at when (a commit after the round's time
-- could have been made knowing the randomness: the audit and verify fail
-- it); draw_beacon_signature the round's signature, written once
-- it has been fetched and verified, before any rank, and draw_beacon_at
-- when (the delay from starts_at to the randomness used, measured).
ALTER TABLE sales
    ADD COLUMN draw_beacon_chain     text,
    ADD COLUMN draw_beacon_round     bigint,
    ADD COLUMN draw_beacon_round_at  timestamptz,
    ADD COLUMN draw_entries_tree     bytea,
    ADD COLUMN draw_committed_at     timestamptz,
    ADD COLUMN draw_beacon_signature bytea,
    ADD COLUMN draw_beacon_at        timestamptz,
    ADD CONSTRAINT sales_draw_beacon CHECK (
        (draw_beacon_chain IS NULL) = (draw_beacon_round IS NULL)
        AND (draw_beacon_chain IS NULL) = (draw_beacon_round_at IS NULL)
        AND (draw_beacon_signature IS NULL OR draw_beacon_chain IS NOT NULL)
        AND (draw_entries_tree IS NULL) = (draw_committed_at IS NULL));

-- +goose Down
ALTER TABLE sales
    DROP CONSTRAINT sales_draw_beacon,
    DROP COLUMN draw_beacon_at,
    DROP COLUMN draw_beacon_signature,
    DROP COLUMN draw_committed_at,
    DROP COLUMN draw_entries_tree,
    DROP COLUMN draw_beacon_round_at,
    DROP COLUMN draw_beacon_round,
    DROP COLUMN draw_beacon_chain;
