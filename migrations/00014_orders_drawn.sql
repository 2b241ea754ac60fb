-- +goose Up
-- An order the sale's draw admitted says so (docs/DESIGN.md invariant 9):
-- the audit holds the draw's record of each entrant to the orders, and
-- after the draw a LOST entrant may claim a left-over unit, so an order
-- alone does not tell a draw's admission from a later claim. Adding a
-- column with a constant default rewrites nothing (PostgreSQL 11+).
ALTER TABLE orders ADD COLUMN drawn boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE orders DROP COLUMN drawn;
