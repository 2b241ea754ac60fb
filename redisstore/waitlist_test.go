package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

func join(t *testing.T, sc *redisstore.Store, user string) seckill.JoinResult {
	t.Helper()
	res, err := sc.Join(t.Context(), saleID, user, seckill.DefaultItem, 3, 7000, terms)
	require.NoError(t, err)
	return res
}

func waitState(t *testing.T, sc *redisstore.Store, user string) seckill.WaitState {
	t.Helper()
	st, err := sc.WaitStateOf(t.Context(), saleID, user)
	require.NoError(t, err)
	return st
}

func waiting(t *testing.T, sc *redisstore.Store) int64 {
	t.Helper()
	n, err := sc.Waiting(t.Context(), saleID)
	require.NoError(t, err)
	return n
}

func TestJoin_FirstComeFirstServedAndBounded(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)

	require.Equal(t, seckill.JoinResult{Outcome: seckill.AlreadyClaimed, OrderID: 1001}, join(t, sc, "ann"))
	for i, u := range []string{"bob", "cy", "dee"} {
		require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: int64(i + 1)}, join(t, sc, u))
	}
	require.Equal(t, seckill.JoinResult{Outcome: seckill.AlreadyWaiting, Position: 2}, join(t, sc, "cy"), "one entry per user")
	require.Equal(t, seckill.WaitlistFull, join(t, sc, "eve").Outcome, "at most 3 entries")
	require.Equal(t, int64(3), waiting(t, sc), "the line is at its bound")

	left, err := sc.Leave(t.Context(), saleID, "bob")
	require.NoError(t, err)
	require.True(t, left)
	require.Equal(t, seckill.WaitState{}, waitState(t, sc, "bob"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "cy"))
	require.Equal(t, int64(2), waiting(t, sc), "a place opens")
	require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: 3}, join(t, sc, "bob"), "a buyer who left joins again at the back")
}

func TestJoin_OutsideTheWindowOrUnwarmed(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	require.Equal(t, seckill.Unavailable, join(t, sc, "ann").Outcome)
	spec := openSale(0)
	spec.StartsAt = time.Now().Add(time.Hour)
	spec.EndsAt = time.Now().Add(2 * time.Hour)
	warm(t, sc, spec)
	require.Equal(t, seckill.SaleNotStarted, join(t, sc, "ann").Outcome)
}

// A buyer who joins while a unit is in stock is first in line (units never
// sit in stock while others wait) and is admitted at once.
func TestJoin_AdmitsAtOnceWhileStockLasts(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))

	res := join(t, sc, "ann")

	require.Equal(t, seckill.Admitted, res.Outcome)
	require.Equal(t, int64(7000), res.OrderID)
	require.WithinDuration(t, time.Now().Add(terms.PaymentTimeout), res.PayBy, 5*time.Second)
	require.Zero(t, remaining(t, sc))
	require.Equal(t, int64(7000), claimOf(t, sc, "ann"))
	require.Equal(t, seckill.WaitState{OrderID: 7000}, waitState(t, sc, "ann"))
	require.Len(t, outbox(t, sc), 1, "the relay starts its saga like a claim's")
}

func TestRelease_HandsTheUnitToTheFirstWaitingBuyer(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	join(t, sc, "bob")
	join(t, sc, "cy")
	ctx := t.Context()

	res, err := sc.Release(ctx, saleID, "ann", 1001, seckill.DefaultItem, next(5001))

	require.NoError(t, err)
	require.True(t, res.Now)
	require.Len(t, res.HandedTo, 1)
	require.Equal(t, "bob", res.HandedTo[0].UserID)
	require.Equal(t, int64(5001), res.HandedTo[0].OrderID)
	require.Zero(t, remaining(t, sc), "the unit went to bob, not to open claims")
	require.Equal(t, int64(5001), claimOf(t, sc, "bob"))
	require.Equal(t, seckill.WaitState{OrderID: 5001}, waitState(t, sc, "bob"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "cy"))
	require.Equal(t, int64(1), waiting(t, sc), "bob, given the unit, is out of the line")
	entries := outbox(t, sc)
	require.Len(t, entries, 2)
	require.Equal(t, "5001", entries[1].Values["o"])
	require.Equal(t, "bob", entries[1].Values["u"])
	counts, err := sc.Counts(ctx, []int64{saleID})
	require.NoError(t, err)
	require.Equal(t, seckill.SaleCounts{Remaining: 0, Variants: map[string]int64{seckill.DefaultSKU: 0}, Waiting: 1, FromWaitlist: 1}, counts[saleID])

	again, err := sc.Release(ctx, saleID, "ann", 1001, seckill.DefaultItem, next(5002))
	require.NoError(t, err)
	require.Equal(t, seckill.Released{}, again, "a repeat gives nothing twice")
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "cy"))
}

