package redisstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// sizes is a sale of two variants, s (small) and l (large), each with units.
func sizes(s, l int64) seckill.WarmSpec {
	spec := openSale(0)
	spec.Variants = []seckill.VariantUnits{{SKU: "s", Units: s}, {SKU: "l", Units: l}}
	return spec
}

func claimItem(t *testing.T, sc *redisstore.Store, user string, orderID int64, it seckill.Item) seckill.ClaimResult {
	t.Helper()
	res, err := sc.Claim(t.Context(), saleID, user, orderID, "", terms, it)
	require.NoError(t, err)
	return res
}

// heldOf is what Redis holds of variant sku.
func heldOf(t *testing.T, sc *redisstore.Store, sku string) seckill.Held {
	t.Helper()
	all, err := sc.UnitsHeld(t.Context(), []int64{saleID}, time.Now())
	require.NoError(t, err)
	return all[saleID].Variants[sku]
}

// Each variant is a stock of its own, counted in units; a claim takes its
// quantity or nothing; one claim per buyer per sale, whatever the variant.
func TestClaim_AClaimTakesItsQuantityOfItsVariantOrNothing(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, sizes(3, 2))

	res := claimItem(t, sc, "ann", 1, seckill.Item{SKU: "s", Quantity: 2})
	require.Equal(t, seckill.Admitted, res.Outcome)
	res = claimItem(t, sc, "bob", 2, seckill.Item{SKU: "s", Quantity: 2})
	require.Equal(t, seckill.NotEnoughStock, res.Outcome)
	require.Equal(t, int64(1), res.Remaining)
	require.Equal(t, seckill.AlreadyClaimed, claimItem(t, sc, "ann", 3, seckill.Item{SKU: "l", Quantity: 1}).Outcome)
	require.Equal(t, seckill.Admitted, claimItem(t, sc, "bob", 4, seckill.Item{SKU: "l", Quantity: 2}).Outcome)
	require.Equal(t, seckill.SoldOut, claimItem(t, sc, "cy", 5, seckill.Item{SKU: "l", Quantity: 1}).Outcome)

	require.Equal(t, seckill.Held{Stock: 1, Claimed: 2}, heldOf(t, sc, "s"))
	require.Equal(t, seckill.Held{Stock: 0, Claimed: 2}, heldOf(t, sc, "l"))
	adm, ok, err := sc.Admission(t.Context(), 1, []int64{saleID})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, seckill.Item{SKU: "s", Quantity: 2}, adm.Item)

	// A release gives both units back to their variant.
	rel, err := sc.Release(t.Context(), saleID, "ann", 1, seckill.Item{SKU: "s", Quantity: 2}, &seckill.NextOrder{IDs: []int64{90, 91}, Terms: terms})
	require.NoError(t, err)
	require.True(t, rel.Now)
	require.Empty(t, rel.HandedTo)
	require.Equal(t, seckill.Held{Stock: 3}, heldOf(t, sc, "s"))
}

// A buyer waiting for 2 units is served once 2 have come back: the first
// unit is held for them (neither admissible nor given), the second
// completes their order; a claim meanwhile gets none.
func TestRelease_HoldsUnitsForTheHeadUntilItsQuantityIsCovered(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, sizes(2, 1))
	for i, u := range []string{"ann", "bob"} {
		require.Equal(t, seckill.Admitted, claimItem(t, sc, u, int64(1+i), seckill.Item{SKU: "s", Quantity: 1}).Outcome)
	}
	j, err := sc.Join(t.Context(), saleID, "cy", seckill.Item{SKU: "s", Quantity: 2}, 10, 7000, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: 1}, j)
	dee, err := sc.Join(t.Context(), saleID, "dee", seckill.Item{SKU: "s", Quantity: 1}, 10, 7001, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: 2}, dee)

	rel, err := sc.Release(t.Context(), saleID, "ann", 1, seckill.Item{SKU: "s", Quantity: 1}, &seckill.NextOrder{IDs: []int64{90}, Terms: terms})
	require.NoError(t, err)
	require.Empty(t, rel.HandedTo, "one unit of the two cy waits for: held for cy, dee behind waits too")
	require.Equal(t, seckill.Held{ForWaiting: 1, Claimed: 1}, heldOf(t, sc, "s"))
	require.Equal(t, seckill.SoldOut, claimItem(t, sc, "eve", 3, seckill.Item{SKU: "s", Quantity: 1}).Outcome, "a held unit is not admissible")
	counts, err := sc.Counts(t.Context(), []int64{saleID})
	require.NoError(t, err)
	require.Equal(t, int64(1), counts[saleID].ForWaiting)

	rel, err = sc.Release(t.Context(), saleID, "bob", 2, seckill.Item{SKU: "s", Quantity: 1}, &seckill.NextOrder{IDs: []int64{91}, Terms: terms})
	require.NoError(t, err)
	require.Len(t, rel.HandedTo, 1)
	require.Equal(t, "cy", rel.HandedTo[0].UserID)
	adm, ok, err := sc.Admission(t.Context(), 91, []int64{saleID})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, seckill.Item{SKU: "s", Quantity: 2}, adm.Item, "cy's order holds the two units")
	require.Equal(t, seckill.Held{Claimed: 2}, heldOf(t, sc, "s"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "dee"))
}

