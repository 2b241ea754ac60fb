-- +goose Up
-- The draw writes the ranks it settles first (through the last entry that
-- fits) from its worker, and the rest inside PostgreSQL when it reaches
-- them (issue 34: a million rows written twice, as ranks and then as LOST,
-- took the draw past a minute). draw_ranked_through is the last rank
-- written; NULL on a draw ranked before this column, whose every entry
-- has its rank.
ALTER TABLE sales ADD COLUMN draw_ranked_through integer;

-- +goose Down
ALTER TABLE sales DROP COLUMN draw_ranked_through;
