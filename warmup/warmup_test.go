package warmup_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
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
	_, err = rs.Warm(ctx, seckill.WarmSpec{SaleID: live, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 2}}, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)})
	require.NoError(t, err)

	w := warmup.New(st, rs, 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	require.Eventually(t, func() bool {
		n, ok, err := rs.Remaining(ctx, lost)
		return err == nil && ok && n == 4
	}, warmup.Settle+10*time.Second, 20*time.Millisecond, "the lost sale is back: 5 units, 1 held by ann")
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

// A drawn sale whose segment a re-warm loaded held back (from a snapshot
// read just before its draw finished, whose opening of claims found the
// segment missing) is opened at the next pass: claims are not held back
// until the sale ends.
func TestCheck_OpensADrawnSaleLoadedHeldBack(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 3))
	// The re-warm's snapshot: not drawn yet, so loaded held back.
	_, err := rs.Rewarm(ctx, seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 3}}, StartsAt: seckill.ClaimsOpenAt(sale), EndsAt: sale.EndsAt}, nil)
	require.NoError(t, err)
	// The draw (an empty lobby) finishes.
	require.NoError(t, st.CloseLobby(ctx, sale.ID))
	require.NoError(t, st.MarkRanked(ctx, sale.ID, 0, 0))
	require.NoError(t, st.FinishDraw(ctx, sale.ID))
	terms := seckill.Terms{PaymentTimeout: time.Minute, UnitPriceCents: 990, Currency: "usd"}
	res, err := rs.Claim(ctx, sale.ID, "held", 1, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.SaleNotStarted, res.Outcome, "held back, as the race leaves it")

	w := warmup.New(st, rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.Check(ctx)
	require.NoError(t, err)
	res, err = rs.Claim(ctx, sale.ID, "held", 2, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome, "the drawn sale is open after the pass")
}

// A lost sale is loaded again only once it has been seen lost for Settle,
// when every running process has taken its order-id node back: until then
// its claims fail closed. A drawn sale whose claims cannot be opened does
// not keep another sale from being re-warmed.
func TestCheck_RewarmsOnlyOnceTheIDNodesAreTakenBack(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	lost := testenv.OpenSale(t, st, 5).ID
	drawn := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 3))
	require.NoError(t, st.CloseLobby(ctx, drawn.ID))
	require.NoError(t, st.MarkRanked(ctx, drawn.ID, 0, 0))
	require.NoError(t, st.FinishDraw(ctx, drawn.ID))
	// The drawn sale's state in Redis is broken: opening its claims fails.
	require.NoError(t, rdb.Set(ctx, rs.SegmentKeys(drawn.ID, 0).Meta, "not a hash", 0).Err())

	w := warmup.New(st, rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rewarmed, err := w.Check(ctx)
	require.ErrorContains(t, err, "drawn sale")
	require.Empty(t, rewarmed, "not at first sight")
	_, ok, err := rs.Remaining(ctx, lost)
	require.NoError(t, err)
	require.False(t, ok, "its claims fail closed meanwhile")

	time.Sleep(warmup.Settle)
	rewarmed, err = w.Check(ctx)
	require.ErrorContains(t, err, "drawn sale", "the broken sale is still reported")
	require.Equal(t, []int64{lost}, rewarmed, "and the lost one re-warmed all the same")
	n, ok, err := rs.Remaining(ctx, lost)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(5), n)
}

// Redis lost a drawn sale with the admission of a winner whose order was
// not written yet: the re-warm admits that winner again, with the order
// the draw told them, before anyone else can claim the unit; the winner
// whose order is written keeps it; then claims open.
func TestCheck_AdmitsAgainTheDrawWinnersRedisLost(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	// The sale has started since ann and bob entered.
	sale := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 3, "ann", "bob"))
	require.NoError(t, st.CloseLobby(ctx, sale.ID))
	entries, err := st.EntriesFrom(ctx, sale.ID, 0, 10)
	require.NoError(t, err)
	require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET rank = CASE user_id WHEN 'ann' THEN 1 ELSE 2 END WHERE sale_id = ?`, sale.ID).Error)
	require.NoError(t, st.MarkRanked(ctx, sale.ID, len(entries), len(entries)))
	won := []*seckill.LobbyEntry{{UserID: "ann", Rank: 1, Outcome: seckill.EntryWon, OrderID: 5001}, {UserID: "bob", Rank: 2, Outcome: seckill.EntryWon, OrderID: 5002}}
	require.NoError(t, st.SettleEntries(ctx, sale.ID, won, 3))
	require.NoError(t, st.FinishDraw(ctx, sale.ID))
	// bob's saga wrote his order; ann's admission was lost with Redis.
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 5002, SaleID: sale.ID, UserID: "bob", CreatedAt: now})
	require.NoError(t, err)

	w := warmup.New(st, rs, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.Check(ctx)
	require.NoError(t, err)
	time.Sleep(warmup.Settle)
	rewarmed, err := w.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{sale.ID}, rewarmed)

	claims, err := rs.Claims(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"ann": 5001, "bob": 5002}, claims, "ann holds the order she was told, bob keeps his")
	n, ok, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1), n, "3 units: bob's written, ann's admitted again")
	backlog, err := rs.OutboxBacklog(ctx, []int64{sale.ID})
	require.NoError(t, err)
	require.Equal(t, int64(1), backlog, "ann's admission is on its way to her saga")
	res, err := rs.Claim(ctx, sale.ID, "carl", 6001, "", seckill.TermsBySKU(*sale)(seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome, "then claims are open")
}

// A sale Redis holds as warmed before variants (an upgrade while it was
// live: no skus in its meta, no count of its claims' units) is adopted at
// the next pass: its claims count a unit each of the variant "default",
// so the units Redis holds add up again. A sale warmed since is left as
// it is.
func TestCheck_AdoptsASaleWarmedBeforeVariants(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	old, fresh := testenv.SegmentedSale(t, st, rs, 10, 2), testenv.OpenSale(t, st, 10)
	testenv.Warm(t, rs, fresh, 10)
	terms := seckill.TermsBySKU(*old)(seckill.DefaultSKU)
	for i, u := range []string{"ann", "bob", "cy"} {
		res, err := rs.Claim(ctx, old.ID, u, int64(2001+i), "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
	}
	// What a v3 warm-up and claims left: no skus, no units hash.
	for p := range 2 {
		k := rs.SegmentKeys(old.ID, p)
		require.NoError(t, rdb.HDel(ctx, k.Meta, "skus").Err())
		require.NoError(t, rdb.Del(ctx, k.Units).Err())
	}
	fresh2 := redisstore.New(rdb, prefix) // a process that remembers nothing
	held, err := fresh2.UnitsHeld(ctx, []int64{old.ID}, time.Now())
	require.NoError(t, err)
	require.Equal(t, int64(0), held[old.ID].Claimed, "before: the claims' units are not counted")

	w := warmup.New(st, fresh2, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.Check(ctx)
	require.NoError(t, err)

	held, err = fresh2.UnitsHeld(ctx, []int64{old.ID, fresh.ID}, time.Now())
	require.NoError(t, err)
	require.Equal(t, int64(3), held[old.ID].Claimed, "a unit per claim")
	require.Equal(t, int64(7), held[old.ID].Stock)
	require.Equal(t, int64(0), held[fresh.ID].Claimed)
	n, err := fresh2.Adopt(ctx, old.ID)
	require.NoError(t, err)
	require.Zero(t, n, "once")
}
