package activities_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// drawRig is a sale with a lobby of n entrants whose draw the test runs
// activity by activity (no Temporal server: the SDK's test environment).
type drawRig struct {
	st   *store.Store
	rs   *redisstore.Store
	rdb  redis.UniversalClient
	pfx  string
	sale *seckill.Sale
	env  *testsuite.TestActivityEnvironment
	acts *activities.Activities
	in   seckill.DrawInput
}

func newDrawRig(t *testing.T, stock int64, entrants int) *drawRig {
	t.Helper()
	return newSegmentedDrawRig(t, stock, entrants, 1)
}

// newSegmentedDrawRig is newDrawRig with the stock split into segments.
func newSegmentedDrawRig(t *testing.T, stock int64, entrants, segments int) *drawRig {
	t.Helper()
	return newDrawRigOf(t, stock, entrants, segments, nil)
}

// newDrawRigOf is newSegmentedDrawRig of a sale whose draw waits for the
// beacon round b (nil: none), with the activities given opts.
func newDrawRigOf(t testing.TB, stock int64, entrants, segments int, b *seckill.DrawBeacon, opts ...activities.Option) *drawRig {
	t.Helper()
	st, _ := testenv.Store(t)
	rdb, pfx := testenv.Redis(t)
	rs := redisstore.New(rdb, pfx)
	ctx := t.Context()
	now := time.Now().UTC()
	lobby := now.Add(-time.Hour)
	// The lobby stays open however slow the machine: a test that needs the
	// sale ended ends it (end), after everyone entered.
	sale, err := st.CreateSale(ctx, seckill.NewSale{Name: "draw", Currency: "usd", Variants: testenv.DefaultVariant("draw", 990, stock),
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PaymentTimeout: time.Minute, LobbyOpensAt: &lobby, StockSegments: segments, Beacon: b}, nil)
	require.NoError(t, err)
	_, err = rs.Warm(ctx, seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: stock}}, StartsAt: seckill.ClaimsOpenAt(sale), EndsAt: sale.EndsAt, Segments: segments})
	require.NoError(t, err)
	var failed atomic.Int64
	testenv.ForEachBuyer(entrants, 8, func(i int64) {
		if _, _, err := st.Enter(ctx, sale.ID, fmt.Sprint("e", i-1), seckill.DefaultItem); err != nil {
			failed.Add(1)
		}
	})
	require.Zero(t, failed.Load(), "entries refused")
	var suite testsuite.WorkflowTestSuite
	r := &drawRig{st: st, rs: rs, rdb: rdb, pfx: pfx, sale: sale, env: suite.NewTestActivityEnvironment(),
		acts: activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2, opts...),
		in:   seckill.DrawInput{SaleID: sale.ID, StartsAt: sale.StartsAt, WaitlistMax: 100, RanksWhenReached: true}}
	r.env.RegisterActivity(r.acts)
	return r
}

// end ends the sale now, in the database and in Redis.
func (r *drawRig) end(t *testing.T) {
	t.Helper()
	r.sale = testenv.EndedNow(t, r.st, r.rdb, r.rs, r.sale)
}

func (r *drawRig) rank(t testing.TB) {
	t.Helper()
	_, err := r.env.ExecuteActivity(r.acts.RankDraw, r.in)
	require.NoError(t, err)
}

func (r *drawRig) settle(t testing.TB) seckill.DrawProgress {
	t.Helper()
	v, err := r.env.ExecuteActivity(r.acts.SettleDraw, seckill.DrawStep{DrawInput: r.in})
	require.NoError(t, err)
	var p seckill.DrawProgress
	require.NoError(t, v.Get(&p))
	return p
}

// settleAll settles the rest of the draw as SaleDraw does, each step given
// what the last one found, then finishes it.
func (r *drawRig) settleAll(t testing.TB) {
	t.Helper()
	for p := r.settle(t); !p.Done; {
		v, err := r.env.ExecuteActivity(r.acts.SettleDraw, seckill.DrawStep{DrawInput: r.in, WaitlistFull: p.WaitlistFull, Ended: p.Ended})
		require.NoError(t, err)
		require.NoError(t, v.Get(&p))
	}
	_, err := r.env.ExecuteActivity(r.acts.FinishDraw, r.in)
	require.NoError(t, err)
}

