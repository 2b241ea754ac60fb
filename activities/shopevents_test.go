package activities_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// shopLog records what the activities tell and send.
type shopLog struct {
	mu    sync.Mutex
	told  []seckill.ShopEvent
	sent  []string
	failN int // the next failN tells fail (Temporal unreachable)
}

func (l *shopLog) TellShop(_ context.Context, ev seckill.ShopEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failN > 0 {
		l.failN--
		return errors.New("temporal unreachable")
	}
	l.told = append(l.told, ev)
	return nil
}

func (l *shopLog) Send(_ context.Context, ev seckill.ShopEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, ev.ID)
	return nil
}

func (l *shopLog) types() []seckill.ShopEventType {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []seckill.ShopEventType
	for _, ev := range l.told {
		out = append(out, ev.Type)
	}
	return out
}

// Each step that changes an order tells the shop, after the change, and a
// step whose telling failed is retried and tells then: a paid order tells
// awaiting_payment then paid, with the order as it stands.
func TestShopEvents_EachTransitionIsToldAfterItHappened(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	sale := testenv.OpenSale(t, st, 2)
	testenv.Warm(t, rs, sale, 2)
	terms := seckill.Terms{PaymentTimeout: time.Hour, UnitPriceCents: 990, Currency: "usd"}
	_, err := rs.Claim(ctx, sale.ID, "ann", 2001, "", terms, seckill.DefaultItem)
	require.NoError(t, err)

	log := &shopLog{failN: 1}
	env, acts := shopActivities(st, rs, log)
	start := seckill.StartOrderInput{OrderID: 2001, SaleID: sale.ID, UserID: "ann", AdmittedAt: now, PayBy: now.Add(time.Hour)}
	_, err = env.ExecuteActivity(acts.StartOrder, start)
	require.ErrorContains(t, err, "temporal unreachable", "the order is written, the shop not told: the step fails")
	_, err = env.ExecuteActivity(acts.StartOrder, start)
	require.NoError(t, err, "retried: the order as it stands, told now")
	_, err = env.ExecuteActivity(acts.ConfirmPayment, seckill.ConfirmPaymentInput{OrderID: 2001, EventID: "evt_a", PaymentIntentID: "pi_a", PaidAt: now})
	require.NoError(t, err)

	require.Equal(t, []seckill.ShopEventType{seckill.ShopOrderAwaitingPayment, seckill.ShopOrderPaid}, log.types())
	paid := log.told[1]
	require.Equal(t, seckill.ShopEventID(2001, seckill.ShopOrderPaid), paid.ID)
	require.Equal(t, int64(2001), paid.OrderID)
	require.Equal(t, seckill.StatusPaid, paid.Order.Status)
	require.Equal(t, log.told[0].At, now, "awaiting payment from admission on")
}

// An order with an event kept undelivered holds its later events: sending
// one is refused, non-retryable, unless it is a redelivery, which once sent
// is no longer kept.
func TestSendShopEvent_HeldBehindAKeptEvent(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	log := &shopLog{}
	env, acts := shopActivities(st, rs, log)
	at := time.Now().UTC()
	o := &seckill.Order{ID: 3001, SaleID: 1, UserID: "u", Status: seckill.StatusClosed, CreatedAt: at}
	first, later := seckill.NewShopEvent(o, seckill.ShopOrderAwaitingPayment, at), seckill.NewShopEvent(o, seckill.ShopOrderClosed, at)

	_, err := env.ExecuteActivity(acts.SendShopEvent, first)
	require.NoError(t, err)
	require.NoError(t, st.KeepShopEvents(t.Context(), []seckill.ShopEvent{first}, "the shop answered 500"))
	_, err = env.ExecuteActivity(acts.SendShopEvent, later)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, seckill.ErrTypeShopEventHeld, appErr.Type())
	require.True(t, appErr.NonRetryable())
	first.Redelivery = true
	_, err = env.ExecuteActivity(acts.SendShopEvent, first)
	require.NoError(t, err)
	// Sent again: no longer kept, so the later event goes out.
	_, err = env.ExecuteActivity(acts.SendShopEvent, later)
	require.NoError(t, err)
	require.Equal(t, []string{first.ID, first.ID, later.ID}, log.sent)
}

// Two late payments of one closed order refunded at once: order.refunded
// is told once both succeeded, with their sum, not by the first to finish
// while the other is still PENDING (the webhook-id is one per order).
func TestShopEvents_RefundedIsToldWhenEveryRefundSucceeded(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 2)
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 4001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(ctx, 4001, seckill.ClosePaymentTimeout, "", "", now)
	require.NoError(t, err)
	log := &shopLog{}
	env, acts := shopActivities(st, rs, log)
	refund := func(ev string) seckill.RefundInput {
		_, _, err := st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: ev, Type: string(seckill.PaymentSucceeded),
			OrderID: 4001, PaymentIntentID: "pi_" + ev, AmountCents: 990, Currency: "usd", Outcome: seckill.OutcomeReceived, Payload: []byte(`{}`)})
		require.NoError(t, err)
		return seckill.RefundInput{EventID: ev, OrderID: 4001, PaymentIntentID: "pi_" + ev, AmountCents: 990, Currency: "usd", Reason: seckill.OutcomeLate}
	}
	a, b := refund("evt_late_a"), refund("evt_late_b")
	_, err = st.StartRefund(ctx, store.NewRefund{EventID: b.EventID, OrderID: 4001, PaymentIntentID: b.PaymentIntentID, AmountCents: 990, Currency: "usd", Reason: seckill.OutcomeLate})
	require.NoError(t, err) // b's refund has begun
	_, err = env.ExecuteActivity(acts.RefundPayment, a)
	require.NoError(t, err)
	require.Empty(t, log.types(), "b is still PENDING")
	_, err = env.ExecuteActivity(acts.RefundPayment, b)
	require.NoError(t, err)
	require.Equal(t, []seckill.ShopEventType{seckill.ShopOrderRefunded}, log.types())
	require.Equal(t, &seckill.Refund{Status: seckill.RefundSucceeded, AmountCents: 1980}, log.told[0].Order.Refund)
}

// shopActivities are the activities telling log of every transition, in
// the SDK's activity test environment.
func shopActivities(st *store.Store, rs *redisstore.Store, log *shopLog) (*testsuite.TestActivityEnvironment, *activities.Activities) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2, activities.WithShop(log, log))
	env.RegisterActivity(acts)
	return env, acts
}
