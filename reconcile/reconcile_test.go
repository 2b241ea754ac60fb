package reconcile_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/reconcile"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/store"
)

// sagas is Temporal as reconciliation sees it: no saga anywhere, and
// Describe failing for the orders in broken.
type sagas struct {
	mu      sync.Mutex
	broken  map[int64]bool
	started []int64
	drawn   map[int64]bool // order id -> SagaInput.Drawn of its start
}

func (s *sagas) Describe(_ context.Context, orderID int64) (saga.Run, error) {
	if s.broken[orderID] {
		return saga.Run{}, errors.New("temporal: deadline exceeded")
	}
	return saga.Run{}, nil // not found
}

func (s *sagas) Start(_ context.Context, in seckill.SagaInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, in.OrderID)
	if s.drawn == nil {
		s.drawn = map[int64]bool{}
	}
	s.drawn[in.OrderID] = in.Drawn
	return nil
}

// One order whose saga cannot be described stops nothing: it is reported
// as check_failed, and the order after it still gets its saga back.
func TestSale_OneBadOrderDoesNotStopTheOthers(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 3)
	var ids []int64
	for i, user := range []string{"ann", "bob"} {
		id := int64(1000 + i)
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: user, CreatedAt: now.Add(-time.Minute)})
		require.NoError(t, err)
		_, err = rs.RestoreClaim(ctx, sale.ID, user, id, seckill.DefaultItem)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	temporal := &sagas{broken: map[int64]bool{ids[0]: true}}
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: temporal, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 })}

	drifts, err := r.Sale(ctx, sale.ID)
	require.NoError(t, err)
	kinds := map[int64]string{}
	for _, d := range drifts {
		kinds[d.OrderID] = d.Kind
	}
	require.Equal(t, seckill.DriftCheckFailed, kinds[ids[0]], "%+v", drifts)
	require.Equal(t, seckill.DriftOrderWithoutSaga, kinds[ids[1]], "%+v", drifts)
	require.Equal(t, []int64{ids[1]}, temporal.started)
}

// A claim the draw admitted whose saga never started gets it started as
// the draw's, as its outbox entry would have: the order row then says the
// draw admitted it (docs/DESIGN.md, invariant 9). An ordinary claim's
// does not.
func TestSale_StartsTheMissingSagaOfADrawnClaimAsTheDraws(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 5)
	won, bought := idgen.At(time.Now().Add(-time.Minute)), idgen.At(time.Now().Add(-time.Minute))+1
	res, err := rs.ForDraw().Claim(ctx, sale.ID, "winner", won, "", seckill.TermsBySKU(*sale)(seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	res, err = rs.Claim(ctx, sale.ID, "buyer", bought, "", seckill.TermsBySKU(*sale)(seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	temporal := &sagas{}
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: temporal, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 })}

	drifts, err := r.Sale(ctx, sale.ID)

	require.NoError(t, err)
	for _, d := range drifts {
		require.Equal(t, seckill.DriftClaimWithoutSaga, d.Kind, "%+v", d)
		require.True(t, d.Fixed, "%+v", d)
	}
	require.Equal(t, map[int64]bool{won: true, bought: false}, temporal.drawn)
}

// A claim whose admission cannot be read is left for the next pass, not
// given a saga started from a guess (no pay_by, not the draw's).
func TestSale_AClaimWhoseAdmissionCannotBeReadWaitsForTheNextPass(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 5)
	won := idgen.At(time.Now().Add(-time.Minute))
	res, err := rs.ForDraw().Claim(ctx, sale.ID, "winner", won, "", seckill.TermsBySKU(*sale)(seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	require.NoError(t, rdb.HSet(ctx, rs.SaleKeys(sale.ID).Admitted, strconv.FormatInt(won, 10), "garbled").Err())
	temporal := &sagas{}
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: temporal, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 })}

	drifts, err := r.Sale(ctx, sale.ID)

	require.NoError(t, err)
	require.Len(t, drifts, 1)
	require.Equal(t, seckill.DriftCheckFailed, drifts[0].Kind, "%+v", drifts[0])
	require.Empty(t, temporal.started, "no saga started without its admission")
}

