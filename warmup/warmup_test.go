package warmup_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/warmup"
)

// A sale whose Redis keys are gone (Redis restarted empty) is loaded again
// from Postgres: its available units minus the orders written but not yet
// holding one, and the claim of each active order. A live counter is
// never touched, and Run leaves no goroutine behind.
func TestCheck_RewarmsWhatRedisLostAndNothingElse(t *testing.T) {
	testenv.NoLeaks(t)
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	lost, live := testenv.OpenSale(t, st, 5).ID, testenv.OpenSale(t, st, 5).ID
	// ann's order holds a unit of the lost sale; Redis knows nothing of it.
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: lost, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	// The live sale's counter says 2 (claims in flight): it stays 2.
	_, err = rs.Warm(ctx, redisstore.WarmSpec{SaleID: live, Units: 2, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)})
	require.NoError(t, err)

	w := warmup.New(st, rs, 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	require.Eventually(t, func() bool {
		n, ok, err := rs.Remaining(ctx, lost)
		return err == nil && ok && n == 4
	}, 10*time.Second, 20*time.Millisecond, "the lost sale is back: 5 units, 1 held by ann")
	stop()
	require.NoError(t, <-done)

	claims, err := rs.Claims(ctx, lost)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"ann": 1001}, claims, "ann keeps her one active order")
	n, ok, err := rs.Remaining(ctx, live)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(2), n, "a live counter is never overwritten")
}