// requireRanksAdmitted checks what the published draw promises: k
// admitted, one order for each rank 1..k.
func (r *drawRig) requireRanksAdmitted(t *testing.T, k int) {
	t.Helper()
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, k, d.Admitted, "admitted is min(stock, entries)")
	require.Zero(t, d.EndedAtRank, "the sale's end cut nothing")
	orders, err := r.st.DrawOrders(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Len(t, orders, k)
	for i, o := range orders {
		require.Equal(t, i+1, o.Rank, "each rank 1..K has one order")
	}
}

// requireWonIffHeld checks the first n entrants: those holding an order
// in held are WON with it, the others LOST.
func (r *drawRig) requireWonIffHeld(t *testing.T, n int, held map[string]int64) {
	t.Helper()
	for i := range n {
		e, err := r.st.LobbyEntryOf(t.Context(), r.sale.ID, fmt.Sprint("e", i))
		require.NoError(t, err)
		if orderID, ok := held[e.UserID]; ok {
			require.Equal(t, seckill.EntryWon, e.Outcome, "rank %d holds order %d", e.Rank, orderID)
			require.Equal(t, orderID, e.OrderID)
		} else {
			require.Equal(t, seckill.EntryLost, e.Outcome, "rank %d", e.Rank)
		}
	}
}

// A unit that comes back before the draw queues the next ranks (a winner
// cancelled meanwhile) goes to the first queued rank through the
// waitlist: it is not one of the draw's admissions, so the published
// draw still admits exactly ranks 1..K.
func TestSettleDraw_AUnitBackBeforeTheQueueIsNotADrawAdmission(t *testing.T) {
	const stock = activities.DrawSettleBatch + 1
	r := newDrawRig(t, stock, stock+1)
	ctx := t.Context()
	r.rank(t)
	p := r.settle(t) // ranks 1..DrawSettleBatch admitted
	require.False(t, p.Done)
	first, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, 1)
	require.NoError(t, err)
	orderID, err := r.rs.ClaimOf(ctx, r.sale.ID, first[0].UserID)
	require.NoError(t, err)
	// Rank 1 cancels: nobody waits yet, so the unit goes back to the stock.
	_, err = r.rs.Release(ctx, r.sale.ID, first[0].UserID, orderID, seckill.DefaultItem,
		&seckill.NextOrder{IDs: []int64{99_999}, Terms: seckill.TermsBySKU(*r.sale)(seckill.DefaultSKU)})
	require.NoError(t, err)
	r.settleAll(t)

	r.requireRanksAdmitted(t, stock)
	queued, err := r.st.EntriesFrom(ctx, r.sale.ID, stock+1, 1)
	require.NoError(t, err)
	require.Equal(t, seckill.EntryWaiting, queued[0].Outcome, "served by the waitlist")
	require.NotZero(t, queued[0].OrderID, "with the unit that came back")
}

// A draw that reaches ranks after the sale has ended admits and queues
// nobody more, without asking Redis (which may have dropped the ended
// sale): the rest lose, and the draw finishes.
func TestSettleDraw_AfterTheSaleEndedTheRestLose(t *testing.T) {
	r := newDrawRig(t, 2, 5)
	ctx := t.Context()
	r.rank(t)
	r.end(t)
	// Redis lost the ended sale (nothing re-warms an ended sale).
	keys, err := r.rdb.Keys(context.Background(), r.pfx+"*").Result()
	require.NoError(t, err)
	require.NoError(t, r.rdb.Del(context.Background(), keys...).Err())
	p := r.settle(t)
	require.True(t, p.Done)
	for i := range 5 {
		e, err := r.st.LobbyEntryOf(ctx, r.sale.ID, fmt.Sprint("e", i))
		require.NoError(t, err)
		require.Equal(t, seckill.EntryLost, e.Outcome)
	}
	_, err = r.env.ExecuteActivity(r.acts.FinishDraw, r.in)
	require.NoError(t, err)
	d, err := r.st.DrawOf(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, 1, d.EndedAtRank, "the end cut the draw before its first rank")
	require.Zero(t, d.Admitted)
}