// Units re-loaded into the stock while buyers wait (Redis lost the counter
// but kept the waitlist) are handed to the waitlist, first come first.
func TestSale_HandsStockLeftWhileBuyersWait(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 3)
	testenv.Warm(t, rs, sale, 0)
	for _, u := range []string{"ann", "bob"} {
		j, err := rs.Join(ctx, sale.ID, u, seckill.DefaultItem, 10, 0, seckill.TermsBySKU(*sale)(seckill.DefaultSKU))
		require.NoError(t, err)
		require.Equal(t, seckill.Waiting, j.Outcome)
	}
	// The counter comes back with the database's 3 units.
	require.NoError(t, rdb.Del(ctx, rs.SaleKeys(sale.ID).Stock).Err())
	_, err := rs.Rewarm(ctx, seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 3}}, StartsAt: sale.StartsAt, EndsAt: sale.EndsAt}, nil)
	require.NoError(t, err)
	var next atomic.Int64
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 + next.Add(1) })}

	drifts, err := r.Sale(ctx, sale.ID)

	require.NoError(t, err)
	require.Len(t, drifts, 1)
	require.Equal(t, seckill.DriftStockWhileWaiting, drifts[0].Kind)
	require.True(t, drifts[0].Fixed)
	counts, err := rs.Counts(ctx, []int64{sale.ID})
	require.NoError(t, err)
	require.Equal(t, seckill.SaleCounts{Remaining: 1, Variants: map[string]int64{seckill.DefaultSKU: 1}, Waiting: 0, FromWaitlist: 2}, counts[sale.ID])
	for _, u := range []string{"ann", "bob"} {
		id, err := rs.ClaimOf(ctx, sale.ID, u)
		require.NoError(t, err)
		require.NotZero(t, id, "%s got a unit", u)
	}
}

type idFunc func() int64

func (f idFunc) Next() (int64, error) { return f(), nil }

// An order read active at the start of a pass whose saga closes it and
// releases its claim before the pass writes the claim back (the claim
// Redis lost) is not given a claim again: restore.lua re-reads what the
// release left, so a later pass cannot release the unit a second time.
func TestSale_NeverRestoresTheClaimOfAnOrderReleasedDuringThePass(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 5)
	// ann's order holds a database unit; Redis lost her claim and the
	// unit's decrement with it (a failover): Redis has 5, the database 4.
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 1000, SaleID: sale.ID, UserID: "ann", CreatedAt: now.Add(-time.Minute)})
	require.NoError(t, err)
	// The pass reads ann's order active; her saga then closes it and
	// releases (finding no claim, it gives nothing back to Redis).
	orders, err := st.ActiveOrders(ctx, sale.ID)
	require.NoError(t, err)
	require.Len(t, orders, 1)
	_, err = st.CloseUnpaid(ctx, 1000, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	_, err = rs.Release(ctx, sale.ID, "ann", 1000, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{7000}, Terms: seckill.TermsBySKU(*sale)(seckill.DefaultSKU)})
	require.NoError(t, err)
	// The pass writes back the claim it found missing.
	restored, err := rs.RestoreClaim(ctx, sale.ID, "ann", 1000, seckill.DefaultItem)
	require.NoError(t, err)
	require.False(t, restored, "the order was released: its claim is not written back")

	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 })}
	for range 2 {
		_, err := r.Sale(ctx, sale.ID)
		require.NoError(t, err)
	}
	n, ok, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.True(t, ok)
	s, err := st.Sale(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, s.Stock.Available, n, "Redis holds the database's units, the released one once")
	require.Equal(t, int64(5), n)
}

// A move between segments given but not forgotten (its mover stopped between
// give.lua and forget.lua) is counted once: one pass with any grace
// leaves Redis with the database's 10 units, none stranded.
func TestSale_AMoveGivenButNotForgottenStrandsNothing(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.SegmentedSale(t, st, rs, 10, 2)
	// take.lua and give.lua ran, forget.lua did not: 3 units left segment 1
	// and reached segment 0, and segment 1 still holds the move's record.
	testenv.GivenNotForgotten(t, rdb, rs, sale.ID, 1, 0, "b-stopped", 3, time.Now())

	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Nanosecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 })}
	_, err := r.Sale(ctx, sale.ID)
	require.NoError(t, err)

	n, ok, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(10), n)
	moves, err := rs.Moves(ctx, sale.ID)
	require.NoError(t, err)
	require.Empty(t, moves, "the move was forgotten")
}

