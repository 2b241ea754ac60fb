package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// beforeMovedRead runs fn once, just before the first pipeline that reads
// a moved set (the second round trip of a count of what Redis holds): a
// concurrent mover's step, at the worst moment.
type beforeMovedRead struct {
	fired atomic.Bool
	fn    func()
}

func (h *beforeMovedRead) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *beforeMovedRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *beforeMovedRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "sismember" && strings.HasSuffix(fmt.Sprint(c.Args()[1]), ":moved") && h.fired.CompareAndSwap(false, true) {
				h.fn()
				break
			}
		}
		return next(ctx, cmds)
	}
}

// A give that lands between the two round trips of one count hides its
// units from that count: a claim acting on it alone would record a final
// SOLD_OUT for its Idempotency-Key while a unit sits in another segment. The
// final answer waits for two reads that agree.
func TestMoves_AFinalSoldOutNeedsACountThatHolds(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(2, 3)) // segments 0, 1, 2 hold 1, 1, 0
	require.Equal(t, seckill.Admitted, claim(t, sc, userOfSegment(t, 1, 3), 100).Outcome)
	// A mover took segment 0's unit for segment 2 and has not given it yet.
	require.NoError(t, sc.TakeForTest(ctx, saleID, 0, "b-x", 1, 2))
	h := &beforeMovedRead{fn: func() { require.NoError(t, sc.GiveOnlyForTest(ctx, saleID, 2, "b-x", 1)) }}
	sc.Client().AddHook(h)

	second := ""
	for i := 0; second == ""; i++ { // another buyer of the empty segment 1
		if u := fmt.Sprint("second-", i); redisstore.SegmentOf(u, 3) == 1 {
			second = u
		}
	}
	res, err := sc.Claim(ctx, saleID, second, 200, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.True(t, h.fired.Load())
	require.Equal(t, seckill.Admitted, res.Outcome, "the unit that landed in segment 2 is borrowed")
	require.Zero(t, remaining(t, sc))
}

// Re-warm of a lost segment while a move between two live segments is given
// between the two round trips of a count: the moved units are not loaded
// again into the lost segment.
func TestMoves_RewarmNeverLoadsAMovingUnitTwice(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(9, 3)
	warm(t, sc, spec)                                               // 3, 3, 3
	require.NoError(t, sc.TakeForTest(ctx, saleID, 0, "b-y", 2, 1)) // 1, 3, 3 and 2 on their way to segment 1
	lost := sc.SegmentKeys(saleID, 2)
	for _, key := range []string{lost.Stock, lost.Meta, lost.Claims} {
		require.NoError(t, sc.Client().Del(ctx, key).Err())
	}
	h := &beforeMovedRead{fn: func() { require.NoError(t, sc.GiveOnlyForTest(ctx, saleID, 1, "b-y", 2)) }}
	sc.Client().AddHook(h)

	loaded, err := sc.Rewarm(ctx, spec, nil) // the database: 9 available
	require.NoError(t, err)
	require.True(t, loaded)
	require.True(t, h.fired.Load())
	require.NoError(t, sc.ForgetOnlyForTest(ctx, saleID, 0, "b-y"))
	require.Equal(t, int64(9), remaining(t, sc), "Redis holds the database's 9, not more")
}
