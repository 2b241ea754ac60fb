package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// The rows a re-warm rebuilds the lines from: in join order, a retry
// keeps the first row, a new place replaces it, a buyer who left or whom
// the line served (an order created since they joined, or their carried
// id became an order) is not there, and bad rows are refused.
func TestWaitlistEntries_TheLinesStillWaitingInJoinOrder(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	joined := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	entry := func(user string, order, place int64, item seckill.Item) seckill.WaitlistEntry {
		return seckill.WaitlistEntry{SaleID: sale.ID, UserID: user, Item: item, OrderID: order, Place: place, JoinedAt: joined}
	}
	two := seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}
	for _, e := range []seckill.WaitlistEntry{
		entry("cat", 103, 3, seckill.DefaultItem),
		entry("ann", 101, 1, two),
		entry("bob", 102, 2, seckill.DefaultItem),
		entry("dan", 104, 4, seckill.DefaultItem),
		entry("eve", 105, 5, seckill.DefaultItem),
		entry("fay", 106, 6, seckill.DefaultItem),
	} {
		require.NoError(t, st.SaveWaitlistEntry(ctx, e))
	}
	// ann's retry (ALREADY_WAITING: the same place) carries another id:
	// the first row stays.
	require.NoError(t, st.SaveWaitlistEntry(ctx, entry("ann", 901, 1, seckill.DefaultItem)))
	// bob was served and joined again: his new place replaces the old.
	require.NoError(t, st.SaveWaitlistEntry(ctx, entry("bob", 907, 7, seckill.DefaultItem)))
	// cat left.
	require.NoError(t, st.DeleteWaitlistEntry(ctx, sale.ID, "cat"))
	require.NoError(t, st.DeleteWaitlistEntry(ctx, sale.ID, "nobody"), "no row is no error")
	// dan's order (the line served him) is written; eve holds one from
	// before she joined (closed since: she could join); fay's carried id
	// became another buyer's order (a hand-over between segments).
	startOrder(t, st, sale.ID, 500, "dan")
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 400, SaleID: sale.ID, UserID: "eve", CreatedAt: joined.Add(-time.Minute),
		PayBy: joined.Add(time.Minute)})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(ctx, 400, seckill.CloseCancelled, "", "", joined.Add(-time.Second))
	require.NoError(t, err)
	startOrder(t, st, sale.ID, 106, "gus")
	require.NoError(t, st.SaveWaitlistEntry(ctx, entry("hal", 108, 8, seckill.DefaultItem)))
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "eve", Item: seckill.DefaultItem,
		OrderID: 105, Place: 5, JoinedAt: time.Now().Add(time.Hour)}), "eve's first row stays: same place")

	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	var users []string
	for _, e := range got {
		users = append(users, e.UserID)
	}
	require.Equal(t, []string{"ann", "eve", "bob", "hal"}, users)
	require.Equal(t, entry("ann", 101, 1, two), got[0], "the first row of ann's place")
	require.Equal(t, int64(907), got[2].OrderID, "bob's new place has its own id")

	other := createSale(t, st, 1)
	none, err := st.WaitlistEntries(ctx, other.ID)
	require.NoError(t, err)
	require.Empty(t, none, "a sale's rows are its own")

	for name, bad := range map[string]seckill.WaitlistEntry{
		"user_id":   {SaleID: sale.ID, Item: seckill.DefaultItem, OrderID: 1, Place: 1, JoinedAt: joined},
		"quantity":  {SaleID: sale.ID, UserID: "x", Item: seckill.Item{SKU: "default", Quantity: -1}, OrderID: 1, Place: 1, JoinedAt: joined},
		"order_id":  {SaleID: sale.ID, UserID: "x", Item: seckill.DefaultItem, Place: 1, JoinedAt: joined},
		"joined_at": {SaleID: sale.ID, UserID: "x", Item: seckill.DefaultItem, OrderID: 1, Place: 1},
	} {
		err := st.SaveWaitlistEntry(ctx, bad)
		require.ErrorContains(t, err, name, name)
	}
}
