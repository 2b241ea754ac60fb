package redisstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// orderIDs hands out order ids from first on, as idgen does for the
// tests: each once.
func orderIDs(first int64) func() (int64, error) {
	n := first - 1
	return func() (int64, error) { return atomic.AddInt64(&n, 1), nil }
}

// restock runs the Redis half of restock id of units of sku on the tests'
// sale.
func restock(t *testing.T, sc *redisstore.Store, id int64, sku string, units int64, ids func() (int64, error)) seckill.Restocked {
	t.Helper()
	res, err := sc.Restock(t.Context(), seckill.Restock{ID: id, SaleID: saleID, SKU: sku, Added: units}, terms, ids)
	require.NoError(t, err)
	return res
}

// handedTo lists the users of admissions, in their order.
func handedTo(as []seckill.Admission) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.UserID)
	}
	return out
}

// held is what Redis holds of the tests' sale's variant sku, each unit
// once: in the stock or in flight, and in the claims.
func held(t *testing.T, sc *redisstore.Store, sku string) seckill.Held {
	t.Helper()
	all, err := sc.UnitsHeld(t.Context(), []int64{saleID}, time.Now())
	require.NoError(t, err)
	h, ok := all[saleID]
	require.True(t, ok, "the sale is warmed")
	return h.Variants[sku]
}

// requireConserved checks that Redis holds total units of sku, each
// once: docs/DESIGN.md invariant 7, against what the database would
// count.
func requireConserved(t *testing.T, sc *redisstore.Store, sku string, total int64) {
	t.Helper()
	h := held(t, sc, sku)
	require.Equal(t, total, h.Stock+h.Claimed, "stock %d (in flight included) + claimed %d", h.Stock, h.Claimed)
}

// On a sale of one segment a restock's units go to the buyers waiting in
// line first, in the order they joined, each as an order the relay starts;
// with nobody left waiting the rest go to the stock, and the API processes
// are told the sale has stock again. A repeat places nothing.
func TestRestock_OneSegmentServesTheLineInOrderThenTheStock(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	for _, u := range []string{"bob", "cy", "dee"} {
		join(t, sc, u)
	}
	sub := subscribe(t, sc)

	res := restock(t, sc, 1, seckill.DefaultSKU, 2, orderIDs(5001))

	require.Equal(t, seckill.RestockAppliedNow, res.Outcome)
	require.Equal(t, []string{"bob", "cy"}, handedTo(res.HandedTo), "first come, first served")
	for i, a := range res.HandedTo {
		require.Equal(t, a.OrderID, claimOf(t, sc, a.UserID))
		require.Equal(t, seckill.WaitState{OrderID: a.OrderID}, waitState(t, sc, a.UserID))
		require.Equal(t, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 1}, a.Item)
		require.WithinDuration(t, time.Now().Add(terms.PaymentTimeout), a.PayBy, 5*time.Second)
		require.Equal(t, int64(5001+i), a.OrderID, "a fresh order id per unit")
	}
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "dee"))
	require.Zero(t, remaining(t, sc), "every unit went to the line: none is open to claims")
	entries := outbox(t, sc)
	require.Len(t, entries, 3, "each buyer served is an admission the relay starts, as a claim's")
	require.Equal(t, "bob", entries[1].Values["u"])
	require.Equal(t, "cy", entries[2].Values["u"])
	requireConserved(t, sc, seckill.DefaultSKU, 1+2)

	// A second restock serves dee, then fills the stock, and says so.
	res = restock(t, sc, 2, seckill.DefaultSKU, 5, orderIDs(6001))
	require.Equal(t, seckill.RestockAppliedNow, res.Outcome)
	require.Equal(t, []string{"dee"}, handedTo(res.HandedTo))
	require.Equal(t, int64(4), remaining(t, sc))
	require.Equal(t, int64(0), waiting(t, sc))
	msg := receive(t, sub)
	require.Equal(t, sc.RestockChannel(), msg.Channel)
	require.Equal(t, fmt.Sprint(saleID), msg.Payload)
	requireConserved(t, sc, seckill.DefaultSKU, 1+2+5)

	// The same restock again, as a retry after a crash would run it:
	// nothing more.
	for id, units := range map[int64]int64{1: 2, 2: 5} {
		again := restock(t, sc, id, seckill.DefaultSKU, units, orderIDs(7001))
		require.Equal(t, seckill.RestockAppliedBefore, again.Outcome)
		require.Empty(t, again.HandedTo)
	}
	require.Equal(t, int64(4), remaining(t, sc))
	require.Len(t, outbox(t, sc), 4)
	requireConserved(t, sc, seckill.DefaultSKU, 1+2+5)
	require.Equal(t, seckill.Admitted, claim(t, sc, "eve", 1002).Outcome, "the stock is open to claims")
}