// An attempt that admitted winners and was cut off before recording them,
// retried after the sale ended, keeps those winners' orders: they are WON
// (the buyers can pay until their pay_by, and the published draw lists
// them), and only the entrants holding nothing lose.
func TestSettleDraw_AfterTheSaleEndedACutOffAttemptsWinnersKeepTheirOrders(t *testing.T) {
	r := newDrawRig(t, 2, 5)
	ctx := t.Context()
	r.rank(t)
	// The cut-off attempt: ranks 1 and 2 admitted, nothing recorded.
	batch, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, 2)
	require.NoError(t, err)
	terms := seckill.TermsBySKU(*r.sale)(seckill.DefaultSKU)
	held := map[string]int64{}
	for i, e := range batch {
		res, err := r.rs.ForDraw().Claim(ctx, r.sale.ID, e.UserID, int64(1000+i), "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
		held[e.UserID] = res.OrderID
	}
	r.end(t)

	p := r.settle(t)
	require.True(t, p.Done)
	r.requireWonIffHeld(t, 5, held)
	_, err = r.env.ExecuteActivity(r.acts.FinishDraw, r.in)
	require.NoError(t, err)
	d, err := r.st.DrawOf(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, 2, d.Admitted, "the published draw lists both")
}

// Past the batch a cut-off attempt may have begun, the rest of an ended
// draw loses in large steps without asking Redis.
func TestSettleDraw_AfterTheSaleEndedTheRestLoseInLargeSteps(t *testing.T) {
	const entrants = activities.DrawSettleBatch + 5
	r := newDrawRig(t, 2, entrants)
	r.rank(t)
	r.end(t)
	p := r.settle(t)
	require.True(t, p.Ended)
	require.Equal(t, activities.DrawSettleBatch+1, p.NextRank, "the first call settles one batch")
	// Redis is not asked from here on.
	require.NoError(t, r.rdb.Close())
	v, err := r.env.ExecuteActivity(r.acts.SettleDraw, seckill.DrawStep{DrawInput: r.in, Ended: true})
	require.NoError(t, err)
	require.NoError(t, v.Get(&p))
	require.True(t, p.Done)
}

