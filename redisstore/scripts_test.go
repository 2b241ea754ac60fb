package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

const saleID = 42

// terms are what every admitted buyer of the tests' sale owes.
var terms = seckill.Terms{PaymentTimeout: 15 * time.Minute, UnitPriceCents: 990, Currency: "usd"}

// openSale is a window that is open now and for the rest of the test.
func openSale(units int64) seckill.WarmSpec {
	now := time.Now()
	return seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}
}

// next is the order a released unit becomes if a buyer waits for it.
func next(id int64) *seckill.NextOrder { return &seckill.NextOrder{IDs: []int64{id}, Terms: terms} }

func warm(t *testing.T, sc *redisstore.Store, spec seckill.WarmSpec) {
	t.Helper()
	loaded, err := sc.Warm(t.Context(), spec)
	require.NoError(t, err)
	require.True(t, loaded)
}

func claim(t *testing.T, sc *redisstore.Store, user string, orderID int64) seckill.ClaimResult {
	t.Helper()
	res, err := sc.Claim(t.Context(), saleID, user, orderID, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	return res
}

func remaining(t *testing.T, sc *redisstore.Store) int64 {
	t.Helper()
	n, ok, err := sc.Remaining(t.Context(), saleID)
	require.NoError(t, err)
	require.True(t, ok, "sale is not warmed")
	return n
}

func claimOf(t *testing.T, sc *redisstore.Store, user string) int64 {
	t.Helper()
	id, err := sc.ClaimOf(t.Context(), saleID, user)
	require.NoError(t, err)
	return id
}

func outbox(t *testing.T, sc *redisstore.Store) []redis.XMessage {
	t.Helper()
	msgs, err := sc.Client().XRange(t.Context(), sc.SaleKeys(saleID).Outbox, "-", "+").Result()
	require.NoError(t, err)
	return msgs
}

func exists(t *testing.T, sc *redisstore.Store, key string) bool {
	t.Helper()
	n, err := sc.Client().Exists(t.Context(), key).Result()
	require.NoError(t, err)
	return n == 1
}

func TestWarm_LoadsStockAndWindow(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSale(10)

	warm(t, sc, spec)

	require.Equal(t, int64(10), remaining(t, sc))
	k := sc.SaleKeys(saleID)
	meta, err := sc.Client().HGetAll(ctx, k.Meta).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"starts_ms": strconv.FormatInt(spec.StartsAt.UnixMilli(), 10),
		"ends_ms":   strconv.FormatInt(spec.EndsAt.UnixMilli(), 10),
		"skus":      seckill.DefaultSKU,
		"expire_ms": strconv.FormatInt(spec.EndsAt.Add(redisstore.KeyRetention).UnixMilli(), 10),
		"parts":     "1",
	}, meta)

	// Every key of the sale goes KeyRetention after the sale ends.
	wantExpiry := spec.EndsAt.Add(redisstore.KeyRetention).UnixMilli()
	for _, key := range []string{k.Stock, k.Meta, k.Outbox} {
		got, err := sc.Client().PExpireTime(ctx, key).Result()
		require.NoError(t, err, key)
		require.Equal(t, wantExpiry, got.Milliseconds(), key)
	}

	// The relay's group exists before the first entry, and the sale is
	// listed for the relay.
	groups, err := sc.Client().XInfoGroups(ctx, k.Outbox).Result()
	require.NoError(t, err)
	require.Len(t, groups, 1)
	require.Equal(t, redisstore.RelayGroup, groups[0].Name)
	_, err = sc.Client().ZScore(ctx, sc.ActiveSalesKey(), strconv.Itoa(saleID)).Result()
	require.NoError(t, err)
}

func TestWarm_DoesNotOverwriteLiveCounter(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(10))
	for i := range 3 {
		require.Equal(t, seckill.Admitted, claim(t, sc, "u"+strconv.Itoa(i), int64(i+1)).Outcome)
	}

	loaded, err := sc.Warm(t.Context(), openSale(100))
	require.NoError(t, err)

	require.False(t, loaded)
	require.Equal(t, int64(7), remaining(t, sc))
	require.Equal(t, int64(1), claimOf(t, sc, "u0"), "a second warm-up keeps the claims")
	require.Len(t, outbox(t, sc), 3, "a second warm-up keeps the outbox")
}