// The units go to the restocked variant's line only.
func TestRestock_ServesOnlyItsVariantsLine(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSale(0)
	spec.Variants = []seckill.VariantUnits{{SKU: "s", Units: 0}, {SKU: "m", Units: 0}}
	warm(t, sc, spec)
	for user, sku := range map[string]string{"ann": "s", "bob": "m"} {
		j, err := sc.Join(ctx, saleID, user, seckill.Item{SKU: sku, Quantity: 1}, 10, 0, terms)
		require.NoError(t, err)
		require.Equal(t, seckill.Waiting, j.Outcome)
	}

	res := restock(t, sc, 1, "m", 3, orderIDs(5001))

	require.Equal(t, []string{"bob"}, handedTo(res.HandedTo))
	require.Equal(t, "m", res.HandedTo[0].Item.SKU)
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "ann"))
	by, err := sc.RemainingByVariant(ctx, []int64{saleID})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"s": 0, "m": 2}, by[saleID])
	requireConserved(t, sc, "m", 3)
	requireConserved(t, sc, "s", 0)
}

// A variant Redis does not hold is not restocked there: re-warm loads it
// from the database without the restock's units, and the Redis half runs
// after it.
func TestRestock_NotWarmedPlacesNothing(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)

	res := restock(t, sc, 1, seckill.DefaultSKU, 3, orderIDs(5001))

	require.Equal(t, seckill.RestockNotWarmed, res.Outcome)
	require.False(t, res.Applied())
	require.False(t, exists(t, sc, sc.SaleKeys(saleID).Stock), "no stock is made up")

	warm(t, sc, openSale(1))
	require.Equal(t, seckill.RestockAppliedNow, restock(t, sc, 1, seckill.DefaultSKU, 3, orderIDs(5001)).Outcome)
	require.Equal(t, int64(4), remaining(t, sc))
}

// segmentUsers finds, for each segment wanted (of n), a user of that
// segment named prefix<i>, in order.
func segmentUsers(prefix string, n int, wanted ...int) []string {
	var out []string
	for i := 0; len(out) < len(wanted); i++ {
		u := fmt.Sprint(prefix, i)
		if redisstore.SegmentOf(u, n) == wanted[len(out)] {
			out = append(out, u)
		}
	}
	return out
}

// soldOutSegments warms the tests' sale in n segments with units, and
// has buyers take them all.
func soldOutSegments(t *testing.T, sc *redisstore.Store, units int64, n int) {
	t.Helper()
	warm(t, sc, openSegments(units, n))
	admitted := int64(0)
	for i := 0; admitted < units; i++ {
		if claim(t, sc, fmt.Sprint("holder", i), int64(1000+i)).Outcome == seckill.Admitted {
			admitted++
		}
	}
	require.Zero(t, remaining(t, sc))
}

// On a sale of three segments the buyers who joined first are served
// first whatever their segment (units for the other segments travel as
// moves, landed at once), and the rest stay in segment 0 for open claims,
// which borrow them from any segment. Every unit is counted once
// throughout.
func TestRestock_ThreeSegmentsServeTheLineInOrderAcrossSegments(t *testing.T) {
	t.Parallel()
	const n = 3
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	soldOutSegments(t, sc, 3, n)
	waiters := segmentUsers("w", n, 2, 0, 1, 2, 1, 0)
	for i, u := range waiters {
		j, err := sc.Join(ctx, saleID, u, seckill.DefaultItem, 100, 0, terms)
		require.NoError(t, err)
		require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: int64(i + 1)}, j)
	}

	res := restock(t, sc, 1, seckill.DefaultSKU, 4, orderIDs(5001))

	require.Equal(t, seckill.RestockAppliedNow, res.Outcome)
	require.ElementsMatch(t, waiters[:4], handedTo(res.HandedTo), "the four who joined first, whatever their segment")
	for _, a := range res.HandedTo {
		require.Equal(t, a.OrderID, claimOf(t, sc, a.UserID))
	}
	for i, u := range waiters[4:] {
		require.Equal(t, seckill.WaitState{Waiting: true, Position: int64(i + 1)}, waitState(t, sc, u))
	}
	require.Zero(t, remaining(t, sc))
	moves, err := sc.Moves(ctx, saleID)
	require.NoError(t, err)
	require.Empty(t, moves, "every move landed and was forgotten")
	requireConserved(t, sc, seckill.DefaultSKU, 3+4)

	// The next restock serves the two still waiting and leaves the rest
	// to claims, from any segment.
	res = restock(t, sc, 2, seckill.DefaultSKU, 10, orderIDs(6001))
	require.Equal(t, seckill.RestockAppliedNow, res.Outcome)
	require.ElementsMatch(t, waiters[4:], handedTo(res.HandedTo))
	require.Zero(t, waiting(t, sc))
	require.Equal(t, int64(8), remaining(t, sc))
	requireConserved(t, sc, seckill.DefaultSKU, 3+4+10)
	for i, u := range segmentUsers("late", n, 1, 2) {
		require.Equal(t, seckill.Admitted, claim(t, sc, u, int64(9000+i)).Outcome, "%s borrows from segment 0", u)
	}
	requireConserved(t, sc, seckill.DefaultSKU, 3+4+10)

	again := restock(t, sc, 1, seckill.DefaultSKU, 4, orderIDs(7001))
	require.Equal(t, seckill.RestockAppliedBefore, again.Outcome)
	require.Empty(t, again.HandedTo)
	requireConserved(t, sc, seckill.DefaultSKU, 3+4+10)
}