// A retry of a step whose attempt admitted part of its batch and was cut
// off, run while the sale ends (here: Redis' clock past the end while the
// worker's, and the database's end, are not), keeps every order that
// attempt admitted: those entrants are WON, listed by the published draw,
// and only the entrants holding nothing lose.
func TestSettleDraw_ARetryAcrossTheEndKeepsTheCutOffAttemptsOrders(t *testing.T) {
	r := newDrawRig(t, 3, 5)
	ctx := t.Context()
	r.rank(t)
	batch, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, 2)
	require.NoError(t, err)
	held := map[string]int64{}
	for i, e := range batch {
		res, err := r.rs.ForDraw().Claim(ctx, r.sale.ID, e.UserID, int64(1000+i), "", seckill.TermsBySKU(*r.sale)(seckill.DefaultSKU), seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
		held[e.UserID] = res.OrderID
	}
	// The sale ends on Redis' clock only.
	require.NoError(t, r.rdb.HSet(ctx, r.rs.SaleKeys(r.sale.ID).Meta, "ends_ms", time.Now().Add(-time.Second).UnixMilli()).Err())

	r.settleAll(t)
	r.requireWonIffHeld(t, 5, held)
	orders, err := r.st.DrawOrders(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Len(t, orders, 2, "the published draw lists both")
	// The published draw says where the end cut it, so that it verifies:
	// K is the two ranks before the cut, not min(stock 3, entries 5).
	d, err := r.st.DrawOf(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, 3, d.EndedAtRank)
	require.Equal(t, 2, d.Admitted)
}

// A winner within the units is admitted even when the units are in flight
// between segments (a mover stopped between take and give, as the draw's
// own borrow does when its worker dies): the draw lands them and admits,
// rather than queue a winner behind their own unit, so the published draw
// admits ranks 1..K.
func TestSettleDraw_AWinnerIsNotQueuedBehindAUnitInFlight(t *testing.T) {
	const units = 4
	r := newSegmentedDrawRig(t, units, units+2, 2)
	ctx := t.Context()
	r.rank(t)
	// Every unit of segment 1 left for segment 0 and never arrived.
	left, err := r.rdb.Get(ctx, r.rs.SegmentKeys(r.sale.ID, 1).Stock).Int64()
	require.NoError(t, err)
	require.Positive(t, left)
	testenv.TakenNotGiven(t, r.rdb, r.rs, r.sale.ID, 1, 0, "b-cut-off", left, time.Now())

	r.settleAll(t)

	r.requireRanksAdmitted(t, units)
}

// A SettleDraw attempt admitted the winners of its batch and queued the
// ranks past the units, then was cut off before recording them
// (SettleEntries). Before the retry reaches it, rank 1 cancels: the unit
// goes to the first waiter, and rank 1's home segment has buyers waiting.
// The retry settles the batch (it failed every attempt, the draw held in
// DRAWING until the sale ended, when a tentative SOLD_OUT was always taken
// for units in flight).
func TestSettleDraw_ARetryAfterAWinnerCancelledIntoTheLineSettles(t *testing.T) {
	const units, entrants = 2, 12
	r := newSegmentedDrawRig(t, units, entrants, 2)
	ctx := t.Context()
	r.rank(t)
	batch, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, entrants)
	require.NoError(t, err)
	terms := seckill.TermsBySKU(*r.sale)(seckill.DefaultSKU)
	drawRS := r.rs.ForDraw()
	// The cut-off attempt: winners admitted, the rest queued, nothing recorded.
	orders := map[string]int64{}
	for i, e := range batch {
		if e.Rank <= units {
			res, err := drawRS.Claim(ctx, r.sale.ID, e.UserID, int64(1000+i), "", terms, seckill.DefaultItem)
			require.NoError(t, err)
			require.Equal(t, seckill.Admitted, res.Outcome)
			orders[e.UserID] = res.OrderID
			// its saga writes it
			_, _, err = r.st.StartOrder(ctx, store.NewOrder{ID: res.OrderID, SaleID: r.sale.ID, UserID: e.UserID, CreatedAt: time.Now(), Drawn: true})
			require.NoError(t, err)
			continue
		}
		res, err := drawRS.Join(ctx, r.sale.ID, e.UserID, seckill.DefaultItem, 1<<30, int64(2000+i), terms)
		require.NoError(t, err)
		require.Equal(t, seckill.Waiting, res.Outcome, "rank %d", e.Rank)
	}
	first := batch[0]
	home := -1
	for q := range 2 {
		ok, err := r.rdb.HExists(ctx, r.rs.SegmentKeys(r.sale.ID, q).Claims, first.UserID).Result()
		require.NoError(t, err)
		if ok {
			home = q
		}
	}
	require.GreaterOrEqual(t, home, 0)
	// Rank 1 cancels (its saga closes the order, then releases): the unit
	// goes to the first waiter.
	_, err = r.st.CloseUnpaid(ctx, orders[first.UserID], seckill.CloseCancelled, "", "", time.Now())
	require.NoError(t, err)
	_, err = r.rs.Release(ctx, r.sale.ID, first.UserID, orders[first.UserID], seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{9_999}, Terms: terms})
	require.NoError(t, err)
	waiting, err := r.rdb.ZCard(ctx, r.rs.SegmentKeys(r.sale.ID, home).Wait).Result()
	require.NoError(t, err)
	require.Positive(t, waiting, "precondition: rank 1's home segment has buyers waiting")

	// The retry (Temporal retries SettleDraw without end).
	var errs []error
	for range 3 {
		if _, err := r.env.ExecuteActivity(r.acts.SettleDraw, seckill.DrawStep{DrawInput: r.in}); err != nil {
			errs = append(errs, err)
			continue
		}
		break
	}
	require.Less(t, len(errs), 3, "every retry fails the same way (the draw stays DRAWING until the sale ends): %v", errs)
	e, err := r.st.LobbyEntryOf(ctx, r.sale.ID, first.UserID)
	require.NoError(t, err)
	require.Equal(t, seckill.EntryWon, e.Outcome, "rank 1 was admitted: it keeps its (closed) order")
	require.Equal(t, orders[first.UserID], e.OrderID)
}

