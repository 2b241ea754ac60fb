-- +goose Up
-- Variants, the limit per buyer and quantities (docs/API.md v4 "Sales",
-- issue 32). A sale sells one product in 1..100 variants, each with its
-- own price and its own stock split; an order, a lobby entry and a restock
-- name one variant and count units of it.
--
-- The variants become the one authority on stock (docs/DESIGN.md invariant
-- 1, per variant and in units): the split leaves the sales row rather than
-- being copied, so there is no second count to keep in step, and the sales
-- row stops being the hot row every saga of the sale updates. A sale's
-- total and price are sums over its variants (the lowest price), read,
-- never stored.
--
-- total has no upper bound of its own beyond what a JSON number carries
-- exactly (2^53 - 1, the largest integer JavaScript holds): restocking adds
-- to total and available, each restock bounded by the API, as often as an
-- admin asks.
CREATE TABLE sale_variants (
    sale_id     bigint  NOT NULL REFERENCES sales (id),
    sku         text    NOT NULL CHECK (sku ~ '^[A-Za-z0-9._-]{1,64}$'),
    position    integer NOT NULL CHECK (position BETWEEN 0 AND 99),
    name        text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    price_cents bigint  NOT NULL CHECK (price_cents >= 0),
    total       bigint  NOT NULL CHECK (total BETWEEN 1 AND 9007199254740991),
    available   bigint  NOT NULL CHECK (available >= 0),
    locked      bigint  NOT NULL CHECK (locked >= 0),
    sold        bigint  NOT NULL CHECK (sold >= 0),
    CONSTRAINT sale_variants_split CHECK (available + locked + sold = total),
    PRIMARY KEY (sale_id, sku),
    CONSTRAINT sale_variants_position UNIQUE (sale_id, position)
);

-- Every sale made before v4 sold one product at one price: it has one
-- variant, sku 'default', named as the sale, with the sale's split.
INSERT INTO sale_variants (sale_id, sku, position, name, price_cents, total, available, locked, sold)
SELECT id, 'default', 0, name, price_cents, total, available, locked, sold FROM sales;

ALTER TABLE sales
    ADD COLUMN limit_per_buyer integer NOT NULL DEFAULT 1 CHECK (limit_per_buyer BETWEEN 1 AND 100),
    DROP CONSTRAINT sales_split,
    DROP COLUMN available,
    DROP COLUMN locked,
    DROP COLUMN sold,
    DROP COLUMN total,
    DROP COLUMN price_cents;

-- An order holds quantity units of one variant; every order before v4
-- held one unit of the sale's only one. The variant's foreign key takes
-- the place of the sale's: it implies it (a variant's sale exists), and
-- an order's insert then checks one key, not two. Its check takes a KEY
-- SHARE lock on the variant's row, which the sagas' stock UPDATEs (no key
-- change) never wait for, nor it for them: the same cost the sale's key
-- had when the sales row held the stock.
-- An order the database refused as SOLD_OUT (Redis admitted it while
-- above the database) records in sold_out_give_back how many of its units
-- Redis may have back: the variant's available when it was refused, at
-- most its quantity. Redis took the quantity; giving that many back keeps
-- Redis at or above the database (reconciliation lowers the excess) and
-- strands none, where giving none back would strand quantity - excess.
ALTER TABLE orders
    ADD COLUMN sku text NOT NULL DEFAULT 'default',
    ADD COLUMN quantity integer NOT NULL DEFAULT 1 CHECK (quantity BETWEEN 1 AND 100),
    ADD COLUMN sold_out_give_back integer NOT NULL DEFAULT 0 CHECK (sold_out_give_back BETWEEN 0 AND quantity),
    DROP CONSTRAINT orders_sale_id_fkey,
    ADD CONSTRAINT orders_variant_fkey FOREIGN KEY (sale_id, sku) REFERENCES sale_variants (sale_id, sku);