func TestWarm_RejectsNegativeUnits(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	spec := openSale(-1)

	_, err := sc.Warm(t.Context(), spec)

	require.Error(t, err)
	_, ok, err := sc.Remaining(t.Context(), saleID)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestClaim_AdmitsAndRecordsTheClaim(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(3))
	before := time.Now()

	res := claim(t, sc, "alice", 1001)

	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: 1001, PayBy: res.PayBy}, res)
	require.Equal(t, int64(2), remaining(t, sc))
	require.Equal(t, int64(1001), claimOf(t, sc, "alice"))
	msgs := outbox(t, sc)
	require.Len(t, msgs, 1)
	v := msgs[0].Values
	require.Len(t, v, 7)
	require.Equal(t, "1001", v["o"])
	require.Equal(t, "alice", v["u"])
	require.Equal(t, strconv.Itoa(saleID), v["s"])
	admittedMs, err := strconv.ParseInt(v["t"].(string), 10, 64)
	require.NoError(t, err)
	// t is the Redis server's clock; allow for skew with the test's.
	require.InDelta(t, before.UnixMilli(), admittedMs, float64(5*time.Second/time.Millisecond))
	require.Equal(t, strconv.FormatInt(admittedMs+terms.PaymentTimeout.Milliseconds(), 10), v["p"], "pay_by = admission + timeout")
}

func TestClaim_AlreadyClaimedReturnsActiveOrder(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(3))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)

	res := claim(t, sc, "alice", 1002)

	require.Equal(t, seckill.ClaimResult{Outcome: seckill.AlreadyClaimed, OrderID: 1001}, res)
	require.Equal(t, int64(2), remaining(t, sc))
	require.Equal(t, int64(1001), claimOf(t, sc, "alice"))
	require.Len(t, outbox(t, sc), 1)
}

func TestClaim_SoldOutAfterLastUnit(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)

	res := claim(t, sc, "bob", 1002)

	require.Equal(t, seckill.ClaimResult{Outcome: seckill.SoldOut}, res)
	require.Equal(t, int64(0), remaining(t, sc))
	require.Zero(t, claimOf(t, sc, "bob"))
	require.Len(t, outbox(t, sc), 1)
}

func TestClaim_OutsideWindowChangesNothing(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name     string
		starts   time.Time
		ends     time.Time
		expected seckill.Outcome
	}{
		{"not started", now.Add(time.Hour), now.Add(2 * time.Hour), seckill.SaleNotStarted},
		{"ended", now.Add(-2 * time.Hour), now.Add(-time.Second), seckill.SaleEnded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := testenv.RedisStore(t)
			warm(t, sc, seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 5}}, StartsAt: tt.starts, EndsAt: tt.ends})

			res := claim(t, sc, "alice", 1001)

			require.Equal(t, seckill.ClaimResult{Outcome: tt.expected}, res)
			require.Equal(t, int64(5), remaining(t, sc))
			require.Zero(t, claimOf(t, sc, "alice"))
			require.Empty(t, outbox(t, sc))
		})
	}
}

func TestClaim_NotWarmedFailsClosed(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	k := sc.SaleKeys(saleID)

	res := claim(t, sc, "alice", 1001)

	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Unavailable}, res)
	for _, key := range []string{k.Stock, k.Claims, k.Meta, k.Outbox} {
		require.False(t, exists(t, sc, key), "claim wrote %s", key)
	}
}

func TestClaim_NotWarmedWithoutWindow(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(5))
	k := sc.SaleKeys(saleID)
	require.NoError(t, sc.Client().Del(t.Context(), k.Meta).Err())

	res := claim(t, sc, "alice", 1001)

	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Unavailable}, res)
	require.Equal(t, int64(5), remaining(t, sc))
	require.Zero(t, claimOf(t, sc, "alice"))
	require.Empty(t, outbox(t, sc))
}

