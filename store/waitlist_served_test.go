package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// A buyer the line served is not rebuilt, whatever the clocks (hostile
// review R4): the row's joined_at is the API's clock, the order's
// created_at Redis' (here 50 ms behind, the order "created before the
// join"), and neither is compared: the order's write deletes the buyer's
// row, so once that order is closed unpaid and Redis loses the sale, a
// re-warm does not put them back in the line they were served from.
func TestWaitlistServedBuyerIsNotRebuiltWhateverTheClocks(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	joinedAPI := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond) // the API's clock
	redisClockAtJoin := joinedAPI.Add(-50 * time.Millisecond)                  // Redis' clock, 50 ms behind
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		OrderID: 3001, Place: 1, JoinedAt: joinedAPI}))
	// 20 ms after the join a release hands bob a unit: order 5001, admitted
	// (created) at Redis' clock. bob does not pay: it is closed.
	admitted := redisClockAtJoin.Add(20 * time.Millisecond)
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 5001, SaleID: sale.ID, UserID: "bob", CreatedAt: admitted,
		PayBy: admitted.Add(15 * time.Minute)})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(ctx, 5001, seckill.ClosePaymentTimeout, "", "", admitted.Add(15*time.Minute))
	require.NoError(t, err)

	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Empty(t, got, "bob was served from this place (order 5001): his row is not rebuilt")
}

// The order's write takes the buyer out of the sale's lines, keeping the
// place: a re-warm numbers new joins after it. A join Redis answered
// before it served the buyer, saved after their order was written, saves
// nothing while that order is active.
func TestWaitlistStartOrderDeletesTheRowAndKeepsItsPlace(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		OrderID: 3001, Place: 7, JoinedAt: now}))
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "dan", Item: seckill.DefaultItem,
		OrderID: 3002, Place: 3, JoinedAt: now}))
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 5001, SaleID: sale.ID, UserID: "bob", CreatedAt: now, PayBy: now.Add(time.Hour)})
	require.NoError(t, err)

	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "dan", got[0].UserID)
	high, err := st.WaitlistHighPlace(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(7), high, "bob's served place is kept")

	// Saved after the order's write (Redis served bob between its WAITING
	// and the save): bob holds an active order, nothing is saved.
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		OrderID: 3003, Place: 8, JoinedAt: now}))
	got, err = st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Len(t, got, 1)
	high, err = st.WaitlistHighPlace(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(7), high)

	// A retried StartOrder does not delete a row saved since.
	_, err = st.CloseUnpaid(ctx, 5001, seckill.CloseCancelled, "", "", now)
	require.NoError(t, err)
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		OrderID: 3004, Place: 9, JoinedAt: now}))
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 5001, SaleID: sale.ID, UserID: "bob", CreatedAt: now, PayBy: now.Add(time.Hour)})
	require.NoError(t, err)
	got, err = st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, int64(9), got[1].Place)
}
