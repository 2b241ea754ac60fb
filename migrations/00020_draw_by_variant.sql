-- +goose Up
-- The draw by variant (docs/API.md "Fair start", issue 32): in rank order,
-- an entry is admitted when its variant still has its quantity, else it
-- waits in its variant's line. Which entries fit is fixed when the draw
-- ranks the lobby, from each variant's stock then, and recorded, so every
-- retried step of the draw admits the same entries and `seckill draw
-- verify` can be given the stock the draw used even after a restock.
--
-- sale_variants.draw_stock: the variant's units when its sale's draw
-- ranked the lobby (NULL: no draw has ranked); draw_admitted: the entries
-- of the variant the draw admitted, counted once when it is done (GET
-- /draw reads it rather than count a million entries per request).
-- lobby_entries.fits: the
-- entry's quantity fits within its variant's draw_stock less the
-- quantities of the better-ranked entries of the same variant (NULL until
-- ranked).
ALTER TABLE sale_variants
    ADD COLUMN draw_stock bigint CHECK (draw_stock >= 0),
    ADD COLUMN draw_admitted integer CHECK (draw_admitted >= 0);
ALTER TABLE lobby_entries ADD COLUMN fits boolean;

-- Draws ranked before this migration sold one unit of one variant per
-- entry, and no restock came before v4: the stock they drew is the
-- variant's total, and an entry fits when its rank is within it (which is
-- what the sum over the better ranks says for quantity 1).
UPDATE sale_variants v SET draw_stock = v.total
  FROM sales s WHERE s.id = v.sale_id AND s.draw_state IN ('RANKED', 'DONE');
UPDATE sale_variants v SET draw_admitted =
       (SELECT count(*) FROM lobby_entries e WHERE e.sale_id = v.sale_id AND e.sku = v.sku AND e.outcome = 'WON')
  FROM sales s WHERE s.id = v.sale_id AND s.draw_state = 'DONE';
UPDATE lobby_entries e SET fits = r.fits
  FROM (SELECT l.sale_id, l.user_id,
               sum(l.quantity) OVER (PARTITION BY l.sale_id, l.sku ORDER BY l.rank) <= v.draw_stock AS fits
          FROM lobby_entries l JOIN sale_variants v ON v.sale_id = l.sale_id AND v.sku = l.sku
         WHERE l.rank IS NOT NULL AND v.draw_stock IS NOT NULL) r
 WHERE e.sale_id = r.sale_id AND e.user_id = r.user_id;

-- +goose Down
ALTER TABLE lobby_entries DROP COLUMN fits;
ALTER TABLE sale_variants DROP COLUMN draw_stock, DROP COLUMN draw_admitted;