func TestClaim_ParallelBuyersExactlyStockWinners(t *testing.T) {
	t.Parallel()
	const (
		buyers = 500
		units  = 50
	)
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(units))
	ctx := t.Context()

	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		outcomes = make([]seckill.ClaimResult, buyers)
		errs     = make([]error, buyers)
	)
	for i := range buyers {
		wg.Go(func() {
			<-start
			outcomes[i], errs[i] = sc.Claim(ctx, saleID, "user-"+strconv.Itoa(i), int64(i+1), "", terms, seckill.DefaultItem)
		})
	}
	close(start)
	wg.Wait()

	admitted := map[int64]bool{}
	for i, res := range outcomes {
		require.NoError(t, errs[i])
		switch res.Outcome {
		case seckill.Admitted:
			require.Equal(t, int64(i+1), res.OrderID)
			admitted[res.OrderID] = true
		case seckill.SoldOut:
		default:
			t.Fatalf("buyer %d: unexpected outcome %v", i, res.Outcome)
		}
	}
	require.Len(t, admitted, units)
	require.Equal(t, int64(0), remaining(t, sc))
	claims, err := sc.Client().HLen(ctx, sc.SaleKeys(saleID).Claims).Result()
	require.NoError(t, err)
	require.Equal(t, int64(units), claims)
	msgs := outbox(t, sc)
	require.Len(t, msgs, units)
	for _, m := range msgs {
		id, err := strconv.ParseInt(m.Values["o"].(string), 10, 64)
		require.NoError(t, err)
		require.True(t, admitted[id], "outbox entry for order %d that was not admitted", id)
		delete(admitted, id)
	}
}

func TestRelease_ReturnsUnitExactlyOnce(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)
	ctx := t.Context()

	released, err := sc.Release(ctx, saleID, "alice", 1001, seckill.DefaultItem, next(5001))
	require.NoError(t, err)
	require.True(t, released.Now)
	require.Equal(t, int64(1), remaining(t, sc))
	require.Zero(t, claimOf(t, sc, "alice"))

	released, err = sc.Release(ctx, saleID, "alice", 1001, seckill.DefaultItem, next(5001))
	require.NoError(t, err)
	require.False(t, released.Now)
	require.Equal(t, int64(1), remaining(t, sc), "a repeated release must not return a second unit")
}

func TestRelease_WithoutUnitOnlyForgetsClaim(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(2))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)

	released, err := sc.Release(t.Context(), saleID, "alice", 1001, seckill.DefaultItem, nil)

	require.NoError(t, err)
	require.True(t, released.Now)
	require.Equal(t, int64(1), remaining(t, sc))
	require.Zero(t, claimOf(t, sc, "alice"))
}

func TestRelease_UserMayClaimAgain(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)
	released, err := sc.Release(t.Context(), saleID, "alice", 1001, seckill.DefaultItem, next(5001))
	require.NoError(t, err)
	require.True(t, released.Now)

	res := claim(t, sc, "alice", 1002)

	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: 1002, PayBy: res.PayBy}, res)
	require.Equal(t, int64(0), remaining(t, sc))
}

func TestRelease_IgnoresClaimOfAnotherOrder(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(2))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)

	released, err := sc.Release(t.Context(), saleID, "alice", 999, seckill.DefaultItem, next(5001))

	require.NoError(t, err)
	require.False(t, released.Now)
	require.Equal(t, int64(1), remaining(t, sc))
	require.Equal(t, int64(1001), claimOf(t, sc, "alice"))
}

func TestRelease_NeverCreatesMissingStockKey(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)
	ctx := t.Context()
	k := sc.SaleKeys(saleID)
	require.NoError(t, sc.Client().Del(ctx, k.Stock).Err()) // Redis lost the counter
	sub := subscribe(t, sc)

	released, err := sc.Release(ctx, saleID, "alice", 1001, seckill.DefaultItem, next(5001))

	require.NoError(t, err)
	require.True(t, released.Now, "the claim is still forgotten")
	require.Zero(t, claimOf(t, sc, "alice"))
	require.False(t, exists(t, sc, k.Stock))
	// Messages on one channel arrive in order: if the release had announced
	// a restock, it would come before this marker.
	require.NoError(t, sc.Client().Publish(ctx, sc.RestockChannel(), "marker").Err())
	require.Equal(t, "marker", receive(t, sub).Payload)
}

func TestRelease_AnnouncesRestock(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(1))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1001).Outcome)
	sub := subscribe(t, sc)

	released, err := sc.Release(t.Context(), saleID, "alice", 1001, seckill.DefaultItem, next(5001))

	require.NoError(t, err)
	require.True(t, released.Now)
	msg := receive(t, sub)
	require.Equal(t, sc.RestockChannel(), msg.Channel)
	require.Equal(t, strconv.Itoa(saleID), msg.Payload)
}

// subscribe listens on the restock channel, returning once the
// subscription is active so no later message is missed.
func subscribe(t *testing.T, sc *redisstore.Store) *redis.PubSub {
	t.Helper()
	sub := sc.Client().Subscribe(t.Context(), sc.RestockChannel())
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(t.Context())
	require.NoError(t, err)
	return sub
}

