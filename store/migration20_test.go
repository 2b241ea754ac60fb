package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/migrations"
	"github.com/seckill/seckill/store"
)

// A draw ranked before the draw by variant (migrations/00020) is settled
// after it by the new code, which admits the entries that fit: the
// migration fixes its stock (the variant's total) and marks its ranks
// within it as fitting, so a draw in flight through the upgrade admits
// ranks 1..stock as before.
func TestMigration20_ADrawRankedBeforeItFitsItsRanksWithinTheStock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, db := emptyDatabase(t)
	require.NoError(t, migrations.UpTo(ctx, db, 17))
	var ranked, open int64
	for _, s := range []struct {
		state string
		id    *int64
	}{{"RANKED", &ranked}, {"OPEN", &open}} {
		require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO sales (name, currency, starts_at, ends_at, payment_timeout_seconds, lobby_opens_at, draw_state)
			VALUES ('Fair drop', 'usd', now() - interval '1 minute', now() + interval '1 hour', 900, now() - interval '1 hour', $1)
			RETURNING id`, s.state).Scan(s.id))
		_, err := db.ExecContext(ctx, `INSERT INTO sale_variants (sale_id, sku, position, name, price_cents, total, available, locked, sold)
			VALUES ($1, 'default', 0, 'Fair drop', 990, 2, 2, 0, 0)`, *s.id)
		require.NoError(t, err)
	}
	_, err := db.ExecContext(ctx, `INSERT INTO lobby_entries (sale_id, user_id, entry, rank) VALUES
		($1, 'ann', '\x01', 3), ($1, 'bob', '\x02', 1), ($1, 'cy', '\x03', 2), ($2, 'dee', '\x04', NULL)`, ranked, open)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, db))

	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	entries, err := st.EntriesFrom(ctx, ranked, 1, 10)
	require.NoError(t, err)
	var fits []bool
	for _, e := range entries {
		fits = append(fits, e.Fits)
	}
	require.Equal(t, []bool{true, true, false}, fits, "ranks 1 and 2 of 2 units")
	stock, err := st.FreezeDrawStock(ctx, ranked)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{seckill.DefaultSKU: 2}, stock)
	vs, err := st.DrawVariants(ctx, open)
	require.NoError(t, err)
	require.Equal(t, []seckill.DrawVariant{{SKU: seckill.DefaultSKU}}, vs, "a lobby still open has no stock fixed yet")

	require.NoError(t, migrations.DownTo(ctx, db, 17), "and down")
	require.NoError(t, migrations.Up(ctx, db), "and up again")
}

// The draw's stock is fixed once: a restock after the draw does not
// change what it drew.
func TestFreezeDrawStock_FixesEachVariantsStockOnce(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := lobbyShoes(t, st)
	first, err := st.FreezeDrawStock(ctx, sale.ID)
	require.NoError(t, err)
	require.NoError(t, st.Gorm().Exec(`UPDATE sale_variants SET total = total + 10, available = available + 10 WHERE sale_id = ?`, sale.ID).Error)
	again, err := st.FreezeDrawStock(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, first, again)
	vs, err := st.DrawVariants(ctx, sale.ID)
	require.NoError(t, err)
	for _, v := range vs {
		require.Equal(t, first[v.SKU], v.Stock, v.SKU)
	}
}