// A line longer than one script's share is served by several scripts in
// turn, still first come first served across the segments.
func TestRestock_ALongLineIsServedInShares(t *testing.T) {
	t.Parallel()
	const n = 3
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	soldOutSegments(t, sc, 2, n)
	waiters := segmentUsers("w", n, 1, 0, 2, 2, 0, 1, 1)
	for _, u := range waiters {
		_, err := sc.Join(ctx, saleID, u, seckill.DefaultItem, 100, 0, terms)
		require.NoError(t, err)
	}

	res, err := sc.RestockInChunksForTest(ctx, seckill.Restock{ID: 1, SaleID: saleID, Added: 6}, terms, orderIDs(5001), 2)

	require.NoError(t, err)
	require.Equal(t, seckill.RestockAppliedNow, res.Outcome)
	require.ElementsMatch(t, waiters[:6], handedTo(res.HandedTo))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, waiters[6]))
	require.Zero(t, remaining(t, sc))
	requireConserved(t, sc, seckill.DefaultSKU, 2+6)
}

// A move the restock could not land (its segment was not loaded) stays
// in flight, counted once, and the next run of the same restock lands it.
func TestRestock_AMoveLeftInFlightIsLandedByTheNextRun(t *testing.T) {
	t.Parallel()
	const n = 3
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	rdb := sc.Client()
	soldOutSegments(t, sc, 3, n)
	w := segmentUsers("w", n, 2)[0]
	_, err := sc.Join(ctx, saleID, w, seckill.DefaultItem, 100, 0, terms)
	require.NoError(t, err)
	stock2 := sc.SegmentKeys(saleID, 2).Stock
	require.NoError(t, rdb.Rename(ctx, stock2, stock2+".away").Err())

	r := seckill.Restock{ID: 7, SaleID: saleID, Added: 3}
	res, err := sc.Restock(ctx, r, terms, orderIDs(5001))

	require.Error(t, err, "the move into segment 2 could not land")
	require.True(t, res.Applied(), "but every unit is placed: the database may say so")
	moves, err := sc.Moves(ctx, saleID)
	require.NoError(t, err)
	require.Len(t, moves, 1)
	require.Equal(t, seckill.Move{ID: moves[0].ID, SKU: seckill.DefaultSKU, From: 0, Dest: 2, Units: 1, At: moves[0].At}, moves[0])
	require.NoError(t, rdb.Rename(ctx, stock2+".away", stock2).Err())
	requireConserved(t, sc, seckill.DefaultSKU, 3+3)

	again, err := sc.Restock(ctx, r, terms, orderIDs(6001))
	require.NoError(t, err)
	require.Equal(t, seckill.RestockAppliedBefore, again.Outcome)
	require.Equal(t, []string{w}, handedTo(again.HandedTo), "the unit parked for the waiting buyer reaches them")
	moves, err = sc.Moves(ctx, saleID)
	require.NoError(t, err)
	require.Empty(t, moves)
	require.Equal(t, int64(2), remaining(t, sc))
	requireConserved(t, sc, seckill.DefaultSKU, 3+3)
}

// Runs of one restock at once (a retry racing reconciliation) place its
// units once between them, every buyer served once.
func TestRestock_ConcurrentRunsOfOneRestockPlaceItOnce(t *testing.T) {
	t.Parallel()
	const n, runs = 3, 8
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	soldOutSegments(t, sc, 3, n)
	waiters := segmentUsers("w", n, 1, 2, 0, 2, 1, 1, 2, 0, 1, 2)
	for _, u := range waiters {
		_, err := sc.Join(ctx, saleID, u, seckill.DefaultItem, 100, 0, terms)
		require.NoError(t, err)
	}
	ids := orderIDs(5001)
	r := seckill.Restock{ID: 3, SaleID: saleID, Added: 12}

	var (
		mu     sync.Mutex
		served []string
		failed []error
	)
	testenv.ForEachBuyer(runs, runs, func(int64) {
		// Until it succeeds, as a retry would: a run may give up while the
		// others keep changing the line under it (errRestockStalled).
		for try := 0; try < 20; try++ {
			res, err := sc.RestockInChunksForTest(ctx, r, terms, ids, 3)
			mu.Lock()
			served = append(served, handedTo(res.HandedTo)...)
			if err == nil && !res.Applied() {
				err = fmt.Errorf("outcome %v", res.Outcome)
			}
			if err == nil || try == 19 {
				failed = append(failed, err)
			}
			mu.Unlock()
			if err == nil {
				return
			}
		}
	})

	for _, err := range failed {
		require.NoError(t, err)
	}
	require.ElementsMatch(t, waiters, served, "every waiting buyer once")
	require.Zero(t, waiting(t, sc))
	require.Equal(t, int64(2), remaining(t, sc))
	moves, err := sc.Moves(ctx, saleID)
	require.NoError(t, err)
	require.Empty(t, moves)
	requireConserved(t, sc, seckill.DefaultSKU, 3+12)
}
