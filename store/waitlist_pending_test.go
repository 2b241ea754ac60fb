package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/migrations"
	"github.com/seckill/seckill/store"
)

// A join writes its buyer's row pending (no place) before it asks Redis
// (migration 00022, docs/DESIGN.md invariant 10). A pending row is no
// place: the re-warm's rebuild does not return it and the highest place
// does not count it; a row that has a place is kept by a pending write
// (a retry of a buyer answered 201).
func TestWaitlistPending_IsNoPlaceAndKeepsARowThatHasOne(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	pend := func(user string, item seckill.Item) {
		t.Helper()
		require.NoError(t, st.PendWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: user, Item: item, JoinedAt: now}))
	}
	ann := seckill.WaitlistEntry{SaleID: sale.ID, UserID: "ann", Item: seckill.DefaultItem, OrderID: 3001, Place: 4, JoinedAt: now}
	require.NoError(t, st.SaveWaitlistEntry(ctx, ann))
	pend("bob", seckill.DefaultItem)
	pend("bob", seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}) // a join in flight twice: no error
	pend("ann", seckill.DefaultItem)

	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, []seckill.WaitlistEntry{ann}, got, "bob's pending row is no place; ann's row keeps hers")
	high, err := st.WaitlistHighPlace(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(4), high)

	// Leaving, or the order the line gave, deletes a pending row and keeps
	// the highest place as it was.
	require.NoError(t, st.DeleteWaitlistEntry(ctx, sale.ID, "bob"))
	pend("cat", seckill.DefaultItem)
	startOrder(t, st, sale.ID, 5001, "cat")
	require.Equal(t, 0, pendingRows(t, st, sale.ID))
	high, err = st.WaitlistHighPlace(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(4), high)

	// The draw's save gives a pending row its place.
	pend("dan", seckill.DefaultItem)
	dan := seckill.WaitlistEntry{SaleID: sale.ID, UserID: "dan", Item: seckill.DefaultItem, OrderID: 3002, Place: 5, JoinedAt: now}
	require.NoError(t, st.SaveWaitlistEntry(ctx, dan))
	got, err = st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, []seckill.WaitlistEntry{ann, dan}, got)

	for name, bad := range map[string]seckill.WaitlistEntry{
		"user_id":   {SaleID: sale.ID, Item: seckill.DefaultItem, JoinedAt: now},
		"quantity":  {SaleID: sale.ID, UserID: "x", Item: seckill.Item{SKU: "default", Quantity: -1}, JoinedAt: now},
		"joined_at": {SaleID: sale.ID, UserID: "x", Item: seckill.DefaultItem},
	} {
		require.ErrorContains(t, st.PendWaitlistEntry(ctx, bad), name, name)
	}
}

// The place Redis gave fills the buyer's row: a pending one, or one of
// another place (they were served or left, and joined again); a row of
// the same place keeps its first order id (a retry). With no row (a leave
// or the buyer's order deleted it) nothing is written and the answer is
// false: the buyer must not be told 201.
func TestWaitlistFill_FillsOnlyTheBuyersRow(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	two := seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}
	fill := func(e seckill.WaitlistEntry) bool {
		t.Helper()
		kept, err := st.FillWaitlistEntry(ctx, e)
		require.NoError(t, err)
		return kept
	}
	entries := func() []seckill.WaitlistEntry {
		t.Helper()
		got, err := st.WaitlistEntries(ctx, sale.ID)
		require.NoError(t, err)
		return got
	}

	require.NoError(t, st.PendWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem, JoinedAt: now}))
	bob := seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: two, OrderID: 3001, Place: 2, JoinedAt: now}
	require.True(t, fill(bob), "Redis' item and place fill the pending row")
	require.Equal(t, []seckill.WaitlistEntry{bob}, entries())

	retry := bob
	retry.OrderID, retry.JoinedAt = 3009, now.Add(time.Minute)
	require.True(t, fill(retry))
	require.Equal(t, []seckill.WaitlistEntry{bob}, entries(), "a retry of the same place keeps the first row")

	again := seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem, OrderID: 3002, Place: 7, JoinedAt: now}
	require.True(t, fill(again))
	require.Equal(t, []seckill.WaitlistEntry{again}, entries(), "a new place replaces the old")

	// bob's carried id became an order (a re-warm served him), and he
	// joined again at the same place of a new line: the row is filled anew.
	startOrder(t, st, sale.ID, 3002, "gus")
	served := again
	served.OrderID = 3003
	require.True(t, fill(served))
	require.Equal(t, []seckill.WaitlistEntry{served}, entries())

	// A leave deleted the row while the join was in flight.
	require.NoError(t, st.DeleteWaitlistEntry(ctx, sale.ID, "bob"))
	require.False(t, fill(served), "no row to fill")
	require.Empty(t, entries(), "and none is written")
	require.Equal(t, 0, pendingRows(t, st, sale.ID))
	require.False(t, fill(seckill.WaitlistEntry{SaleID: sale.ID, UserID: "nobody", Item: seckill.DefaultItem, OrderID: 1, Place: 1, JoinedAt: now}))

	for name, bad := range map[string]seckill.WaitlistEntry{
		"user_id":   {SaleID: sale.ID, Item: seckill.DefaultItem, OrderID: 1, Place: 1, JoinedAt: now},
		"quantity":  {SaleID: sale.ID, UserID: "x", Item: seckill.Item{SKU: "default", Quantity: -1}, OrderID: 1, Place: 1, JoinedAt: now},
		"order_id":  {SaleID: sale.ID, UserID: "x", Item: seckill.DefaultItem, Place: 1, JoinedAt: now},
		"joined_at": {SaleID: sale.ID, UserID: "x", Item: seckill.DefaultItem, OrderID: 1, Place: 1},
	} {
		_, err := st.FillWaitlistEntry(ctx, bad)
		require.ErrorContains(t, err, name, name)
	}
}

