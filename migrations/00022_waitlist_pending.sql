-- +goose Up
-- A pending row (docs/DESIGN.md invariant 10): a join writes its buyer's
-- row before it asks Redis, with no place and no order id yet, and fills
-- both once Redis gave the place, before the buyer is told 201. A buyer
-- waiting in Redis with no row at all was therefore never let through a
-- join and is a violation the audit reports; one whose row is pending
-- was never answered 201 (the join is in flight, or its API stopped
-- before answering). Everything that reads the rows as places (the
-- re-warm's rebuild, the highest place) ignores pending rows.
ALTER TABLE waitlist_entries
    ALTER COLUMN place DROP NOT NULL,
    ALTER COLUMN order_id DROP NOT NULL,
    ADD CONSTRAINT waitlist_entries_pending CHECK ((place IS NULL) = (order_id IS NULL));

-- +goose Down
-- A pending row was never answered 201: nothing is lost with it.
DELETE FROM waitlist_entries WHERE place IS NULL;
ALTER TABLE waitlist_entries
    DROP CONSTRAINT waitlist_entries_pending,
    ALTER COLUMN place SET NOT NULL,
    ALTER COLUMN order_id SET NOT NULL;