// payments is Temporal as delivery sees it: no saga runs, and the
// refunds started are recorded.
type payments struct {
	mu       sync.Mutex
	refunded []string
}

func (*payments) Pay(context.Context, int64, seckill.PaymentEvent) error { return saga.ErrNoSaga }

func (p *payments) StartRefund(_ context.Context, in seckill.RefundInput) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refunded = append(p.refunded, in.EventID)
	return nil
}

// recordPaid records a successful payment of 990 usd for orderID as the
// webhook does when its delivery failed: RECEIVED, never delivered.
func recordPaid(t *testing.T, st *store.Store, eventID string, orderID int64) {
	t.Helper()
	_, _, err := st.RecordPaymentEvent(t.Context(), seckill.PaymentRecord{ID: eventID, Type: string(seckill.PaymentSucceeded),
		OrderID: orderID, PaymentIntentID: "pi_" + strings.TrimPrefix(eventID, "evt_"), AmountCents: 990, Currency: "usd",
		Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived})
	require.NoError(t, err)
}

// paymentReconciler reconciles with the real delivery and temporal as
// its sagas: none running, refunds counted.
func paymentReconciler(st *store.Store, rs *redisstore.Store, temporal *payments) *reconcile.Reconciler {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Nanosecond, Log: log,
		IDs: idFunc(func() int64 { return 9000 }), Delivery: &delivery.Deliverer{Store: st, Redis: rs, Sagas: temporal, Log: log}}
}

// A payment recorded for an order that was never written and can no
// longer be (no admission in Redis, admitted long ago) is found by the
// pass, which no sale's orders lead to, and refunded.
func TestAll_RefundsAPaymentForAnOrderNeverWritten(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	lost := idgen.At(time.Now().Add(-20 * time.Minute)) // admitted past delivery.PendingWindow
	recordPaid(t, st, "evt_lost", lost)
	temporal := &payments{}
	r := paymentReconciler(st, rs, temporal)

	drifts, err := r.All(ctx)
	require.NoError(t, err)
	require.Len(t, drifts, 1, "%+v", drifts)
	require.Equal(t, seckill.DriftPaymentUndelivered, drifts[0].Kind)
	require.Equal(t, []string{"evt_lost"}, temporal.refunded)
	e, err := st.PaymentEvent(ctx, "evt_lost")
	require.NoError(t, err)
	require.Equal(t, seckill.OutcomeUnknownOrder, e.Outcome)

	drifts, err = r.All(ctx)
	require.NoError(t, err)
	require.Empty(t, drifts, "delivered once")
}

// Hostile review (issue 35) finding 1: a payment recorded for a written
// order of a sale that ended more than SettleWindow ago (a provider's
// late retry, an operator's resend, a Temporal outage that outlasted the
// window), its delivery failed, is answered 200 and never sent again: no
// sale's pass reaches it, so the pass of events no sale reaches does, and
// the late payment is refunded.
func TestAll_RefundsALatePaymentOfASaleNoLongerSettling(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 5)
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(ctx, 1001, seckill.ClosePaymentTimeout, "", "", now)
	require.NoError(t, err)
	// An order of the sale left undecided with no saga (hostile review,
	// second round): its payment, recorded first, cannot be delivered, so
	// it is not among the stray events, whose head it would hold forever.
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1002, SaleID: sale.ID, UserID: "bob", CreatedAt: now})
	require.NoError(t, err)
	recordPaid(t, st, "evt_undecided", 1002)
	recordPaid(t, st, "evt_late", 1001)
	require.NoError(t, st.Gorm().Exec(`UPDATE sales SET starts_at = now() - interval '30 hours', ends_at = ? WHERE id = ?`,
		now.Add(-reconcile.SettleWindow-time.Hour), sale.ID).Error)
	stray, err := st.UndeliveredStrayPaymentEvents(ctx, now.Add(-reconcile.SettleWindow), time.Now(), 1)
	require.NoError(t, err)
	require.Len(t, stray, 1)
	require.Equal(t, "evt_late", stray[0].ID, "the undecided order's older event does not hold the head")

	temporal := &payments{}
	r := paymentReconciler(st, rs, temporal)
	drifts, err := r.All(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"evt_late"}, temporal.refunded, "the late payment is refunded: %+v", drifts)
	e, err := st.PaymentEvent(ctx, "evt_late")
	require.NoError(t, err)
	require.NotNil(t, e.DeliveredAt)

	drifts, err = r.All(ctx)
	require.NoError(t, err)
	require.Empty(t, drifts, "delivered once")
	require.Len(t, temporal.refunded, 1)
}