// Same cut-off, with fewer entrants than units (nobody waits): rank 1
// cancels, the unit goes back to the stock, and the retry must not admit
// rank 1 again with a new order (GET /draw/orders would list rank 1
// twice, K+1 orders, and draw verify fail): rank 1 keeps its closed order.
func TestSettleDraw_ARetryDoesNotAdmitACancelledWinnerAgain(t *testing.T) {
	const stock, entrants = 3, 2
	r := newDrawRig(t, stock, entrants)
	ctx := t.Context()
	r.rank(t)
	batch, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, entrants)
	require.NoError(t, err)
	terms := seckill.TermsBySKU(*r.sale)(seckill.DefaultSKU)
	now := time.Now().UTC()
	for i, e := range batch {
		res, err := r.rs.ForDraw().Claim(ctx, r.sale.ID, e.UserID, int64(1000+i), "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
		// its saga writes it (drawn, from the outbox entry's d field)
		_, _, err = r.st.StartOrder(ctx, store.NewOrder{ID: res.OrderID, SaleID: r.sale.ID, UserID: e.UserID, CreatedAt: now, Drawn: true})
		require.NoError(t, err)
	}
	first := batch[0]
	// Rank 1 cancels: its saga closes the order, then releases the claim.
	_, err = r.st.CloseUnpaid(ctx, 1000, seckill.CloseCancelled, "", "", time.Now())
	require.NoError(t, err)
	_, err = r.rs.Release(ctx, r.sale.ID, first.UserID, 1000, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{9_999}, Terms: terms})
	require.NoError(t, err)

	p := r.settle(t)
	require.True(t, p.Done)
	again, err := r.rs.ClaimOf(ctx, r.sale.ID, first.UserID)
	require.NoError(t, err)
	if again != 0 {
		_, _, err = r.st.StartOrder(ctx, store.NewOrder{ID: again, SaleID: r.sale.ID, UserID: first.UserID, CreatedAt: now, Drawn: true})
		require.NoError(t, err)
	}
	_, err = r.env.ExecuteActivity(r.acts.FinishDraw, r.in)
	require.NoError(t, err)
	orders, err := r.st.DrawOrders(ctx, r.sale.ID)
	require.NoError(t, err)
	t.Logf("rank 1 re-admitted as order %d; /draw/orders: %+v", again, orders)
	require.Zero(t, again, "no entrant is admitted twice (docs/API.md, the draw)")
	require.Len(t, orders, entrants, "K orders, one per rank")
}

// A sale's segments may disagree on the time (a Cluster's nodes, a primary
// failed over to a host whose clock is behind): the first rank refused for
// the sale's end ends the draw for every later rank, so the ranks admitted
// are 1..R-1 and the published cut R holds, whatever another segment's
// clock says.
func TestSettleDraw_TheFirstRankRefusedForTheEndEndsTheDrawWhateverAnotherSegmentsClockSays(t *testing.T) {
	const units = 20
	r := newSegmentedDrawRig(t, units, units, 2)
	ctx := t.Context()
	r.rank(t)
	// Segment 1's Redis says the sale has ended; segment 0's does not.
	require.NoError(t, r.rdb.HSet(ctx, r.rs.SegmentKeys(r.sale.ID, 1).Meta, "ends_ms", time.Now().Add(-time.Second).UnixMilli()).Err())
	r.settleAll(t)
	d, err := r.st.DrawOf(ctx, r.sale.ID)
	require.NoError(t, err)
	require.NotZero(t, d.EndedAtRank, "segment 1's end cut the draw")
	require.Equal(t, d.EndedAtRank-1, d.Admitted)
	orders, err := r.st.DrawOrders(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Len(t, orders, d.Admitted, "no rank past the cut admitted")
	for i, o := range orders {
		require.Equal(t, i+1, o.Rank, "each rank before the cut has its order")
	}
}

// A winner an attempt admitted, who cancels while the retried step is
// settling the same batch (the saga, started by the cancel, closed the
// order and gave the unit back before its row was seen), keeps that one
// order for their rank: the retry's claim answers the admission again
// rather than admit them a second time.
func TestSettleDraw_AWinnerWhoCancelledDuringTheRetryIsNotAdmittedTwice(t *testing.T) {
	r := newDrawRig(t, 2, 4)
	ctx := t.Context()
	r.rank(t)
	first, err := r.st.EntriesFrom(ctx, r.sale.ID, 1, 1)
	require.NoError(t, err)
	winner := first[0].UserID
	// The cut-off attempt admitted rank 1 as order 1000...
	res, err := r.rs.ForDraw().Claim(ctx, r.sale.ID, winner, 1000, activities.DrawClaimKey, seckill.TermsBySKU(*r.sale)(seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	// ...which its buyer cancelled: the claim and the unit are back in
	// Redis, and no row is written yet.
	_, err = r.rs.Release(ctx, r.sale.ID, winner, 1000, seckill.DefaultItem, nil)
	require.NoError(t, err)

	r.settleAll(t)
	e, err := r.st.LobbyEntryOf(ctx, r.sale.ID, winner)
	require.NoError(t, err)
	require.Equal(t, seckill.EntryWon, e.Outcome)
	require.Equal(t, int64(1000), e.OrderID, "rank 1 keeps the order it was admitted with")
	claimed, err := r.rs.ClaimOf(ctx, r.sale.ID, winner)
	require.NoError(t, err)
	require.Zero(t, claimed, "no second order for the winner who cancelled")
}

// A lobby larger than the ranks RankDraw writes (through the last entry
// that fits, at least one settle batch): the draw writes the rest when it
// reaches them, a window the waitlist may take, then, past its bound,
// every rank left as LOST in one write. Each entry ends with draw.Rank's
// rank (what verify recomputes) and the outcome of its place.
func TestSettleDraw_TheRanksPastTheFirstAreWrittenWhenReachedEachOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		waitlist int
	}{
		{"the waitlist fills within the first ranks", 100},
		{"the waitlist takes ranks past the first", activities.DrawSettleBatch + 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const stock, entrants = 5, 2*activities.DrawSettleBatch + 500
			r := newDrawRig(t, stock, entrants)
			r.in.WaitlistMax = tc.waitlist
			ctx := t.Context()
			_, err := r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
			require.NoError(t, err)
			r.rank(t)
			d, err := r.st.DrawOf(ctx, r.sale.ID)
			require.NoError(t, err)
			require.Equal(t, activities.DrawSettleBatch, d.RankedThrough, "the first batch's ranks, not the lobby's")
			r.settleAll(t)

			d, err = r.st.DrawOf(ctx, r.sale.ID)
			require.NoError(t, err)
			require.Equal(t, entrants, d.RankedThrough)
			require.Equal(t, stock, d.Admitted)
			lobby, err := r.st.ClosedLobby(ctx, r.sale.ID)
			require.NoError(t, err)
			raw := make([][]byte, len(lobby))
			for i, e := range lobby {
				raw[i] = e.Entry
			}
			want := draw.Rank(d.Seed, raw)
			got := r.byRank(t)
			require.Len(t, got, entrants, "every entry ranked")
			outcomes := map[string]int{}
			for i, e := range got {
				require.Equal(t, want[i].Entry, e.Entry, "rank %d is draw.Rank's", i+1)
				require.Equal(t, i+1, e.Rank)
				outcomes[e.Outcome]++
				switch {
				case i < stock:
					require.Equal(t, seckill.EntryWon, e.Outcome, "rank %d", e.Rank)
				case i < stock+tc.waitlist:
					require.Equal(t, seckill.EntryWaiting, e.Outcome, "rank %d", e.Rank)
				default:
					require.Equal(t, seckill.EntryLost, e.Outcome, "rank %d", e.Rank)
				}
			}
			require.Equal(t, map[string]int{seckill.EntryWon: stock, seckill.EntryWaiting: tc.waitlist, seckill.EntryLost: entrants - stock - tc.waitlist}, outcomes)
		})
	}
}