func receive(t *testing.T, sub *redis.PubSub) *redis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	return msg
}

func TestRemainingMany_ReadsWarmedSalesOnly(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	warm(t, sc, openSale(10))
	require.Equal(t, seckill.Admitted, claim(t, sc, "alice", 1).Outcome)

	got, err := sc.RemainingMany(t.Context(), []int64{saleID, saleID + 1})

	require.NoError(t, err)
	require.Equal(t, map[int64]int64{saleID: 9}, got)
}

func TestClaim_FixesPayByAtAdmission(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSale(2))

	before := time.Now().Add(-time.Second) // Redis' clock, give or take
	res := claim(t, sc, "alice", 7)
	require.Equal(t, seckill.Admitted, res.Outcome)
	require.WithinDuration(t, time.Now().Add(terms.PaymentTimeout), res.PayBy, 2*time.Second)
	require.True(t, res.PayBy.After(before.Add(terms.PaymentTimeout)))

	// The outbox entry carries the terms, for the saga.
	msgs := outbox(t, sc)
	require.Len(t, msgs, 1)
	require.Equal(t, strconv.FormatInt(res.PayBy.UnixMilli(), 10), msgs[0].Values["p"])
	require.Equal(t, "990", msgs[0].Values["a"])
	require.Equal(t, "usd", msgs[0].Values["c"])

	// The admission can be found by order id alone, before any saga runs.
	adm, ok, err := sc.Admission(ctx, 7, []int64{saleID + 1, saleID})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, seckill.Admission{OrderID: 7, SaleID: saleID, UserID: "alice", PayBy: res.PayBy, Item: seckill.DefaultItem}, adm)
	_, ok, err = sc.Admission(ctx, 8, []int64{saleID})
	require.NoError(t, err)
	require.False(t, ok)

	// A refusal carries no pay_by.
	again := claim(t, sc, "alice", 9)
	require.Equal(t, seckill.AlreadyClaimed, again.Outcome)
	require.True(t, again.PayBy.IsZero())
}

// An admission says whether the sale's draw made it, so a saga started
// from the admission instead of its outbox entry (a cancel before the
// relay, reconciliation) writes the order as the draw's. A record written
// before the marker still reads, as an ordinary admission, and a replayed
// answer of the draw's admission keeps its pay_by.
func TestAdmission_SaysWhetherTheDrawAdmittedIt(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSale(3))

	drawn, err := sc.ForDraw().Claim(ctx, saleID, "sso:winner", 1, "draw-key", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, drawn.Outcome)
	ordinary := claim(t, sc, "buyer", 2)
	require.Equal(t, seckill.Admitted, ordinary.Outcome)
	older := time.UnixMilli(1_700_000_000_000).UTC()
	require.NoError(t, sc.Client().HSet(ctx, sc.SaleKeys(saleID).Admitted, "3",
		strconv.FormatInt(older.UnixMilli(), 10)+":old:buyer").Err())

	for _, want := range []seckill.Admission{
		{OrderID: 1, SaleID: saleID, UserID: "sso:winner", PayBy: drawn.PayBy, Drawn: true, Item: seckill.DefaultItem},
		{OrderID: 2, SaleID: saleID, UserID: "buyer", PayBy: ordinary.PayBy, Item: seckill.DefaultItem},
		{OrderID: 3, SaleID: saleID, UserID: "old:buyer", PayBy: older, Item: seckill.DefaultItem},
	} {
		adm, ok, err := sc.Admission(ctx, want.OrderID, []int64{saleID})
		require.NoError(t, err)
		require.True(t, ok, "order %d", want.OrderID)
		require.Equal(t, want, adm)
	}

	again, err := sc.ForDraw().Claim(ctx, saleID, "sso:winner", 4, "draw-key", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: 1, Replayed: true, PayBy: drawn.PayBy}, again)
}

