package activities_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/store"
)

// ReleaseOrder is compensation that runs at most once however often it is
// retried: the order closes, and its unit goes back to the database and
// to Redis exactly once; the buyer may claim again. No Temporal server:
// the SDK's activity test environment runs it.
func TestReleaseOrder_GivesTheUnitBackOnce(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 2)
	testenv.Warm(t, rs, sale, 2)
	terms := seckill.Terms{PaymentTimeout: time.Hour, UnitPriceCents: 990, Currency: "usd"}
	res, err := rs.Claim(ctx, sale.ID, "ann", 1001, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2)
	env.RegisterActivity(acts)
	in := seckill.ReleaseOrderInput{OrderID: 1001, SaleID: sale.ID, UserID: "ann", Reason: seckill.ClosePaymentTimeout, ClosedAt: now}
	for range 3 { // the first run and two retries
		v, err := env.ExecuteActivity(acts.ReleaseOrder, in)
		require.NoError(t, err)
		var reason seckill.CloseReason
		require.NoError(t, v.Get(&reason))
		require.Equal(t, seckill.ClosePaymentTimeout, reason)
	}

	o, err := st.Order(ctx, 1001)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, o.Status)
	s, err := st.Sale(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), s.Stock.Available, "the database got the unit back once")
	n, ok, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(2), n, "Redis got it back once")
	again, err := rs.Claim(ctx, sale.ID, "ann", 1002, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, again.Outcome, "ann may claim again")
}

// A unit released while a buyer waits goes to that buyer, as a new order
// with the sale's terms, and not back to the stock; retries do not give it
// twice.
func TestReleaseOrder_GivesTheUnitToTheFirstWaitingBuyer(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 1)
	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	res, err := rs.Claim(ctx, sale.ID, "ann", 1001, "", terms, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	for _, u := range []string{"bob", "cy"} {
		j, err := rs.Join(ctx, sale.ID, u, seckill.DefaultItem, 10, 0, terms)
		require.NoError(t, err)
		require.Equal(t, seckill.Waiting, j.Outcome)
	}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2)
	env.RegisterActivity(acts)
	in := seckill.ReleaseOrderInput{OrderID: 1001, SaleID: sale.ID, UserID: "ann", Reason: seckill.ClosePaymentTimeout, ClosedAt: now}
	for range 3 {
		_, err := env.ExecuteActivity(acts.ReleaseOrder, in)
		require.NoError(t, err)
	}

	bob, err := rs.ClaimOf(ctx, sale.ID, "bob")
	require.NoError(t, err)
	require.NotZero(t, bob, "bob, first in line, got the unit")
	adm, ok, err := rs.Admission(ctx, bob, []int64{sale.ID})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "bob", adm.UserID)
	require.WithinDuration(t, time.Now().Add(sale.PaymentTimeout), adm.PayBy, 5*time.Second, "pay_by is fixed at the hand-over")
	state, err := rs.WaitStateOf(ctx, sale.ID, "bob")
	require.NoError(t, err)
	require.Equal(t, seckill.WaitState{OrderID: bob}, state)
	cy, err := rs.WaitStateOf(ctx, sale.ID, "cy")
	require.NoError(t, err)
	require.Equal(t, seckill.WaitState{Waiting: true, Position: 1}, cy, "cy is next")
	n, _, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.Zero(t, n, "the unit went to bob, not to open claims")
	s, err := st.Sale(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), s.Stock.Available, "the database holds it for bob's saga to lock")
}

// ids hands out order ids from 5001 on.
type ids struct{ n atomic.Int64 }

func (i *ids) Next() (int64, error) { return 5000 + i.n.Add(1), nil }

// A payment recorded by pay_by whose signal never reached the saga (a
// webhook recorded it while Temporal did not answer, a crash between recording and
// signalling) is found when the saga closes the order at its deadline: the
// close reads the order's payments in its transaction and refuses, handing
// the saga the payment to confirm. One received after pay_by does not
// stop the close.
func TestReleaseOrder_AReceivedInTimePaymentStopsTheClose(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 2)
	testenv.Warm(t, rs, sale, 2)
	for i, payBy := range []time.Time{now.Add(time.Hour), now.Add(-time.Minute)} {
		id := int64(1001 + i)
		user := []string{"ann", "bob"}[i]
		res, err := rs.Claim(ctx, sale.ID, user, id, "", seckill.TermsBySKU(*sale)(seckill.DefaultSKU), seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
		_, _, err = st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: user, CreatedAt: now, PayBy: payBy})
		require.NoError(t, err)
		_, _, err = st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: "evt_" + user, Type: string(seckill.PaymentSucceeded),
			OrderID: id, PaymentIntentID: "pi_" + user, AmountCents: 990, Currency: "usd", Outcome: seckill.OutcomeReceived, Payload: []byte(`{}`)})
		require.NoError(t, err)
	}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2)
	env.RegisterActivity(acts)

	_, err := env.ExecuteActivity(acts.ReleaseOrder, seckill.ReleaseOrderInput{OrderID: 1001, SaleID: sale.ID, UserID: "ann",
		Reason: seckill.ClosePaymentTimeout, ClosedAt: now})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, seckill.ErrTypePaidInTime, appErr.Type())
	var ev seckill.PaymentEvent
	require.NoError(t, appErr.Details(&ev))
	require.Equal(t, "evt_ann", ev.EventID)
	ann, err := st.Order(ctx, 1001)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusAwaitingPayment, ann.Status, "not closed: ann paid in time")
	claim, err := rs.ClaimOf(ctx, sale.ID, "ann")
	require.NoError(t, err)
	require.Equal(t, int64(1001), claim, "nor released in Redis")

	_, err = env.ExecuteActivity(acts.ReleaseOrder, seckill.ReleaseOrderInput{OrderID: 1002, SaleID: sale.ID, UserID: "bob",
		Reason: seckill.ClosePaymentTimeout, ClosedAt: now})
	require.NoError(t, err, "bob's payment came after his pay_by")
	bob, err := st.Order(ctx, 1002)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, bob.Status)
}

// A buyer's second order, admitted after Redis lost the first one's claim
// and paid at once, is refused by the database: it is written CLOSED as
// CANCELLED, and the payment made for it is handed to the saga, which
// refunds it (it used to be dropped with the order, kept for ever).
func TestStartOrder_ARefusedSecondOrderHandsBackItsPayments(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 2)
	testenv.Warm(t, rs, sale, 2)
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	_, _, err = st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: "evt_second", Type: string(seckill.PaymentSucceeded),
		OrderID: 1002, PaymentIntentID: "pi_second", AmountCents: 990, Currency: "usd", Outcome: seckill.OutcomeReceived, Payload: []byte(`{}`)})
	require.NoError(t, err)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2)
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.StartOrder, seckill.StartOrderInput{OrderID: 1002, SaleID: sale.ID, UserID: "ann",
		AdmittedAt: now, PayBy: now.Add(time.Hour)})
	require.NoError(t, err)
	var res seckill.StartOrderResult
	require.NoError(t, v.Get(&res))

	require.Equal(t, seckill.StatusClosed, res.Status)
	require.Equal(t, seckill.CloseCancelled, res.CloseReason)
	require.Len(t, res.Payments, 1, "the payment is the saga's to refund")
	require.Equal(t, "evt_second", res.Payments[0].EventID)
	o, err := st.Order(ctx, 1002)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, o.Status, "the refused order has a row")
}
