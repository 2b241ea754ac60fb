package redisstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// openSegments is openSale split into n segments.
func openSegments(units int64, n int) seckill.WarmSpec {
	spec := openSale(units)
	spec.Segments = n
	return spec
}

func TestSegments_EachInItsOwnSlot(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	seen := map[int64]int{}
	for p := range 64 {
		k := sc.SegmentKeys(saleID, p)
		sl, err := sc.Client().ClusterKeySlot(t.Context(), k.Stock).Result()
		if err != nil {
			sl = int64(redisstore.SlotOf(k.Stock)) // a single server has no CLUSTER KEYSLOT
		}
		prev, taken := seen[sl]
		require.False(t, taken, "segments %d and %d share slot %d", prev, p, sl)
		seen[sl] = p
	}
	require.Equal(t, uint16(12182), redisstore.SlotOf("foo"), "Redis Cluster's own example")
	require.Equal(t, redisstore.SlotOf("{s42}:stock"), redisstore.SlotOf("s42"))
	require.Equal(t, sc.SaleKeys(saleID), sc.SegmentKeys(saleID, 0), "segment 0 keeps a sale's keys")
}

// A sale of 8 segments, 1,000 units, 5,000 buyers at once: exactly 1,000 are
// admitted, nobody twice, and no segment is left with a unit while buyers were
// refused: buyers whose segment ran dry borrowed from the others.
func TestSegments_SellExactlyTheStockWithNoUnitLeftBehind(t *testing.T) {
	t.Parallel()
	const units, buyers, segments = 1000, 5000, 8
	sc := testenv.RedisStore(t)
	warm(t, sc, openSegments(units, segments))
	require.Equal(t, int64(units), remaining(t, sc))

	var mu sync.Mutex
	outcomes := map[seckill.Outcome]int{}
	winners := map[string]int64{}
	testenv.ForEachBuyer(buyers, 64, func(i int64) {
		user := fmt.Sprintf("u%05d", i)
		res, err := sc.Claim(t.Context(), saleID, user, 100000+i, "", terms, seckill.DefaultItem)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("claim %s: %v", user, err)
			return
		}
		outcomes[res.Outcome]++
		if res.Outcome == seckill.Admitted {
			winners[user] = res.OrderID
		}
	})

	require.Equal(t, map[seckill.Outcome]int{seckill.Admitted: units, seckill.SoldOut: buyers - units}, outcomes)
	require.Zero(t, remaining(t, sc), "no segment holds a unit, none is in flight")
	for p := range segments {
		n, err := sc.Client().Get(t.Context(), sc.SegmentKeys(saleID, p).Stock).Int64()
		require.NoError(t, err)
		require.Zero(t, n, "segment %d", p)
	}
	claims, err := sc.Claims(t.Context(), saleID)
	require.NoError(t, err)
	require.Equal(t, winners, claims)
	backlog, err := sc.OutboxBacklog(t.Context(), []int64{saleID})
	require.NoError(t, err)
	require.Equal(t, int64(units), backlog, "one outbox entry per winner, over the segments' outboxes")
	for user, order := range winners {
		require.Equal(t, order, claimOf(t, sc, user))
		res := claim(t, sc, user, 1)
		require.Equal(t, seckill.AlreadyClaimed, res.Outcome, "one active order per buyer")
		break
	}
}

// A unit released in one segment goes to the buyer who joined the waitlist
// first, whatever their segment; with nobody waiting it goes back to its own.
func TestSegments_ReleasedUnitGoesToTheFirstWaitingBuyerAcrossSegments(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(2, 4))
	var holders []string
	for i := 0; len(holders) < 2; i++ {
		u := fmt.Sprint("h", i)
		if claim(t, sc, u, int64(1000+i)).Outcome == seckill.Admitted {
			holders = append(holders, u)
		}
	}
	// Three buyers wait; the first to join gets the first unit back.
	for i, u := range []string{"w-a", "w-b", "w-c"} {
		j, err := sc.Join(ctx, saleID, u, seckill.DefaultItem, 100, 0, terms)
		require.NoError(t, err)
		require.Equal(t, seckill.JoinResult{Outcome: seckill.Waiting, Position: int64(i + 1)}, j)
	}
	order := func(u string) int64 { id := claimOf(t, sc, u); require.NotZero(t, id); return id }

	res, err := sc.Release(ctx, saleID, holders[0], order(holders[0]), seckill.DefaultItem, next(5001))
	require.NoError(t, err)
	require.True(t, res.Now)
	require.Len(t, res.HandedTo, 1)
	require.Equal(t, "w-a", res.HandedTo[0].UserID)
	require.Equal(t, int64(5001), claimOf(t, sc, "w-a"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, "w-b"))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 2}, waitState(t, sc, "w-c"))
	require.Zero(t, remaining(t, sc))

	// A repeat finds nothing to do.
	again, err := sc.Release(ctx, saleID, holders[0], 1000, seckill.DefaultItem, next(5002))
	require.NoError(t, err)
	require.Empty(t, again.HandedTo)

	// Nobody left waiting: the unit goes back to the stock.
	for _, u := range []string{"w-b", "w-c"} {
		_, err := sc.Leave(ctx, saleID, u)
		require.NoError(t, err)
	}
	res, err = sc.Release(ctx, saleID, holders[1], order(holders[1]), seckill.DefaultItem, next(5003))
	require.NoError(t, err)
	require.Empty(t, res.HandedTo)
	require.Equal(t, int64(1), remaining(t, sc))
	require.Equal(t, seckill.Admitted, claim(t, sc, "late", 7).Outcome, "any buyer may claim it, from any segment")
}