// Buyers waiting for a sold-out size while another size is on sale is a
// drop's normal state, not a drift: reconciliation reports nothing and
// hands nothing (units of one variant never go to another's line).
func TestSale_AVariantOnSaleWhileBuyersWaitForAnotherIsNoDrift(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	now := time.Now().UTC()
	sale, err := st.CreateSale(ctx, seckill.NewSale{Name: "sizes", Currency: "usd", LimitPerBuyer: 1,
		Variants: []seckill.NewVariant{{SKU: "a", Name: "A", PriceCents: 100, Stock: 1}, {SKU: "b", Name: "B", PriceCents: 100, Stock: 5}},
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Hour}, nil)
	require.NoError(t, err)
	_, err = rs.Warm(ctx, seckill.WarmSpecOf(sale, map[string]int64{"a": 1, "b": 5}))
	require.NoError(t, err)
	res, err := rs.Claim(ctx, sale.ID, "ann", 1, "", seckill.TermsBySKU(*sale)("a"), seckill.Item{SKU: "a", Quantity: 1})
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1, SaleID: sale.ID, UserID: "ann", CreatedAt: now, Item: seckill.Item{SKU: "a", Quantity: 1}})
	require.NoError(t, err)
	j, err := rs.Join(ctx, sale.ID, "bob", seckill.Item{SKU: "a", Quantity: 1}, 10, 0, seckill.TermsBySKU(*sale)("a"))
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	var next atomic.Int64
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 + next.Add(1) })}

	drifts, err := r.Sale(ctx, sale.ID)

	require.NoError(t, err)
	for _, d := range drifts {
		require.NotEqual(t, seckill.DriftStockWhileWaiting, d.Kind, "%+v", d)
	}
	ws, err := rs.WaitStateOf(ctx, sale.ID, "bob")
	require.NoError(t, err)
	require.True(t, ws.Waiting, "bob still waits for a")
}

// restockDrifts are the restock_unapplied drifts of drifts.
func restockDrifts(drifts []seckill.Drift) []seckill.Drift {
	var out []seckill.Drift
	for _, d := range drifts {
		if d.Kind == seckill.DriftRestockUnapplied {
			out = append(out, d)
		}
	}
	return out
}

// A restock whose Redis half never ran (the request stopped after the
// database half and nobody retried) is placed by the pass after its
// grace, as the retry would: the waiting buyer first, the rest to the
// stock, once. A younger one is left to its request.
func TestSale_PlacesARestockWhoseRedisHalfNeverRan(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 0)
	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	j, err := rs.Join(ctx, sale.ID, "bob", seckill.DefaultItem, 10, 0, terms)
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	old, _, err := st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "crashed", time.Now())
	require.NoError(t, err)
	require.NoError(t, st.Gorm().Exec(`UPDATE sale_restocks SET created_at = now() - interval '2 minutes' WHERE id = ?`, old.ID).Error)
	young, _, err := st.Restock(ctx, sale.ID, seckill.DefaultSKU, 5, "in flight", time.Now())
	require.NoError(t, err)
	next := idgen.At(time.Now())
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Minute,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return atomic.AddInt64(&next, 1) })}

	drifts, err := r.Sale(ctx, sale.ID)

	require.NoError(t, err)
	got := restockDrifts(drifts)
	require.Len(t, got, 1, "%+v", drifts)
	require.True(t, got[0].Fixed, "%+v", got[0])
	require.Contains(t, got[0].Detail, "1 to waiting buyers")
	ws, err := rs.WaitStateOf(ctx, sale.ID, "bob")
	require.NoError(t, err)
	require.NotZero(t, ws.OrderID, "the waiting buyer got the first unit")
	remaining, ok, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(2), remaining)
	pending, err := st.UnappliedRestocks(ctx, sale.ID, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, young.ID, pending[0].ID, "the old one is marked applied; the young one is its request's")

	drifts, err = r.Sale(ctx, sale.ID)
	require.NoError(t, err)
	require.Empty(t, restockDrifts(drifts), "placed once")
	remaining, _, err = rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), remaining)
}