// A waiting buyer who got an order by a claim left the line as ADMITTED; the
// unit goes to the next one.
func TestRelease_SkipsBuyersWhoHoldAnOrder(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, join(t, sc, "bob").Outcome) // a unit in stock: admitted at once
	join(t, sc, "cy")
	join(t, sc, "dee")
	// Redis re-loaded claims from the database: cy holds an order while on the line.
	restored, err := sc.RestoreClaim(t.Context(), saleID, "cy", 900, seckill.DefaultItem)
	require.NoError(t, err)
	require.True(t, restored)

	res, err := sc.Release(t.Context(), saleID, "bob", 7000, seckill.DefaultItem, next(5001))

	require.NoError(t, err)
	require.Equal(t, "dee", res.HandedTo[0].UserID)
	require.Equal(t, seckill.WaitState{OrderID: 900}, waitState(t, sc, "cy"))
}

func TestClaim_TakesAWaitingBuyerOffTheLine(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	join(t, sc, "bob")
	_, err := sc.Release(t.Context(), saleID, "ann", 1001, seckill.DefaultItem, nil) // the order never held a unit
	require.NoError(t, err)
	_, err = sc.Client().Incr(t.Context(), sc.SaleKeys(saleID).Stock).Result() // a unit came back outside the waitlist
	require.NoError(t, err)

	require.Equal(t, seckill.Admitted, claim(t, sc, "bob", 1002).Outcome)

	require.Equal(t, seckill.WaitState{OrderID: 1002}, waitState(t, sc, "bob"))
}

// Once the sale ended its waitlist expired: a released unit goes back to the
// (closed) stock, and nobody is given an order.
func TestRelease_AfterTheEndGivesNoOneTheUnit(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	spec := openSale(1)
	spec.EndsAt = time.Now().Add(300 * time.Millisecond)
	warm(t, sc, spec)
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	join(t, sc, "bob")
	time.Sleep(time.Until(spec.EndsAt))

	res, err := sc.Release(t.Context(), saleID, "ann", 1001, seckill.DefaultItem, next(5001))

	require.NoError(t, err)
	require.Empty(t, res.HandedTo)
	require.Equal(t, int64(1), remaining(t, sc))
	require.Equal(t, seckill.SaleEnded, claim(t, sc, "cy", 1002).Outcome)
}

func TestHandOver_GivesStockToWaitingBuyers(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(0))
	for i := range 3 {
		join(t, sc, fmt.Sprint("w", i))
	}
	_, err := sc.Client().IncrBy(t.Context(), sc.SaleKeys(saleID).Stock, 2).Result() // re-loaded while they waited
	require.NoError(t, err)

	n, err := sc.HandOver(t.Context(), saleID, seckill.DefaultSKU, terms, []int64{8001, 8002, 8003})

	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, remaining(t, sc))
	require.Equal(t, int64(8001), claimOf(t, sc, "w0"))
	require.Equal(t, int64(8002), claimOf(t, sc, "w1"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "w2"))
}

// After the end, a buyer who holds an order is told so (the draw's retry
// of an admission an earlier attempt made keeps it), and only a buyer
// holding nothing is told SALE_ENDED: by claim and by join alike.
func TestClaimAndJoin_AfterTheEndAHeldOrderIsToldBeforeEnded(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	spec := openSale(2)
	spec.EndsAt = time.Now().Add(300 * time.Millisecond)
	warm(t, sc, spec)
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	time.Sleep(time.Until(spec.EndsAt))

	again := claim(t, sc, "ann", 1002)
	require.Equal(t, seckill.AlreadyClaimed, again.Outcome)
	require.Equal(t, int64(1001), again.OrderID)
	joined := join(t, sc, "ann")
	require.Equal(t, seckill.AlreadyClaimed, joined.Outcome)
	require.Equal(t, int64(1001), joined.OrderID)
	require.Equal(t, seckill.SaleEnded, claim(t, sc, "bob", 1003).Outcome)
	require.Equal(t, seckill.SaleEnded, join(t, sc, "bob").Outcome)
}

// The draw's admissions say so in the outbox (d "1"), so the saga writes
// the order as the draw's; a claim's do not.
func TestClaim_TheDrawsAdmissionsAreMarkedInTheOutbox(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(2))
	require.Equal(t, seckill.Admitted, claim(t, sc, "ann", 1001).Outcome)
	res, err := sc.ForDraw().Claim(t.Context(), saleID, "bob", 1002, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)

	entries := outbox(t, sc)
	require.Len(t, entries, 2)
	require.NotContains(t, entries[0].Values, "d", "a claim")
	require.Equal(t, "1", entries[1].Values["d"], "the draw's admission")
}