func TestClaim_IdempotencyKeyReplaysTheFirstDecision(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	warm(t, sc, openSale(1))

	first, err := sc.Claim(ctx, saleID, "alice", 1, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.False(t, first.PayBy.IsZero())
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: 1, PayBy: first.PayBy}, first)

	// The same key again, even with another fresh order id: the first
	// answer, with the same pay_by.
	again, err := sc.Claim(ctx, saleID, "alice", 2, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: 1, Replayed: true, PayBy: first.PayBy}, again)
	// Another key is a new request: the user already holds an order.
	other, err := sc.Claim(ctx, saleID, "alice", 3, "key-2", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.AlreadyClaimed, OrderID: 1}, other)
	// Keys are scoped per user: bob's "key-1" is his own, and sold out.
	bob, err := sc.Claim(ctx, saleID, "bob", 4, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.SoldOut}, bob)
	bobAgain, err := sc.Claim(ctx, saleID, "bob", 5, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.SoldOut, Replayed: true}, bobAgain)

	// Only one unit was taken and one outbox entry written.
	require.Equal(t, int64(0), remaining(t, sc))
	n, err := sc.Client().XLen(ctx, sc.SaleKeys(saleID).Outbox).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)

	// The record is kept for 24 h.
	keys, err := sc.Client().Keys(ctx, sc.Prefix()+":*idem*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 3)
	for _, k := range keys {
		ttl := sc.Client().TTL(ctx, k).Val()
		require.InDelta(t, redisstore.IdempotencyTTL.Seconds(), ttl.Seconds(), 5)
	}
}

func TestClaim_IdempotencyKeyDoesNotRecordNotWarmed(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()

	res, err := sc.Claim(ctx, saleID, "alice", 1, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Unavailable, res.Outcome)

	warm(t, sc, openSale(1))
	res, err = sc.Claim(ctx, saleID, "alice", 2, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: 2, PayBy: res.PayBy}, res, "a retry after 503 is a new attempt")
}

func TestRewarm_RestoresCounterAndClaimsOnlyWhenLost(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	spec := openSale(7)
	claims := []seckill.ActiveClaim{{UserID: "alice", OrderID: 11}, {UserID: "bob", OrderID: 12}}

	loaded, err := sc.Rewarm(ctx, spec, claims)
	require.NoError(t, err)
	require.True(t, loaded)
	require.Equal(t, int64(7), remaining(t, sc))
	res := claim(t, sc, "alice", 99)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.AlreadyClaimed, OrderID: 11}, res, "restored claims still count")
	require.Equal(t, seckill.Admitted, claim(t, sc, "carol", 13).Outcome)

	// A live counter is never overwritten.
	loaded, err = sc.Rewarm(ctx, openSale(100), nil)
	require.NoError(t, err)
	require.False(t, loaded)
	require.Equal(t, int64(6), remaining(t, sc))
	res = claim(t, sc, "bob", 98)
	require.Equal(t, seckill.ClaimResult{Outcome: seckill.AlreadyClaimed, OrderID: 12}, res)
}

func TestClaim_RateLimitPerUserSlidingWindow(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t).WithRateLimit(redisstore.RateLimit{Max: 3, Window: 500 * time.Millisecond})
	ctx := t.Context()
	warm(t, sc, openSale(10))

	for i := range 3 {
		res, err := sc.Claim(ctx, saleID, "eager", int64(i+1), "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.NotEqual(t, seckill.RateLimited, res.Outcome)
	}
	res, err := sc.Claim(ctx, saleID, "eager", 4, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.RateLimited, res.Outcome)
	require.Positive(t, res.RetryAfter)
	require.LessOrEqual(t, res.RetryAfter, 500*time.Millisecond)
	// Other users are not affected, and a limited attempt changes nothing.
	require.Equal(t, seckill.Admitted, claim(t, sc, "calm", 5).Outcome)
	require.Equal(t, int64(8), remaining(t, sc))

	time.Sleep(res.RetryAfter + 20*time.Millisecond)
	res, err = sc.Claim(ctx, saleID, "eager", 6, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.AlreadyClaimed, res.Outcome, "allowed again once the window slid")
}

