package store_test

import (
	"database/sql"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of database/sql
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/migrations"
	"github.com/seckill/seckill/store"
)

// emptyDatabase creates a database with no table yet on the test server,
// dropped when t ends, and returns its URL and a handle on it.
func emptyDatabase(t *testing.T) (string, *sql.DB) {
	t.Helper()
	u, err := url.Parse(testenv.DatabaseURL(t))
	require.NoError(t, err)
	name := "seckill_migrate_" + testenv.Suffix()
	server := u.String()
	u.Path = "/" + name
	dsn := u.String()
	require.NoError(t, store.EnsureDatabase(t.Context(), dsn))
	t.Cleanup(func() { dropDatabase(t, server, name) })
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = db.Close() })
	return dsn, db
}

// The upgrade to variants (migrations/00016_variants.sql) gives every sale
// made before it one variant, sku default, named as the sale, with its
// price and its split; every order and entry holds one unit of it, and the
// units move as before.
func TestMigration16_EverySaleBeforeGetsADefaultVariantWithItsSplit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, db := emptyDatabase(t)
	require.NoError(t, migrations.UpTo(ctx, db, 15))
	var saleID int64
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO sales (name, price_cents, currency, total, available, locked, sold,
			starts_at, ends_at, payment_timeout_seconds, lobby_opens_at, draw_state)
		VALUES ('Flash coupon', 990, 'usd', 10, 6, 3, 1, now() + interval '1 minute', now() + interval '1 hour', 900,
			now() - interval '1 minute', 'OPEN')
		RETURNING id`).Scan(&saleID))
	_, err := db.ExecContext(ctx, `INSERT INTO orders (id, sale_id, user_id, status, stock_locked, amount_cents, currency, created_at, pay_by)
		VALUES (1, $1, 'ann', 'AWAITING_PAYMENT', true, 990, 'usd', now(), now() + interval '15 minutes'),
		       (2, $1, 'bob', 'PAID', false, 990, 'usd', now(), now() + interval '15 minutes')`, saleID)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO lobby_entries (sale_id, user_id, entry) VALUES ($1, 'cy', '\x0102')`, saleID)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, db))

	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	sale, err := st.Sale(ctx, saleID)
	require.NoError(t, err)
	require.Equal(t, []seckill.Variant{{SKU: seckill.DefaultSKU, Name: "Flash coupon", PriceCents: 990, Stock: split(10, 6, 3, 1)}},
		sale.Variants)
	require.Equal(t, split(10, 6, 3, 1), sale.Stock)
	require.Equal(t, int64(990), sale.PriceCents)
	require.Equal(t, 1, sale.LimitPerBuyer)
	require.Equal(t, seckill.DefaultItem, order(t, st, 1).Item)
	require.Equal(t, seckill.DefaultItem, order(t, st, 2).Item)
	entry, err := st.LobbyEntryOf(ctx, saleID, "cy")
	require.NoError(t, err)
	require.Equal(t, seckill.DefaultItem, entry.Item)

	_, err = st.CloseUnpaid(ctx, 1, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	require.Equal(t, split(10, 7, 2, 1), stock(t, st, saleID), "an order from before gives its one unit back")
}

// Down from variants, a sale's split is the sum of its variants' and its
// price the lowest.
func TestMigration16_DownSumsTheVariantsBackIntoTheSale(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, db := emptyDatabase(t)
	require.NoError(t, migrations.Up(ctx, db))
	st, err := store.Open(ctx, dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	sale := createShoes(t, st)
	_, err = startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-43", Quantity: 3})
	require.NoError(t, err)
	_, err = st.ConfirmPayment(ctx, 7, "", "pi_7", time.Now())
	require.NoError(t, err)
	_, err = startItem(t, st, sale.ID, 8, "bob", seckill.Item{SKU: "eu-42", Quantity: 2})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	require.NoError(t, migrations.DownTo(ctx, db, 15))

	var price, total, available, locked, sold int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT price_cents, total, available, locked, sold FROM sales WHERE id = $1`, sale.ID).
		Scan(&price, &total, &available, &locked, &sold))
	require.Equal(t, []int64{11000, 105, 100, 2, 3}, []int64{price, total, available, locked, sold})

	require.NoError(t, migrations.Up(ctx, db), "and up again")
}
