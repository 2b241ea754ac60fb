package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// Review finding R4: WaitlistEntries decides "the line served them" by
// comparing two clocks: the row's joined_at is the API host's (or the
// draw worker's) clock before the join, the order's created_at is its
// admission time on Redis' clock (activities: CreatedAt = AdmittedAt). With
// the API's clock 50 ms ahead of Redis', a buyer served 20 ms after joining
// has an order created "before" they joined; once that order is closed
// (unpaid) and Redis loses the sale, the re-warm puts the buyer back in the
// line they were served from, and serves them a second time.
func TestReview_ServedBuyerOrderOnAnotherClockIsNotSeenAsServed(t *testing.T) {
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