// A mover that stops between taking units and giving them leaves them in
// flight: they still count as remaining, and FinishMoves lands them.
func TestSegments_FinishMovesLandsUnitsLeftInFlight(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(4, 2))
	require.NoError(t, sc.TakeForTest(ctx, saleID, 0, "b-crashed", 2, 1))
	require.Equal(t, int64(4), remaining(t, sc), "units in flight still count")

	n, err := sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 1, nil })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	p1, err := sc.Client().Get(ctx, sc.SegmentKeys(saleID, 1).Stock).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(4), p1, "segment 1 had 2 and got 2")
	require.Equal(t, int64(4), remaining(t, sc))
	n, err = sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 1, nil })
	require.NoError(t, err)
	require.Zero(t, n, "landed once")
}

// Re-warm after a segment was lost (a Cluster primary with no replica): the
// live segments keep their units, the lost one gets the rest of the
// database's units and its buyers' claims.
func TestSegments_RewarmLoadsOnlyTheLostSegments(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(9, 3)
	warm(t, sc, spec)
	lost := sc.SegmentKeys(saleID, 2)
	for _, key := range []string{lost.Stock, lost.Meta, lost.Claims} {
		require.NoError(t, sc.Client().Del(ctx, key).Err())
	}
	_, ok, err := sc.Remaining(ctx, saleID)
	require.NoError(t, err)
	require.False(t, ok, "a sale missing a segment is not warmed")

	// The database: 8 units available (one sold meanwhile).
	spec.Variants[0].Units = 8
	loaded, err := sc.Rewarm(ctx, spec, nil)
	require.NoError(t, err)
	require.True(t, loaded)
	require.Equal(t, int64(8), remaining(t, sc))
	p2, err := sc.Client().Get(ctx, lost.Stock).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(2), p2)
}

// Released units meet the waitlist concurrently, across segments: exactly the
// first in line get them, however the releases interleave.
func TestSegments_ConcurrentReleasesServeTheLineInOrder(t *testing.T) {
	t.Parallel()
	const units, waiters, segments = 40, 60, 4
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(units, segments))
	holders := map[string]int64{}
	for i := 0; len(holders) < units; i++ {
		u := fmt.Sprint("h", i)
		if res := claim(t, sc, u, int64(1000+i)); res.Outcome == seckill.Admitted {
			holders[u] = res.OrderID
		}
	}
	line := make([]string, waiters)
	for i := range line {
		line[i] = fmt.Sprint("w", i)
		j, err := sc.Join(ctx, saleID, line[i], seckill.DefaultItem, waiters, 0, terms)
		require.NoError(t, err)
		require.Equal(t, int64(i+1), j.Position)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]bool{}
	id := int64(9000)
	for u, order := range holders {
		id++
		nextOrder := next(id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sc.Release(ctx, saleID, u, order, seckill.DefaultItem, nextOrder)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || len(res.HandedTo) == 0 {
				t.Errorf("release of %s: %+v %v", u, res, err)
				return
			}
			got[res.HandedTo[0].UserID] = true
		}()
	}
	wg.Wait()

	for i, u := range line {
		require.Equal(t, i < units, got[u], "%s (position %d)", u, i+1)
	}
	require.Zero(t, remaining(t, sc))
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, line[units]))
}

