package delivery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/store"
)

// sagas has no running saga at all, and records the refunds it starts.
type sagas struct {
	mu       sync.Mutex
	refunded []seckill.RefundInput
}

func (*sagas) Pay(context.Context, int64, seckill.PaymentEvent) error { return saga.ErrNoSaga }

func (s *sagas) StartRefund(_ context.Context, in seckill.RefundInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refunded = append(s.refunded, in)
	return nil
}

// What a payment for an order without a running saga becomes: LATE and
// refunded for a CLOSED order, IGNORED when it failed, not yet (kept for
// later) for an order still unsettled, UNKNOWN_ORDER for an order that
// never was.
func TestDeliver_WhenTheSagaIsGone(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 5)
	for i, user := range []string{"ann", "bob"} {
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: int64(1001 + i), SaleID: sale.ID, UserID: user, CreatedAt: now})
		require.NoError(t, err)
	}
	_, err := st.CloseUnpaid(ctx, 1001, seckill.ClosePaymentTimeout, "", "", now)
	require.NoError(t, err)
	temporal := &sagas{}
	d := &delivery.Deliverer{Store: st, Redis: rs, Sagas: temporal, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	deliver := func(id string, typ seckill.PaymentEventType, orderID int64) (seckill.PaymentOutcome, error) {
		t.Helper()
		e, _, err := st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: id, Type: string(typ), OrderID: orderID,
			PaymentIntentID: "pi_" + id, AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived}) // as the webhook records it
		require.NoError(t, err)
		return d.Deliver(ctx, e.Signal(), orderID)
	}

	out, err := deliver("evt_late", seckill.PaymentSucceeded, 1001)
	require.NoError(t, err)
	require.Equal(t, seckill.OutcomeLate, out)
	require.Len(t, temporal.refunded, 1, "the late payment is refunded")
	require.Equal(t, "evt_late", temporal.refunded[0].EventID)

	out, err = deliver("evt_declined", seckill.PaymentFailed, 1001)
	require.NoError(t, err)
	require.Equal(t, seckill.OutcomeIgnored, out)
	require.Len(t, temporal.refunded, 1, "nothing to refund for a failed payment")

	_, err = deliver("evt_bob", seckill.PaymentSucceeded, 1002)
	require.ErrorIs(t, err, seckill.ErrPaymentNotYet, "bob's order is unsettled: its saga is restarted, the payment kept")

	out, err = deliver("evt_nobody", seckill.PaymentSucceeded, 0)
	require.NoError(t, err)
	require.Equal(t, seckill.OutcomeUnknownOrder, out)
	require.Len(t, temporal.refunded, 1, "an event naming no order is not seckill's payment: kept for operators")
}

// A payment for an order that was never written and whose admission is
// gone (lost in a failover after the buyer paid; admitted long ago) can
// never be honoured: it is refunded, not kept for ever as UNKNOWN_ORDER.
// A second report of the payment that paid an order is APPLIED, not a
// duplicate to refund.
func TestDeliver_RefundsAPaymentForAnOrderThatCanNeverBe(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 5)
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	_, err = st.ConfirmPayment(ctx, 1001, "", "pi_ann", now)
	require.NoError(t, err)
	temporal := &sagas{}
	d := &delivery.Deliverer{Store: st, Redis: rs, Sagas: temporal, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	deliver := func(id, intent string, orderID int64) seckill.PaymentOutcome {
		t.Helper()
		e, _, err := st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: id, Type: string(seckill.PaymentSucceeded), OrderID: orderID,
			PaymentIntentID: intent, AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived})
		require.NoError(t, err)
		out, err := d.Deliver(ctx, e.Signal(), orderID)
		require.NoError(t, err)
		return out
	}

	// The lost order's id was minted 20 minutes ago, past
	// delivery.PendingWindow, and Redis holds no admission of it.
	lost := idgen.At(now.Add(-20 * time.Minute))
	require.Equal(t, seckill.OutcomeUnknownOrder, deliver("evt_lost", "pi_lost", lost))
	require.Len(t, temporal.refunded, 1)
	require.Equal(t, seckill.RefundInput{EventID: "evt_lost", OrderID: lost, PaymentIntentID: "pi_lost", AmountCents: 990,
		Currency: "usd", Reason: seckill.OutcomeUnknownOrder}, temporal.refunded[0])

	// 1002 is no id seckill minted lately (another checkout's order number
	// on the same Stripe account): kept for operators, not refunded.
	require.Equal(t, seckill.OutcomeUnknownOrder, deliver("evt_foreign", "pi_foreign", 1002))
	require.Len(t, temporal.refunded, 1)

	require.Equal(t, seckill.OutcomeApplied, deliver("evt_ann_again", "pi_ann", 1001), "the payment that paid ann's order")
	require.Equal(t, seckill.OutcomeDuplicate, deliver("evt_ann_twice", "pi_ann_2", 1001), "a second payment")
	require.Len(t, temporal.refunded, 2)
	require.Equal(t, "evt_ann_twice", temporal.refunded[1].EventID)
}

// failingSagas is Temporal unreachable: every signal and start fails.
type failingSagas struct{}

func (failingSagas) Pay(context.Context, int64, seckill.PaymentEvent) error {
	return errors.New("connection refused")
}

func (failingSagas) StartRefund(context.Context, seckill.RefundInput) error {
	return errors.New("connection refused")
}

// A signal or a refund's start that Temporal refuses is seckill.ErrTemporal
// (the webhook counts those), with its own message; a database error is
// not.
func TestDeliver_MarksTemporalErrors(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	d := &delivery.Deliverer{Store: st, Redis: rs, Sagas: failingSagas{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ev := seckill.PaymentEvent{EventID: "evt_1", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_1", AmountCents: 990, Currency: "usd"}
	_, err := d.Deliver(ctx, ev, 1001)
	require.ErrorIs(t, err, seckill.ErrTemporal)
	require.Equal(t, "connection refused", err.Error())

	// The saga is gone and the order CLOSED: the refund's start fails.
	sale := testenv.OpenSale(t, st, 5)
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1002, SaleID: sale.ID, UserID: "ann", CreatedAt: time.Now()})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(ctx, 1002, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	_, _, err = st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: "evt_2", Type: string(seckill.PaymentSucceeded), OrderID: 1002,
		PaymentIntentID: "pi_2", AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived})
	require.NoError(t, err)
	gone := &delivery.Deliverer{Store: st, Redis: rs, Sagas: refundFails{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err = gone.Deliver(ctx, seckill.PaymentEvent{EventID: "evt_2", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_2", AmountCents: 990, Currency: "usd"}, 1002)
	require.ErrorIs(t, err, seckill.ErrTemporal)

	broken, err := store.Open(ctx, testenv.DatabaseURL(t), store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	require.NoError(t, broken.Close())
	_, err = (&delivery.Deliverer{Store: broken, Redis: rs, Sagas: refundFails{}, Log: d.Log}).Deliver(ctx, ev, 1002)
	require.Error(t, err)
	require.NotErrorIs(t, err, seckill.ErrTemporal, "the database's error is not Temporal's")
}

// refundFails has no running saga, and cannot start a refund.
type refundFails struct{}

func (refundFails) Pay(context.Context, int64, seckill.PaymentEvent) error { return saga.ErrNoSaga }

func (refundFails) StartRefund(context.Context, seckill.RefundInput) error {
	return errors.New("connection refused")
}
