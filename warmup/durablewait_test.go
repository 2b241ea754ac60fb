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

// A sold-out sale's line, lost with every key of the sale (a Redis
// restarted empty), is back after the re-warm from the database's rows:
// each buyer answered 201 at the same place, one who left not brought
// back, one whose order exists not queued again, and the unit that comes
// back next goes to the first.
func TestCheck_RebuildsTheLinesRedisLost(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 1)
	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	res, err := rs.Claim(ctx, sale.ID, "ann", 1001, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: time.Now(), PayBy: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	// As the API does: join, then save the place.
	for i, u := range []string{"bob", "cat", "dan"} {
		joined := time.Now()
		j, err := rs.Join(ctx, sale.ID, u, seckill.DefaultItem, 100, int64(2001+i), terms)
		require.NoError(t, err)
		require.Equal(t, seckill.Waiting, j.Outcome)
		e, ok, err := rs.PlaceOf(ctx, sale.ID, u)
		require.NoError(t, err)
		require.True(t, ok)
		e.OrderID, e.JoinedAt = int64(3001+i), joined
		require.NoError(t, st.SaveWaitlistEntry(ctx, e))
	}
	_, err = rs.Leave(ctx, sale.ID, "cat")
	require.NoError(t, err)
	require.NoError(t, st.DeleteWaitlistEntry(ctx, sale.ID, "cat"))
	// ann's row from before the line served her (her order is since).
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "ann", Item: seckill.DefaultItem,
		OrderID: 3009, Place: 9, JoinedAt: time.Now().Add(-time.Minute)}))
	require.NoError(t, rs.DropAll(ctx))

	w := warmup.New(st, rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.Check(ctx)
	require.NoError(t, err)
	time.Sleep(warmup.Settle)
	rewarmed, err := w.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{sale.ID}, rewarmed)

	state := func(u string) seckill.WaitState {
		ws, err := rs.WaitStateOf(ctx, sale.ID, u)
		require.NoError(t, err)
		return ws
	}
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, state("bob"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 2}, state("dan"))
	require.Equal(t, seckill.WaitState{}, state("cat"), "who left is not brought back")
	require.Equal(t, seckill.WaitState{}, state("ann"), "served: not queued again")
	rel, err := rs.Release(ctx, sale.ID, "ann", 1001, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{5001}, Terms: terms})
	require.NoError(t, err)
	require.Len(t, rel.HandedTo, 1)
	require.Equal(t, "bob", rel.HandedTo[0].UserID, "the unit that comes back is the first's")
}
