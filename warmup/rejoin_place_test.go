package warmup_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/warmup"
)

// A re-warm that puts nobody back (every row's buyer was served since)
// still numbers the joins after it past every place the database
// recorded (hostile review R2), served rows' included: a buyer served
// earlier who joins again is given a new place, SaveWaitlistEntry saves
// it, and the next Redis loss puts them back at it.
func TestRejoinAfterRewarmGetsANewPlaceAndIsRebuilt(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 1)
	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	claimAndWrite := func(user string, id int64) {
		t.Helper()
		res, err := rs.Claim(ctx, sale.ID, user, id, "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome, user)
		_, _, err = st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: user, CreatedAt: time.Now(), PayBy: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	// As the API does: join, then save the place (api.keepPlace).
	join := func(user string, rowID int64) int64 {
		t.Helper()
		joined := time.Now()
		j, err := rs.Join(ctx, sale.ID, user, seckill.DefaultItem, 100, rowID+100000, terms)
		require.NoError(t, err)
		require.Equal(t, seckill.Waiting, j.Outcome, user)
		e, ok, err := rs.PlaceOf(ctx, sale.ID, user)
		require.NoError(t, err)
		require.True(t, ok)
		e.OrderID, e.JoinedAt = rowID, joined
		require.NoError(t, st.SaveWaitlistEntry(ctx, e))
		return e.Place
	}
	closeAndRelease := func(user string, id int64) {
		t.Helper()
		_, err := st.CloseUnpaid(ctx, id, seckill.CloseCancelled, "", "", time.Now())
		require.NoError(t, err)
		_, err = rs.Release(ctx, sale.ID, user, id, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{id + 1}, Terms: terms})
		require.NoError(t, err)
	}
	relose := func() {
		t.Helper()
		require.NoError(t, rs.DropAll(ctx))
		w := warmup.New(st, rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
		_, err := w.Check(ctx)
		require.NoError(t, err)
		time.Sleep(warmup.Settle)
		rewarmed, err := w.Check(ctx)
		require.NoError(t, err)
		require.Equal(t, []int64{sale.ID}, rewarmed)
	}

	claimAndWrite("ann", 1001)
	require.Equal(t, int64(1), join("bob", 3001))
	// ann cancels: the unit goes to bob (order 5001), who does not pay.
	_, err := st.CloseUnpaid(ctx, 1001, seckill.CloseCancelled, "", "", time.Now())
	require.NoError(t, err)
	rel, err := rs.Release(ctx, sale.ID, "ann", 1001, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{5001}, Terms: terms})
	require.NoError(t, err)
	require.Len(t, rel.HandedTo, 1)
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 5001, SaleID: sale.ID, UserID: "bob", CreatedAt: time.Now(), PayBy: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	closeAndRelease("bob", 5001)
	claimAndWrite("cat", 1002) // sold out again

	relose() // nobody to put back: bob's row is of a place served since

	place := join("bob", 3002) // answered 201 WAITING
	join("dan", 3003)
	t.Logf("bob's new place: %d", place)

	relose()
	ws, err := rs.WaitStateOf(ctx, sale.ID, "bob")
	require.NoError(t, err)
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, ws, "bob, answered 201, is back at his place")
	ws, err = rs.WaitStateOf(ctx, sale.ID, "dan")
	require.NoError(t, err)
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 2}, ws)
}
