package redisstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// Review finding R1: a restock's Redis half parks a move for a buyer
// waiting in segment 1 and lands it from memory (landRestockMove, with
// the move read from its own plan, not from segment 0's moves hash). A
// re-warm of segment 1 lost between the park and the landing drops the
// move and loads its units into segment 1 (rewarm: "neither counted in
// flight here nor landed again later"), and the landing then gives the
// same units to segment 1 again (give.lua's moved set went with the
// segment): units made up. The restock's nextID, called by
// landRestockMove just before it lands, is where the re-warm runs.
func TestReview_RestockMoveLandedAfterRewarmDroppedIt(t *testing.T) {
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
