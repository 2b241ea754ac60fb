package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

func keptIDs(kept []seckill.KeptShopEvent) []string {
	out := make([]string, len(kept))
	for i, k := range kept {
		out[i] = k.Event.ID
	}
	return out
}

// Kept events stay in the order they were to be sent, per order; a
// redelivery takes every kept event of the named event's order.
func TestKeptShopEvents_InOrderPerOrder(t *testing.T) {
	st, _ := testenv.Store(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ev := func(orderID int64, typ seckill.ShopEventType) seckill.ShopEvent {
		return seckill.NewShopEvent(&seckill.Order{ID: orderID, SaleID: 1, UserID: "u", Status: seckill.StatusClosed, CreatedAt: at}, typ, at)
	}
	held, err := st.HoldsShopEvents(ctx, 7)
	require.NoError(t, err)
	require.False(t, held)

	a1, a2, a3 := ev(7, seckill.ShopOrderAwaitingPayment), ev(7, seckill.ShopOrderClosed), ev(7, seckill.ShopOrderRefunded)
	b1 := ev(8, seckill.ShopOrderAwaitingPayment)
	require.NoError(t, st.KeepShopEvents(ctx, []seckill.ShopEvent{a1, a2}, "the shop answered 500"))
	require.NoError(t, st.KeepShopEvents(ctx, []seckill.ShopEvent{b1}, "connection refused"))
	a3.Redelivery = true // never stored as a redelivery
	require.NoError(t, st.KeepShopEvents(ctx, []seckill.ShopEvent{a3}, "held behind an earlier event"))
	// Kept again (a redelivery that failed again): keeps its place.
	require.NoError(t, st.KeepShopEvents(ctx, []seckill.ShopEvent{a1}, "the shop answered 503"))

	held, err = st.HoldsShopEvents(ctx, 7)
	require.NoError(t, err)
	require.True(t, held)
	all, err := st.KeptShopEvents(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{a1.ID, a2.ID, b1.ID, a3.ID}, keptIDs(all))
	require.Equal(t, "the shop answered 503", all[0].Error)
	require.Equal(t, a1.Order, all[0].Event.Order)
	require.False(t, all[3].Event.Redelivery)

	// Whichever event of the order is named, a redelivery starts from the
	// order's first kept one.
	for _, named := range []string{a1.ID, a2.ID, a3.ID} {
		of, err := st.KeptShopEventsOfOrder(ctx, named)
		require.NoError(t, err)
		require.Equal(t, []string{a1.ID, a2.ID, a3.ID}, keptIDs(of), named)
	}
	_, err = st.KeptShopEventsOfOrder(ctx, "evt_nope")
	require.True(t, errors.Is(err, seckill.ErrNotFound))

	require.NoError(t, st.ForgetKeptShopEvents(ctx, []string{a1.ID, a2.ID, a3.ID}))
	held, err = st.HoldsShopEvents(ctx, 7)
	require.NoError(t, err)
	require.False(t, held)
	all, err = st.KeptShopEvents(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{b1.ID}, keptIDs(all))
}