// The first buyer in an empty line who asks for more units than the stock
// has gets those held (units never sit in stock while a buyer waits for
// them); when they leave, the held units go back to the stock.
func TestJoin_HoldsTheStockForTheFirstBuyerAndLeavingGivesItBack(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, sizes(1, 0))

	j, err := sc.Join(t.Context(), saleID, "ann", seckill.Item{SKU: "s", Quantity: 3}, 10, 7000, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	require.Equal(t, seckill.Held{ForWaiting: 1}, heldOf(t, sc, "s"))

	j, err = sc.Join(t.Context(), saleID, "ann", seckill.Item{SKU: "l", Quantity: 1}, 10, 7001, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.AlreadyWaiting, j.Outcome, "one line per buyer per sale")

	left, err := sc.Leave(t.Context(), saleID, "ann")
	require.NoError(t, err)
	require.True(t, left)
	require.Equal(t, seckill.Held{Stock: 1}, heldOf(t, sc, "s"))
	require.Equal(t, seckill.Admitted, claimItem(t, sc, "bob", 1, seckill.Item{SKU: "s", Quantity: 1}).Outcome)
}

// usersOf returns, for each of n segments, buyers who belong to it.
func usersOf(n, each int) [][]string {
	out := make([][]string, n)
	for i := 0; ; i++ {
		u := "u" + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260))
		p := redisstore.SegmentOf(u, n)
		if len(out[p]) < each {
			out[p] = append(out[p], u)
		}
		full := true
		for _, us := range out {
			full = full && len(us) == each
		}
		if full {
			return out
		}
	}
}

// On a sale of two segments, the two units an order gives back go to the
// first two buyers in line, whichever segment they wait in: the second unit
// is not given to a later buyer of the first one's segment, nor left to
// claims while a buyer waits in the other.
func TestRelease_UnitsOfAnOrderServeTheLineInOrderAcrossSegments(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(2, 2))
	us := usersOf(2, 4)
	holder := us[0][0]
	two := seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}
	res, err := sc.Claim(ctx, saleID, holder, 1000, "", terms, two)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome, "it borrows the other segment's unit")
	wa, wb, wc := us[0][1], us[1][0], us[0][2]
	for i, u := range []string{wa, wb, wc} {
		j, err := sc.Join(ctx, saleID, u, seckill.DefaultItem, 100, 0, terms)
		require.NoError(t, err)
		require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: int64(i + 1)}, j)
	}

	rel, err := sc.Release(ctx, saleID, holder, 1000, two, &seckill.NextOrder{IDs: []int64{5001, 5002}, Terms: terms})
	require.NoError(t, err)
	got := []string{}
	for _, h := range rel.HandedTo {
		got = append(got, h.UserID)
	}
	require.ElementsMatch(t, []string{wa, wb}, got, "the first two in line, across segments")
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, wc))
	require.Zero(t, remaining(t, sc))
	moves, err := sc.Moves(ctx, saleID)
	require.NoError(t, err)
	require.Empty(t, moves, "every move landed and was forgotten")

	// With the last waiting buyer in the first segment and units coming
	// back to the other, none is left to claims while wc waits.
	late := us[1][1]
	require.NotEqual(t, seckill.Admitted, claimItem(t, sc, late, 7, seckill.DefaultItem).Outcome)
}

// Re-warm counts the units held for a waiting buyer in a live segment once,
// even when that segment's stock is 0: the lost segment loads the rest,
// no more (the second hostile review's finding 2).
func TestRewarm_CountsTheHeldUnitsOfALiveSegmentOnce(t *testing.T) {
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(2, 2) // a unit in each segment
	warm(t, sc, spec)
	a := usersOf(2, 1)[1][0]
	j, err := sc.Join(ctx, saleID, a, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 3}, 100, 7000, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	h := heldOf(t, sc, seckill.DefaultSKU)
	require.Equal(t, int64(2), h.Stock+h.ForWaiting)

	lost := sc.SegmentKeys(saleID, 0)
	require.NoError(t, sc.Client().Del(ctx, lost.Stock, lost.Meta, lost.Claims).Err())
	spec.Variants[0].Units = 2 // the database: 2 available, nothing sold
	_, err = sc.Rewarm(ctx, spec, nil)
	require.NoError(t, err)
	h = heldOf(t, sc, seckill.DefaultSKU)
	require.Equal(t, int64(2), h.Stock+h.ForWaiting, "Redis holds the database's 2 units, no more")
}

// The head of a variant's line, with a unit held for them, is admitted to
// another variant: they leave the line, and the line left empty gives the
// held unit back to its stock, open to claims (the second hostile review's
// finding 3: it stayed held for nobody, every claim SOLD_OUT).
func TestClaim_AHeadAdmittedToAnotherVariantLeavesNoUnitHeldForNobody(t *testing.T) {
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, sizes(1, 1))
	j, err := sc.Join(ctx, saleID, "ann", seckill.Item{SKU: "s", Quantity: 2}, 10, 7000, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	require.Equal(t, seckill.Held{ForWaiting: 1}, heldOf(t, sc, "s"))

	require.Equal(t, seckill.Admitted, claimItem(t, sc, "ann", 1, seckill.Item{SKU: "l", Quantity: 1}).Outcome)

	require.Equal(t, seckill.Held{Stock: 1}, heldOf(t, sc, "s"))
	require.Equal(t, seckill.Admitted, claimItem(t, sc, "bob", 2, seckill.Item{SKU: "s", Quantity: 1}).Outcome)
}
