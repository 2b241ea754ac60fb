package redisstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A move a re-warm dropped (aimed at a lost segment: its units are the
// database's, loaded into that segment) is not landed again by a mover
// holding it in memory (hostile review R1). A restock's Redis half parks
// a move for a buyer waiting in segment 1 and lands it from its own plan
// (landRestockMove), not from segment 0's moves hash; a re-warm of
// segment 1 between the park and the landing drops the move and loads
// its units, and the landing must then give nothing (the re-warm puts
// the move's id back in segment 1's moved set): no unit made up. The
// restock's nextID, called by landRestockMove just before it lands, is
// where the re-warm runs.
func TestRewarm_DroppedRestockMoveIsNotLandedAgain(t *testing.T) {
	t.Parallel()
	const n, sold, added = 2, 2, 3
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(sold, n)
	warm(t, sc, spec)
	var claims []seckill.ActiveClaim
	for i := 0; len(claims) < sold; i++ {
		u := fmt.Sprint("holder", i)
		if claim(t, sc, u, int64(1000+i)).Outcome == seckill.Admitted {
			claims = append(claims, seckill.ActiveClaim{UserID: u, OrderID: int64(1000 + i), Item: seckill.DefaultItem})
		}
	}
	w := segmentUsers("w", n, 1)[0]
	j, err := sc.Join(ctx, saleID, w, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 5}, 100, 0, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)

	r := seckill.Restock{ID: 1, SaleID: saleID, SKU: seckill.DefaultSKU, Added: added}
	ids := orderIDs(5001)
	rewarmed := false
	hook := func() (int64, error) {
		if !rewarmed {
			// The move is parked in segment 0, aimed at segment 1: segment
			// 1 is lost now and the re-warmer loads it from the database
			// (available 3, the restock not marked applied: left out of
			// Units and named, its placed 3 read from segment 0).
			rewarmed = true
			loseSegment(t, sc, 1)
			s := spec
			s.Variants = []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 0}}
			s.Restocks = []seckill.Restock{r}
			loaded, err := sc.Rewarm(ctx, s, claims)
			require.NoError(t, err)
			require.True(t, loaded)
		}
		return ids()
	}
	_, err = sc.Restock(ctx, r, terms, hook)
	require.NoError(t, err)
	require.True(t, rewarmed, "the restock landed a move")

	h := held(t, sc, seckill.DefaultSKU)
	require.Equal(t, int64(sold+added), h.Stock+h.ForWaiting+h.Claimed,
		"Redis holds the database's %d units: stock %d + held %d + claims %d", sold+added, h.Stock, h.ForWaiting, h.Claimed)
}

// A hand-over's or a borrow's move (moveUnits: take, then give with the
// units it took, from memory) whose destination is lost and re-warmed
// between the two steps gives nothing: the re-warm loaded its units.
func TestRewarm_DroppedTakenMoveIsNotGivenAgain(t *testing.T) {
	t.Parallel()
	const n, units = 2, 4
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(units, n)
	warm(t, sc, spec)
	require.NoError(t, sc.TakeForTest(ctx, saleID, 0, "h9.0", 1, 1))
	loseSegment(t, sc, 1)
	loaded, err := sc.Rewarm(ctx, spec, nil)
	require.NoError(t, err)
	require.True(t, loaded)
	require.NoError(t, sc.GiveOnlyForTest(ctx, saleID, 1, "h9.0", 1))
	require.NoError(t, sc.ForgetOnlyForTest(ctx, saleID, 0, "h9.0"))
	requireConserved(t, sc, seckill.DefaultSKU, units)
}

// FinishMoves lands the moves it read: one a re-warm dropped meanwhile
// (its nextID, called just before the landing, is where the re-warm runs)
// lands nothing.
func TestRewarm_DroppedMoveIsNotFinishedAgain(t *testing.T) {
	t.Parallel()
	const n, units = 2, 4
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(units, n)
	warm(t, sc, spec)
	require.NoError(t, sc.TakeForTest(ctx, saleID, 0, "b9", 1, 1))
	ids := orderIDs(5001)
	rewarmed := false
	hook := func() (int64, error) {
		if !rewarmed {
			rewarmed = true
			loseSegment(t, sc, 1)
			loaded, err := sc.Rewarm(ctx, spec, nil)
			require.NoError(t, err)
			require.True(t, loaded)
		}
		return ids()
	}
	_, err := sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, hook)
	require.NoError(t, err)
	require.True(t, rewarmed, "FinishMoves landed a move")
	requireConserved(t, sc, seckill.DefaultSKU, units)
}