// Every buyer belongs to segment 0 of 8: they buy the units of the 7 others
// too, which move to segment 0 as it runs dry.
func TestSegments_BuyersOfOneSegmentBorrowTheOthersUnits(t *testing.T) {
	t.Parallel()
	const units, buyers, segments = 800, 1000, 8
	sc := testenv.RedisStore(t)
	warm(t, sc, openSegments(units, segments))
	var users []string
	for i := 0; len(users) < buyers; i++ {
		if u := fmt.Sprint("p0-", i); redisstore.SegmentOf(u, segments) == 0 {
			users = append(users, u)
		}
	}
	var admitted, soldOut atomic.Int64
	testenv.ForEachBuyer(buyers, 32, func(i int64) {
		res, err := sc.Claim(t.Context(), saleID, users[i-1], 100000+i, "", terms, seckill.DefaultItem)
		if err != nil {
			t.Errorf("claim: %v", err)
			return
		}
		switch res.Outcome {
		case seckill.Admitted:
			admitted.Add(1)
		case seckill.SoldOut:
			soldOut.Add(1)
		}
	})
	require.Equal(t, int64(units), admitted.Load())
	require.Equal(t, int64(buyers-units), soldOut.Load())
	require.Zero(t, remaining(t, sc))
	moves, err := sc.MovesForTest(t.Context(), saleID)
	require.NoError(t, err)
	require.Positive(t, moves)
	t.Logf("%d units sold to the buyers of one segment of %d, in %d moves", units, segments, moves)
}

// A released unit lands in one segment only, also when its move is found in
// flight again after it landed (a forget lost in a failover, a retried
// activity, reconciliation): the destination is fixed once, and the segment
// it went to remembers the move.
func TestSegments_AReleasedUnitLandsOnce(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(1, 2))
	var holder string
	for i := 0; holder == ""; i++ {
		if u := fmt.Sprint("h", i); claim(t, sc, u, 1000).Outcome == seckill.Admitted {
			holder = u
		}
	}
	// One waiting buyer in each segment, the one in segment 0 first.
	var waiters []string
	for p := range 2 {
		for i := 0; ; i++ {
			if u := fmt.Sprint("w", p, "-", i); redisstore.SegmentOf(u, 2) == p {
				j, err := sc.Join(ctx, saleID, u, seckill.DefaultItem, 10, 0, terms)
				require.NoError(t, err)
				require.Equal(t, seckill.Waiting, j.Outcome)
				waiters = append(waiters, u)
				break
			}
		}
	}
	res, err := sc.Release(ctx, saleID, holder, 1000, seckill.DefaultItem, next(5001))
	require.NoError(t, err)
	require.Equal(t, waiters[0], res.HandedTo[0].UserID)

	// The move is found in flight again, as it was when it landed.
	moves := sc.SegmentKeys(saleID, redisstore.SegmentOf(holder, 2)).Moves
	require.NoError(t, sc.Client().HSet(ctx, moves, "r1000", "1:0:0").Err())
	again, err := sc.Release(ctx, saleID, holder, 1000, seckill.DefaultItem, next(5002))
	require.NoError(t, err)
	require.Empty(t, again.HandedTo)
	n, err := sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 5003, nil })
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, claimOf(t, sc, waiters[1]), "the second waiting buyer did not get the same unit")
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, waitState(t, sc, waiters[1]))
	require.Zero(t, remaining(t, sc))
}

// The number of segments comes from warm-up or the database, never from a
// segment 0 that lost its keys: a join then fails closed and creates nothing.
func TestSegments_ALostSegmentZeroIsNotReadAsOneSegment(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := t.Context()
	warm(t, redisstore.New(rdb, prefix), openSegments(0, 2))
	meta := redisstore.New(rdb, prefix).SaleKeys(saleID).Meta
	require.NoError(t, rdb.Del(ctx, meta).Err())

	fresh := redisstore.New(rdb, prefix) // a process that never saw the sale
	fresh.KnowSegments(saleID, 2)        // from the database
	for i := 0; ; i++ {
		if u := fmt.Sprint("u", i); redisstore.SegmentOf(u, 2) == 1 {
			j, err := fresh.Join(ctx, saleID, u, seckill.DefaultItem, 10, 0, terms)
			require.NoError(t, err)
			require.Equal(t, seckill.Unavailable, j.Outcome)
			break
		}
	}
	n, err := rdb.Exists(ctx, meta).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no half-made meta")
	segments, err := redisstore.New(rdb, prefix).Segments(ctx, saleID)
	require.NoError(t, err)
	require.Equal(t, 1, segments, "read as one segment, and not remembered")
}

