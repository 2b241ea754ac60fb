-- +goose Up
-- A sale's presale (docs/API.md "Presale"): from presale_starts_at the
-- buyers whose token carries presale_claim ("<JSON Pointer>=<value>", as
-- SECKILL_ADMIN_CLAIM is written) may claim and join the waitlist; everyone
-- else waits for starts_at. Both set or both NULL; a sale has a presale or
-- a lobby, never both.
ALTER TABLE sales
    ADD COLUMN presale_starts_at timestamptz,
    ADD COLUMN presale_claim     text,
    ADD CONSTRAINT sales_presale CHECK (
        (presale_starts_at IS NULL) = (presale_claim IS NULL)
        AND (presale_starts_at IS NULL OR (presale_starts_at < starts_at AND lobby_opens_at IS NULL)));

-- +goose Down
ALTER TABLE sales
    DROP CONSTRAINT sales_presale,
    DROP COLUMN presale_claim,
    DROP COLUMN presale_starts_at;
