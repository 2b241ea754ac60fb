-- +goose Up
-- The highest place a sale's lines ever gave (docs/DESIGN.md invariant 10;
-- hostile review R2). A buyer's row in waitlist_entries is deleted when
-- the line serves them (their order is written, store.StartOrder) or they
-- leave, so MAX(place) over the rows can go down; a re-warm numbering the
-- joins after it would give a new join a place given before. high keeps
-- the highest place of a deleted row; a re-warm numbers the joins after
-- the greatest of it, the rows' places and the live segments' lines.
CREATE TABLE waitlist_places (
    sale_id bigint NOT NULL PRIMARY KEY REFERENCES sales (id),
    high    bigint NOT NULL
);

-- +goose Down
DROP TABLE waitlist_places;