// A move given but not forgotten (its mover died between give.lua and
// forget.lua) holds its units in the segment it reached only: Remaining
// counts them once, and settling it changes nothing.
func TestSegments_AMoveGivenButNotForgottenCountsOnce(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(10, 2))
	require.NoError(t, sc.GiveForTest(ctx, saleID, 1, "b-given", 3, 0))
	require.Equal(t, int64(10), remaining(t, sc), "given, not forgotten: counted once")

	n, err := sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 1, nil })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int64(10), remaining(t, sc), "settled: still 10")
	p0, err := sc.Client().Get(ctx, sc.SegmentKeys(saleID, 0).Stock).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(8), p0, "segment 0 had 5 and got 3, once")
}

// Re-warm counts a move given but not forgotten once: 3 segments of 3 units,
// 2 moved from segment 1 to segment 0 and not forgotten, segment 2 lost: segment 2 is
// loaded with its 3 units, and the sale holds 9.
func TestSegments_RewarmCountsAMoveGivenButNotForgottenOnce(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(9, 3)
	warm(t, sc, spec)
	require.NoError(t, sc.GiveForTest(ctx, saleID, 1, "b-given", 2, 0))
	lost := sc.SegmentKeys(saleID, 2)
	require.NoError(t, sc.Client().Del(ctx, lost.Stock, lost.Meta, lost.Claims).Err())

	loaded, err := sc.Rewarm(ctx, spec, nil)
	require.NoError(t, err)
	require.True(t, loaded)
	p2, err := sc.Client().Get(ctx, lost.Stock).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(3), p2, "the lost segment gets its own 3 back")
	_, err = sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 1, nil })
	require.NoError(t, err)
	require.Equal(t, int64(9), remaining(t, sc))
}

// A claim whose segment is empty while units are on their way between segments
// and never land within its borrows is told SOLD_OUT for now: not
// recorded for its Idempotency-Key, so asked again once they landed it is
// admitted.
func TestSegments_ASoldOutWhileUnitsAreInFlightIsTentative(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(2, 2))
	require.NoError(t, sc.TakeForTest(ctx, saleID, 0, "b-stopped", 1, 1))
	require.NoError(t, sc.TakeForTest(ctx, saleID, 1, "b-stopped-too", 1, 0))
	user := userOfSegment(t, 0, 2)

	res, err := sc.Claim(ctx, saleID, user, 100, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.SoldOut, res.Outcome)
	require.True(t, res.Tentative, "two units are still in flight")

	_, err = sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 1, nil })
	require.NoError(t, err)
	res, err = sc.Claim(ctx, saleID, user, 101, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome, "the first answer was not recorded")
}

// A segment whose line has waiting buyers borrows nothing for a new claim:
// any unit that reaches the segment is theirs first.
func TestSegments_ASegmentWithWaitingBuyersBorrowsNothingForANewClaim(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(4, 2))
	home := userOfSegment(t, 0, 2)
	// Segment 0 is empty and a buyer waits in its line (as between a join and
	// its hand-over) while segment 1 has units.
	require.NoError(t, sc.Client().Set(ctx, sc.SegmentKeys(saleID, 0).Stock, 0, 0).Err())
	require.NoError(t, sc.Client().ZAdd(ctx, sc.SegmentKeys(saleID, 0).Wait, redis.Z{Score: 1, Member: "waiting"}).Err())
	p1, err := sc.Client().Get(ctx, sc.SegmentKeys(saleID, 1).Stock).Int64()
	require.NoError(t, err)

	res := claim(t, sc, home, 700)
	require.Equal(t, seckill.SoldOut, res.Outcome)
	require.True(t, res.Tentative)
	after, err := sc.Client().Get(ctx, sc.SegmentKeys(saleID, 1).Stock).Int64()
	require.NoError(t, err)
	require.Equal(t, p1, after, "nothing was borrowed from segment 1")
}

// SECKILL_WAITLIST_MAX bounds a sale's whole line, however many segments
// its stock has, not each segment's.
func TestSegments_TheWaitlistBoundIsTheSales(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(0, 4))
	outcomes := map[seckill.Outcome]int{}
	for i := range 40 {
		j, err := sc.Join(ctx, saleID, fmt.Sprint("w", i), seckill.DefaultItem, 10, int64(1000+i), terms)
		require.NoError(t, err)
		outcomes[j.Outcome]++
	}
	require.Equal(t, map[seckill.Outcome]int{seckill.Waiting: 10, seckill.WaitlistFull: 30}, outcomes)
	counts, err := sc.Counts(ctx, []int64{saleID})
	require.NoError(t, err)
	require.Equal(t, int64(10), counts[saleID].Waiting)
	waiting, err := sc.Waiting(ctx, saleID)
	require.NoError(t, err)
	require.Equal(t, int64(10), waiting, "the line the bound is measured against, over every segment")
}

