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
	terms := redisstore.Terms{PaymentTimeout: time.Hour, AmountCents: 990, Currency: "usd"}
	_, err := rs.Claim(ctx, sale.ID, "ann", 2001, "", terms)
	require.NoError(t, err)

	log := &shopLog{failN: 1}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, devpay.Provider{Ledger: st}, &ids{}, 2, activities.WithShop(log, log))
	env.RegisterActivity(acts)
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
// one is refused, non-retryable, unless it is a redelivery.
func TestSendShopEvent_HeldBehindAKeptEvent(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	log := &shopLog{}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, devpay.Provider{Ledger: st}, &ids{}, 2, activities.WithShop(log, log))
	env.RegisterActivity(acts)
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
	require.Equal(t, []string{first.ID, first.ID}, log.sent)
}
