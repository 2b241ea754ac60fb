package activities_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/warmup"
)

// The draw saves the place of each entrant it queues, as a join answered
// 201 does: a line Redis loses after the draw is rebuilt with the draw's
// WAITING entrants in rank order, its winners admitted again with the
// orders the draw told them.
func TestSettleDraw_TheQueuedEntrantsAreBackInRankOrderAfterARedisLoss(t *testing.T) {
	r := newDrawRig(t, 2, 5)
	ctx := t.Context()
	r.rank(t)
	r.settleAll(t)
	queued, err := r.st.EntriesFrom(ctx, r.sale.ID, 3, 3)
	require.NoError(t, err)
	rows, err := r.st.WaitlistEntries(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	for i, e := range queued {
		require.Equal(t, seckill.EntryWaiting, e.Outcome)
		require.Equal(t, e.UserID, rows[i].UserID, "the rows are in rank order")
	}
	require.NoError(t, r.rs.DropAll(ctx))

	w := warmup.New(r.st, r.rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.Check(ctx)
	require.NoError(t, err)
	time.Sleep(warmup.Settle)
	rewarmed, err := w.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{r.sale.ID}, rewarmed)

	for i, e := range queued {
		ws, err := r.rs.WaitStateOf(ctx, r.sale.ID, e.UserID)
		require.NoError(t, err)
		require.Equal(t, seckill.WaitState{Waiting: true, Position: int64(i + 1)}, ws, "rank %d", e.Rank)
	}
	winners, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, 2)
	require.NoError(t, err)
	for _, e := range winners {
		id, err := r.rs.ClaimOf(ctx, r.sale.ID, e.UserID)
		require.NoError(t, err)
		require.Equal(t, e.OrderID, id, "rank %d keeps the order the draw told them", e.Rank)
	}
}