// aim.lua's write waits for the replicas like every step of a move: lost
// in a failover, a parked unit could be aimed again and land twice.
func TestSegments_AnAimWaitsForTheReplicas(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSegments(2, 2))
	holder := userOfSegment(t, 1, 2)
	require.Equal(t, seckill.Admitted, claim(t, sc, holder, 500).Outcome)
	require.NoError(t, sc.Client().HSet(ctx, sc.SegmentKeys(saleID, 1).Moves, "r500", `{"units":1,"dest":-1,"at":1}`).Err())

	err := sc.WithReplicas(1, 20*time.Millisecond).AimForTest(ctx, saleID, 1, "r500", 0)
	require.ErrorIs(t, err, redisstore.ErrNotReplicated, "this Redis has no replica")
}

// userOfSegment is a user id that belongs to segment p of a sale of n segments.
func userOfSegment(t *testing.T, p, n int) string {
	t.Helper()
	for i := 0; ; i++ {
		if u := fmt.Sprint("buyer-", i); redisstore.SegmentOf(u, n) == p {
			return u
		}
	}
}

// The waitlist's admissions expire with the sale, also the record of a
// waiting buyer found holding an order already.
func TestWaitlist_EveryRecordExpiresWithTheSale(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "holder", 1).Outcome)
	j, err := sc.Join(ctx, saleID, "waiter", seckill.DefaultItem, 10, 2, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	// waiter's claim comes back from a re-load while she waits.
	require.NoError(t, sc.Client().HSet(ctx, sc.SaleKeys(saleID).Claims, "waiter", "99").Err())
	_, err = sc.Release(ctx, saleID, "holder", 1, seckill.DefaultItem, next(3))
	require.NoError(t, err)
	ttl, err := sc.Client().PTTL(ctx, sc.SaleKeys(saleID).Waited).Result()
	require.NoError(t, err)
	require.Positive(t, ttl, "the waited record expires")
}

// Segment 0 numbers the joins of a sale of several segments: re-loaded after a
// loss, it goes on after the last join the live segments hold, so a buyer who
// joins then is behind every buyer already waiting (found by the model
// test: the sequence started again at 1 and a late joiner went first).
func TestSegments_ARewarmedSegmentZeroKeepsTheLineInOrder(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(0, 2)
	warm(t, sc, spec)
	first := userOfSegment(t, 1, 2)
	j, err := sc.Join(ctx, saleID, first, seckill.DefaultItem, 10, 1, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	p0 := sc.SegmentKeys(saleID, 0)
	require.NoError(t, sc.Client().Del(ctx, p0.Stock, p0.Meta, p0.Claims, p0.Wait).Err())
	_, err = sc.Rewarm(ctx, spec, nil)
	require.NoError(t, err)

	late := ""
	for i := 0; late == ""; i++ {
		if u := fmt.Sprint("late-", i); redisstore.SegmentOf(u, 2) == 0 {
			late = u
		}
	}
	j, err = sc.Join(ctx, saleID, late, seckill.DefaultItem, 10, 2, terms)
	require.NoError(t, err)
	require.Equal(t, int64(2), j.Position, "behind the buyer already waiting")
	ws, err := sc.WaitStateOf(ctx, saleID, first)
	require.NoError(t, err)
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, ws)
}

// A move aimed at a segment that is then lost may have reached it or not (its
// moved set went with it): re-warm drops the record and loads the segment with
// its units, so they are neither counted twice nor landed again (found by
// the model test).
func TestSegments_RewarmDropsAMoveIntoALostSegment(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSegments(9, 3)
	warm(t, sc, spec)                                               // 3, 3, 3
	require.NoError(t, sc.GiveForTest(ctx, saleID, 0, "b-z", 2, 2)) // 1, 3, 5, the record kept in segment 0
	lost := sc.SegmentKeys(saleID, 2)
	require.NoError(t, sc.Client().Del(ctx, lost.Stock, lost.Meta, lost.Claims, lost.Moved).Err())

	loaded, err := sc.Rewarm(ctx, spec, nil) // the database: 9 available
	require.NoError(t, err)
	require.True(t, loaded)
	p2, err := sc.Client().Get(ctx, lost.Stock).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(5), p2, "the lost segment gets what the live segments lack")
	moves, err := sc.Moves(ctx, saleID)
	require.NoError(t, err)
	require.Empty(t, moves, "the record is dropped")
	n, err := sc.FinishMoves(ctx, saleID, func(string) seckill.Terms { return terms }, 0, func() (int64, error) { return 1, nil })
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, int64(9), remaining(t, sc))
}