// A join Redis gave no place drops its pending row, and only a pending
// one: the row of a buyer answered 201 stays.
func TestWaitlistDropPending_DropsOnlyAPendingRow(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	ann := seckill.WaitlistEntry{SaleID: sale.ID, UserID: "ann", Item: seckill.DefaultItem, OrderID: 3001, Place: 1, JoinedAt: now}
	require.NoError(t, st.SaveWaitlistEntry(ctx, ann))
	require.NoError(t, st.PendWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem, JoinedAt: now}))
	require.Equal(t, 1, pendingRows(t, st, sale.ID))

	require.NoError(t, st.DropPendingWaitlistEntry(ctx, sale.ID, "bob"))
	require.NoError(t, st.DropPendingWaitlistEntry(ctx, sale.ID, "ann"))
	require.NoError(t, st.DropPendingWaitlistEntry(ctx, sale.ID, "nobody"), "no row is no error")
	require.Equal(t, 0, pendingRows(t, st, sale.ID))
	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, []seckill.WaitlistEntry{ann}, got)
}

// Migration 00022 rolls back: a pending row (never answered 201) goes, the
// rows with a place stay.
func TestMigration22_RollsBackDroppingOnlyPendingRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, db := emptyDatabase(t)
	require.NoError(t, migrations.Up(ctx, db))
	var sale int64
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO sales (name, currency, starts_at, ends_at, payment_timeout_seconds)
		VALUES ('Drop', 'usd', now(), now() + interval '1 hour', 900) RETURNING id`).Scan(&sale))
	_, err := db.ExecContext(ctx, `INSERT INTO waitlist_entries (sale_id, user_id, sku, quantity, order_id, place, joined_at) VALUES
		($1, 'ann', 'default', 1, 3001, 1, now()), ($1, 'bob', 'default', 1, NULL, NULL, now())`, sale)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO waitlist_entries (sale_id, user_id, sku, quantity, order_id, place, joined_at)
		VALUES ($1, 'cat', 'default', 1, 3002, NULL, now())`, sale)
	require.Error(t, err, "a place and an order id come together")

	require.NoError(t, migrations.DownTo(ctx, db, 21))
	var users []string
	rows, err := db.QueryContext(ctx, `SELECT user_id FROM waitlist_entries ORDER BY user_id`)
	require.NoError(t, err)
	for rows.Next() {
		var u string
		require.NoError(t, rows.Scan(&u))
		users = append(users, u)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"ann"}, users)
	require.NoError(t, migrations.Up(ctx, db), "and up again")
}

// pendingRows counts saleID's pending rows.
func pendingRows(t *testing.T, st *store.Store, saleID int64) int {
	t.Helper()
	var n int
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM waitlist_entries WHERE sale_id = ? AND place IS NULL`, saleID).Scan(&n).Error)
	return n
}