-- A lobby entry asks for quantity units of one variant (docs/API.md "Fair
-- start"); the draw admits it when that variant still has them.
ALTER TABLE lobby_entries
    ADD COLUMN sku text NOT NULL DEFAULT 'default',
    ADD COLUMN quantity integer NOT NULL DEFAULT 1 CHECK (quantity BETWEEN 1 AND 100),
    DROP CONSTRAINT lobby_entries_sale_id_fkey,
    ADD CONSTRAINT lobby_entries_variant_fkey FOREIGN KEY (sale_id, sku) REFERENCES sale_variants (sale_id, sku);

-- Restocks (docs/API.md "Restocking"), one row per Idempotency-Key of a
-- sale, written in the transaction that adds the units: the same key again
-- finds its row and adds nothing, and the row says what the first request
-- asked for, so a reuse with another body can be told from a retry.
CREATE TABLE sale_restocks (
    sale_id         bigint      NOT NULL,
    idempotency_key text        NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    sku             text        NOT NULL,
    added           bigint      NOT NULL CHECK (added BETWEEN 1 AND 10000000),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sale_id, idempotency_key),
    CONSTRAINT sale_restocks_variant_fkey FOREIGN KEY (sale_id, sku) REFERENCES sale_variants (sale_id, sku)
);

-- No CHECK lists the claim outcomes (sale_claims.outcome is free text since
-- 00009), so NOT_ENOUGH_STOCK and IDEMPOTENCY_KEY_REUSED need no change.

-- +goose Down
-- Back to one split per sale: the sums of its variants, at the lowest
-- price. What v3 cannot hold is lost: the variants' names and prices, the
-- items of orders and entries (an order of several units counts them all
-- the same), the limit and the restocks' keys. A sale restocked past
-- 10,000,000 units stops the downgrade at sales_total_check.
DROP TABLE sale_restocks;

ALTER TABLE lobby_entries
    DROP CONSTRAINT lobby_entries_variant_fkey,
    ADD CONSTRAINT lobby_entries_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES sales (id),
    DROP COLUMN quantity,
    DROP COLUMN sku;

ALTER TABLE orders
    DROP CONSTRAINT orders_variant_fkey,
    ADD CONSTRAINT orders_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES sales (id),
    DROP COLUMN sold_out_give_back,
    DROP COLUMN quantity,
    DROP COLUMN sku;

ALTER TABLE sales
    ADD COLUMN price_cents bigint,
    ADD COLUMN total bigint,
    ADD COLUMN available bigint,
    ADD COLUMN locked bigint,
    ADD COLUMN sold bigint;
UPDATE sales s
SET price_cents = v.price_cents, total = v.total, available = v.available, locked = v.locked, sold = v.sold
FROM (SELECT sale_id, min(price_cents) AS price_cents, sum(total) AS total, sum(available) AS available,
             sum(locked) AS locked, sum(sold) AS sold
      FROM sale_variants GROUP BY sale_id) v
WHERE v.sale_id = s.id;
ALTER TABLE sales
    ALTER COLUMN price_cents SET NOT NULL,
    ALTER COLUMN total SET NOT NULL,
    ALTER COLUMN available SET NOT NULL,
    ALTER COLUMN locked SET NOT NULL,
    ALTER COLUMN sold SET NOT NULL,
    ADD CONSTRAINT sales_price_cents_check CHECK (price_cents >= 0),
    ADD CONSTRAINT sales_total_check CHECK (total BETWEEN 1 AND 10000000),
    ADD CONSTRAINT sales_available_check CHECK (available >= 0),
    ADD CONSTRAINT sales_locked_check CHECK (locked >= 0),
    ADD CONSTRAINT sales_sold_check CHECK (sold >= 0),
    ADD CONSTRAINT sales_split CHECK (available + locked + sold = total),
    DROP COLUMN limit_per_buyer;

DROP TABLE sale_variants;
