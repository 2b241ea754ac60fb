-- +goose Up
-- Where the sale's end cut its draw (docs/API.md "Fair start"): the first
-- rank within min(stock, entries) that was not admitted because the sale
-- had ended by then (NULL: the end cut nothing). The draw admits in rank
-- order, so every rank from it on is LOST and K, the ranks admitted, is
-- this rank less one: `seckill draw verify` recomputes K from it.
ALTER TABLE sales ADD COLUMN draw_ended_at_rank integer;

-- +goose Down
ALTER TABLE sales DROP COLUMN draw_ended_at_rank;
