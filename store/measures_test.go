package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// Each order's timeline says how far it went: an order payable has the
// moment it became so, one refused for stock has none and says why, a
// missed deadline closes it after its pay_by; another sale's orders are
// not read.
func TestOrderTimelines_TellHowFarEachOrderWent(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale, other := createSale(t, st, 2), createSale(t, st, 1)
	startOrder(t, st, sale.ID, 1, "ann")
	startOrder(t, st, sale.ID, 2, "bob")
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 3, SaleID: sale.ID, UserID: "cy", CreatedAt: time.Now()})
	require.ErrorIs(t, err, store.ErrSoldOut)
	_, err = st.CloseUnpaid(ctx, 2, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	startOrder(t, st, other.ID, 4, "dan")

	lines, err := st.OrderTimelines(ctx, []int64{sale.ID})

	require.NoError(t, err)
	byID := map[int64]store.OrderTimeline{}
	for _, l := range lines {
		byID[l.ID] = l
	}
	require.Len(t, byID, 3, "%v", lines)
	require.NotNil(t, byID[1].AwaitingAt)
	require.Empty(t, byID[1].CloseReason)
	require.Nil(t, byID[1].ClosedAt)
	require.NotNil(t, byID[2].AwaitingAt)
	require.Equal(t, seckill.ClosePaymentTimeout, byID[2].CloseReason)
	require.NotNil(t, byID[2].PayBy)
	require.NotNil(t, byID[2].ClosedAt)
	require.Nil(t, byID[3].AwaitingAt, "refused for stock, it never became payable")
	require.Equal(t, seckill.CloseSoldOut, byID[3].CloseReason)
}

// The last missed deadline is the latest pay_by of the orders closed for
// it: an order closed for another reason, or of another sale, does not
// count, and none missed reads the zero time.
func TestLastMissedPayBy_IsTheLatestDeadlineAnOrderMissed(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale, other := createSale(t, st, 5), createSale(t, st, 5)
	base := time.Now().UTC().Truncate(time.Microsecond)
	for _, o := range []struct {
		id, sale int64
		payBy    time.Duration
		reason   seckill.CloseReason
	}{
		{1, sale.ID, time.Minute, seckill.ClosePaymentTimeout},
		{2, sale.ID, 2 * time.Minute, seckill.ClosePaymentTimeout},
		{3, sale.ID, 3 * time.Minute, seckill.CloseCancelled},
		{4, other.ID, 4 * time.Minute, seckill.ClosePaymentTimeout},
	} {
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: o.id, SaleID: o.sale, UserID: fmt.Sprint("buyer-", o.id),
			CreatedAt: base, PayBy: base.Add(o.payBy)})
		require.NoError(t, err)
	}
	none, err := st.LastMissedPayBy(ctx, []int64{sale.ID})
	require.NoError(t, err)
	require.True(t, none.IsZero(), "no order missed its deadline yet: %s", none)
	for _, c := range []struct {
		id     int64
		reason seckill.CloseReason
	}{{1, seckill.ClosePaymentTimeout}, {2, seckill.ClosePaymentTimeout}, {3, seckill.CloseCancelled}, {4, seckill.ClosePaymentTimeout}} {
		_, err := st.CloseUnpaid(ctx, c.id, c.reason, "", "", time.Now())
		require.NoError(t, err)
	}

	last, err := st.LastMissedPayBy(ctx, []int64{sale.ID})

	require.NoError(t, err)
	require.True(t, base.Add(2*time.Minute).Equal(last), "want %s, got %s", base.Add(2*time.Minute), last)
}

// The lobby's size is its rows and its indexes; its count is the sale's
// own entries.
func TestLobbySizeAndCount_MeasureTheLobby(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := testenv.LobbySale(t, st, 1, "ann", "bob", "cy")
	testenv.LobbySale(t, st, 1, "dan")

	size, err := st.LobbySize(ctx)
	require.NoError(t, err)
	n, err := st.LobbyCount(ctx, sale.ID)
	require.NoError(t, err)

	require.Positive(t, size.Heap)
	require.Positive(t, size.Indexes)
	require.Equal(t, size.Heap+size.Indexes, size.Total)
	require.EqualValues(t, 3, n)
}

// The draw's outcomes count every entry, those not settled under "";
// a winner is payable once their order has left QUEUED, and not before
// it has a row.
func TestEntryOutcomesAndWinnersNotYetPayable_FollowTheDraw(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := testenv.LobbySale(t, st, 2, "ann", "bob", "cy", "dan")
	require.NoError(t, st.SettleEntries(ctx, sale.ID, []*seckill.LobbyEntry{
		{UserID: "ann", Rank: 1, Outcome: seckill.EntryWon, OrderID: 101},
		{UserID: "bob", Rank: 2, Outcome: seckill.EntryWon, OrderID: 102},
		{UserID: "cy", Rank: 3, Outcome: seckill.EntryLost},
	}, 4))

	outcomes, err := st.EntryOutcomes(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{seckill.EntryWon: 2, seckill.EntryLost: 1, "": 1}, outcomes)

	waiting, err := st.WinnersNotYetPayable(ctx, sale.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, waiting, "neither winner's order has a row yet")

	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 101, SaleID: sale.ID, UserID: "ann", CreatedAt: time.Now(), Drawn: true})
	require.NoError(t, err)
	waiting, err = st.WinnersNotYetPayable(ctx, sale.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, waiting, "ann's order is AWAITING_PAYMENT, bob's has no row")
}