// A provider's subjects ("auth0|5f3c", e-mails, ids with ":" or braces)
// are users like any other: each holds its own claim, rate limit and
// idempotency record, and none appears raw in a key name (where ":" or a
// brace would split its parts or move its hash tag).
func TestClaim_ProviderSubjectsNeverShareAKey(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t).WithRateLimit(redisstore.RateLimit{Max: 5, Window: time.Minute})
	ctx := t.Context()
	users := []string{"auth0|5f3c9a", "a:b", "a", "b:idem:a", "{x}", "ann@example.com", "with space", "~!*"}
	warm(t, sc, openSale(int64(len(users))))

	orders := map[int64]string{}
	for i, u := range users {
		res, err := sc.Claim(ctx, saleID, u, int64(i+1), "key", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome, u)
		orders[res.OrderID] = u
		again, err := sc.Claim(ctx, saleID, u, int64(100+i), "key", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.True(t, again.Replayed, u)
		require.Equal(t, res.OrderID, again.OrderID, "%s replays its own answer", u)
		held, err := sc.ClaimOf(ctx, saleID, u)
		require.NoError(t, err)
		require.Equal(t, res.OrderID, held, u)
	}
	require.Len(t, orders, len(users), "one order per user")

	keys, err := sc.Client().Keys(ctx, sc.Prefix()+":*").Result()
	require.NoError(t, err)
	var idem, rl int
	for _, k := range keys {
		rest := strings.TrimPrefix(k, sc.Prefix()+":")
		require.LessOrEqual(t, strings.Count(rest, "{"), 1, "at most one hash tag in %q", k)
		// ("~" marks an encoded id; base64url has none of these.)
		for _, c := range []string{"|", "@", " ", "!", "*"} {
			require.NotContains(t, rest, c, "a subject is raw in %q", k)
		}
		idem += strings.Count(k, ":idem:") - strings.Count(k, ":idem:-")
		rl += strings.Count(k, ":rl:")
	}
	require.Equal(t, len(users), idem, "one idempotency record per user")
	require.Equal(t, len(users), rl, "one rate-limit set per user")
}

// "Not started yet" is not recorded under an Idempotency-Key: a sale
// with a lobby answers it until its draw is done, and a client retrying
// with the same key after that gets a fresh decision, not a stale "not
// yet" for a day. The draw's own admissions pass the held start.
func TestClaim_NotStartedIsNotRecordedAndTheDrawPassesTheHeldStart(t *testing.T) {
	t.Parallel()
	sc := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now()
	lobby := now.Add(-time.Hour)
	sale := &seckill.Sale{ID: saleID, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), LobbyOpensAt: &lobby}
	warm(t, sc, seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 2}}, StartsAt: seckill.ClaimsOpenAt(sale), EndsAt: sale.EndsAt})

	res, err := sc.Claim(ctx, saleID, "alice", 1, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.SaleNotStarted, res.Outcome, "held back until the draw is done")
	drawn, err := sc.ForDraw().Claim(ctx, saleID, "winner", 2, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, drawn.Outcome, "the draw's admission passes")

	require.NoError(t, sc.OpenClaims(ctx, saleID, sale.StartsAt))
	res, err = sc.Claim(ctx, saleID, "alice", 3, "key-1", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome, "the same key after the draw: decided afresh")
}

// Re-warming a lost sale of two segments admits again, in the same step
// as the load, the admissions it lost before their orders were written:
// each takes a unit of the units loaded (even when they are all there
// is), gets its outbox entry, and a buyer holding an active order keeps
// it instead.
func TestRewarmAdmitting_GivesTheLostAdmissionsTheirUnitsFirst(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	now := time.Now()
	spec := seckill.WarmSpec{SaleID: 41, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 3}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Segments: 2}
	terms := seckill.Terms{PaymentTimeout: time.Minute, UnitPriceCents: 990, Currency: "usd"}
	active := []seckill.ActiveClaim{{UserID: "held", OrderID: 7001}}
	again := []seckill.ActiveClaim{{UserID: "ann", OrderID: 7101}, {UserID: "bob", OrderID: 7102}, {UserID: "cat", OrderID: 7103}, {UserID: "held", OrderID: 7104}}

	loaded, admitted, err := rs.RewarmAdmitting(ctx, spec, active, again, func(string) seckill.Terms { return terms })
	require.NoError(t, err)
	require.True(t, loaded)
	require.Equal(t, 3, admitted, "held keeps its order")
	claims, err := rs.Claims(ctx, 41)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"held": 7001, "ann": 7101, "bob": 7102, "cat": 7103}, claims)
	n, ok, err := rs.Remaining(ctx, 41)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, n, "the three units went to the three admissions made again")
	backlog, err := rs.OutboxBacklog(ctx, []int64{41})
	require.NoError(t, err)
	require.Equal(t, int64(3), backlog, "each on its way to its saga")

	loaded, admitted, err = rs.RewarmAdmitting(ctx, spec, active, again, func(string) seckill.Terms { return terms })
	require.NoError(t, err)
	require.False(t, loaded, "a live sale is not loaded again")
	require.Zero(t, admitted)
}