// With a settle slice one call settles batch after batch, each recorded,
// carrying what a batch found (here the waitlist full) to the next.
func TestSettleDraw_ASliceSettlesBatchAfterBatchInOneCall(t *testing.T) {
	const stock, entrants = 3, 2*activities.DrawSettleBatch + 200
	r := newDrawRigOf(t, stock, entrants, 1, nil, activities.WithSettleSlice(time.Minute))
	r.in.WaitlistMax = activities.DrawSettleBatch + 100
	_, err := r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
	require.NoError(t, err)
	r.rank(t)

	p := r.settle(t)

	require.True(t, p.Done, "one call settled the whole draw")
	require.True(t, p.WaitlistFull)
	byRank := r.byRank(t)
	require.Len(t, byRank, entrants)
	for i, e := range byRank {
		switch {
		case i < stock:
			require.Equal(t, seckill.EntryWon, e.Outcome, "rank %d", e.Rank)
		case i < stock+r.in.WaitlistMax:
			require.Equal(t, seckill.EntryWaiting, e.Outcome, "rank %d", e.Rank)
		default:
			require.Equal(t, seckill.EntryLost, e.Outcome, "rank %d", e.Rank)
		}
	}
}

// A draw started before ranks were written when reached (on the sagas'
// queue) may have its later steps run by a worker of the release before,
// which settles only ranks that are written: its RankDraw writes every
// rank (hostile review).
func TestRankDraw_ADrawStartedBeforeRanksWhenReachedHasEveryRankWritten(t *testing.T) {
	const entrants = activities.DrawSettleBatch + 50
	r := newDrawRig(t, 2, entrants)
	r.in.RanksWhenReached = false
	_, err := r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
	require.NoError(t, err)
	r.rank(t)

	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, entrants, d.RankedThrough)
	require.Len(t, r.byRank(t), entrants, "every entry ranked")
}
