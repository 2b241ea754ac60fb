package redisstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// loseSegment drops every key of segment p of the tests' sale, as a
// Cluster primary lost with no replica does (segment 0's restocks hash
// with it).
func loseSegment(t *testing.T, sc *redisstore.Store, p int) {
	t.Helper()
	ctx := t.Context()
	tag := sc.SegmentKeys(saleID, p).Meta
	tag = tag[:len(tag)-len("meta")]
	keys, err := sc.Client().Keys(ctx, tag+"*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	require.NoError(t, sc.Client().Del(ctx, keys...).Err())
}

// A restock's units are counted exactly once through a re-warm, in every
// crash order: placed in Redis or not, marked applied in the database or
// not, whichever segments were lost (the hostile review's finding 1:
// re-warm left out a restock placed but not marked, so the live segments
// held its units while the lost one was loaded without them; or segment
// 0 went with the record of the placing, and the restock was placed
// twice). A buyer waiting in segment 1 for more than come makes the
// restock's units land in both segments.
func TestRewarm_CountsARestockOnceInEveryCrashOrder(t *testing.T) {
	t.Parallel()
	const n, sold, added = 2, 2, 3
	for _, placed := range []bool{false, true} {
		for _, marked := range []bool{false, true} {
			if marked && !placed {
				continue // the mark follows the placing
			}
			for _, lost := range [][]int{{0}, {1}, {0, 1}} {
				t.Run(fmt.Sprintf("placed=%t/marked=%t/lost=%v", placed, marked, lost), func(t *testing.T) {
					t.Parallel()
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

					// The database: the restock's units are available.
					r := seckill.Restock{ID: 1, SaleID: saleID, SKU: seckill.DefaultSKU, Added: added}
					if placed {
						restock(t, sc, r.ID, r.SKU, r.Added, orderIDs(5001))
						h := held(t, sc, seckill.DefaultSKU)
						require.Equal(t, int64(added), h.Stock+h.ForWaiting)
					}
					for _, p := range lost {
						loseSegment(t, sc, p)
					}

					// Re-warm from the database's snapshot (store.WarmSnapshot):
					// an unmarked restock's units left out, and named.
					spec.Variants[0].Units = added
					if !marked {
						spec.Variants[0].Units = 0
						spec.Restocks = []seckill.Restock{r}
					}
					_, err = sc.Rewarm(ctx, spec, claims)
					require.NoError(t, err)
					// Then the restock's Redis half runs (reconciliation), unless
					// it was marked done.
					if !marked {
						res, err := sc.Restock(ctx, r, terms, orderIDs(6001))
						require.NoError(t, err)
						require.True(t, res.Applied(), "outcome %v", res.Outcome)
					}
					h := held(t, sc, seckill.DefaultSKU)
					require.Equal(t, int64(added), h.Stock+h.ForWaiting,
						"Redis holds the database's %d available units: stock (in flight included) %d + held %d", added, h.Stock, h.ForWaiting)
					require.Equal(t, int64(sold), h.Claimed)
				})
			}
		}
	}
}