// A restock of a sale Redis does not hold waits for the sale's re-warm
// (reported, not fixed); once the sale has ended unloaded there is
// nothing left to place, and it is marked applied.
func TestSale_ARestockOfASaleRedisDoesNotHoldWaitsForItsReWarm(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	rec, _, err := st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "k", time.Now())
	require.NoError(t, err)
	require.NoError(t, st.Gorm().Exec(`UPDATE sale_restocks SET created_at = now() - interval '2 minutes' WHERE id = ?`, rec.ID).Error)
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Minute,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 })}

	drifts, err := r.Sale(ctx, sale.ID)
	require.NoError(t, err)
	got := restockDrifts(drifts)
	require.Len(t, got, 1, "%+v", drifts)
	require.False(t, got[0].Fixed)
	require.Contains(t, got[0].Detail, "waits for the sale's stock to be loaded")
	pending, err := st.UnappliedRestocks(ctx, sale.ID, time.Now())
	require.NoError(t, err)
	require.Len(t, pending, 1)

	require.NoError(t, st.Gorm().Exec(`UPDATE sales SET ends_at = now() - interval '1 second' WHERE id = ?`, sale.ID).Error)
	drifts, err = r.Sale(ctx, sale.ID)
	require.NoError(t, err)
	got = restockDrifts(drifts)
	require.Len(t, got, 1, "%+v", drifts)
	require.True(t, got[0].Fixed)
	pending, err = st.UnappliedRestocks(ctx, sale.ID, time.Now())
	require.NoError(t, err)
	require.Empty(t, pending)
}

// Redis above the database counts the units held for a line's head
// (docs/DESIGN.md invariant 7: stock, moves and held, one count): stock 2
// and 3 held for a buyer waiting for 5, against the database's 3
// available, is 2 too many, and the stock is lowered (the hostile
// review's finding 7: held units were left out, and no drift was seen).
func TestSale_RedisAboveTheDatabaseCountsTheHeldUnits(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 3)
	testenv.Warm(t, rs, sale, 3)
	j, err := rs.Join(ctx, sale.ID, "ann", seckill.Item{SKU: seckill.DefaultSKU, Quantity: 5}, 10, 0, seckill.TermsBySKU(*sale)(seckill.DefaultSKU))
	require.NoError(t, err)
	require.Equal(t, seckill.Waiting, j.Outcome)
	k := rs.SaleKeys(sale.ID).Variant(seckill.DefaultSKU)
	held, err := rdb.Get(ctx, k.Held).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(3), held, "the stock is held for ann")
	require.NoError(t, rdb.Set(ctx, k.Stock, 2, 0).Err()) // 2 units the database lacks
	var next atomic.Int64
	r := &reconcile.Reconciler{Store: st, Redis: rs, Sagas: &sagas{}, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IDs: idFunc(func() int64 { return 9000 + next.Add(1) })}

	drifts, err := r.Sale(ctx, sale.ID)

	require.NoError(t, err)
	var above []seckill.Drift
	for _, d := range drifts {
		if d.Kind == seckill.DriftRedisAboveDB {
			above = append(above, d)
		}
	}
	require.Len(t, above, 1, "drifts %v", drifts)
	require.True(t, above[0].Fixed)
	stock, err := rdb.Get(ctx, k.Stock).Int64()
	require.NoError(t, err)
	require.Zero(t, stock, "lowered to the database's 3, held included")
	held, err = rdb.Get(ctx, k.Held).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(3), held)
}
