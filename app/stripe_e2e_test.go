//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/stripemock"
)

// With SECKILL_PAYMENT_PROVIDER=stripe and STRIPE_API_BASE at Stripe's own
// API mock: a winner asks for the order's PaymentIntent while it is still
// QUEUED and pays at once; asking again gives the same one; only the owner
// sees its client secret; a paid order is not payable any more; and a
// second payment of the paid order, through a PaymentIntent made outside
// seckill, is refunded through Stripe's refund API.
func TestStripe_PaymentIntentAndRefundThroughStripe(t *testing.T) {
	base := stripemock.Start(t)
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.PaymentProvider, c.StripeSecretKey, c.StripeAPIBase = app.ProviderStripe, "sk_test_seckill", base
	}})
	shop := pages(t, s) // the page's requests checked against the contract
	ui := s.mustDo("GET", "/ui/config", "", nil).json(t)
	require.Equal(t, "stripe", ui["payment_provider"])
	require.Equal(t, "", ui["checkout_url"], "no dev checkout with a real provider")

	sale := s.createSale(2, time.Minute)
	r := s.claim(sale, "ann")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	order := r.json(t)["order_id"].(string)
	pay := func(user string) response {
		return s.mustDo("POST", "/api/v1/orders/"+order+"/payment", s.token(user, false), nil)
	}

	p := pay("ann")
	require.Equal(t, http.StatusOK, p.status, "%s", p.body)
	payment := p.json(t)["payment"].(map[string]any)
	require.Equal(t, "stripe", payment["provider"])
	intent := payment["payment_intent_id"].(string)
	require.NotEmpty(t, intent)
	require.NotEmpty(t, payment["client_secret"], "the owner gets the client secret")
	again := pay("ann").json(t)["payment"].(map[string]any)
	require.Equal(t, intent, again["payment_intent_id"], "one PaymentIntent per order")
	require.Equal(t, http.StatusNotFound, pay("bob").status, "only the owner")

	o := s.order(order, "ann")
	require.NotNil(t, o.Payment)
	require.Equal(t, intent, o.Payment.PaymentIntentID)
	require.NotEmpty(t, o.Payment.ClientSecret)
	admin := s.mustDo("GET", "/api/v1/orders/"+order, s.token("admin", true), nil).json(t)["payment"].(map[string]any)
	require.Equal(t, intent, admin["payment_intent_id"])
	require.NotContains(t, admin, "client_secret", "an admin does not see the client secret")

	// Stripe reports the payment through the webhook, as it would.
	wh := s.webhookFor("evt_stripe_1", seckill.PaymentSucceeded, order, intent, 990)
	require.Equal(t, http.StatusOK, wh.status, "%s", wh.body)
	s.waitOrder(order, "ann", seckill.StatusPaid, 30*time.Second)
	np := pay("ann")
	require.Equal(t, http.StatusConflict, np.status)
	require.Equal(t, "ORDER_NOT_PAYABLE", np.json(t)["code"])

	// A second payment of the paid order (through another PaymentIntent,
	// made outside seckill): refunded through Stripe.
	wh = s.webhookFor("evt_stripe_2", seckill.PaymentSucceeded, order, "pi_made_elsewhere", 990)
	require.Equal(t, http.StatusOK, wh.status, "%s", wh.body)
	s.waitRefund(order, "ann", 990)
	require.Equal(t, 1, s.count("SELECT count(*) FROM refunds WHERE event_id = 'evt_stripe_2' AND provider_refund_id LIKE 're_%'"))
	require.Equal(t, 0, s.count("SELECT count(*) FROM dev_provider_refunds"), "the dev provider took no part")
	s.requireAudit(sale)

	// An order nobody pays: its saga makes the PaymentIntent as the order
	// awaits payment (the buyer never asked), and at the deadline cancels
	// it before the unit is given back.
	short := s.createSale(1, 5*time.Second)
	r = s.claim(short, "bob")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	unpaid := r.json(t)["order_id"].(string)
	o = s.waitOrder(unpaid, "bob", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Eventually(t, func() bool { return s.order(unpaid, "bob").Payment != nil }, 10*time.Second, 50*time.Millisecond,
		"the saga made the PaymentIntent")
	o = s.waitOrder(unpaid, "bob", seckill.StatusClosed, 30*time.Second)
	require.Equal(t, seckill.ClosePaymentTimeout, *o.CloseReason)
	// The local activities' markers are recorded when their workflow task
	// completes, a moment after ReleaseOrder wrote CLOSED: wait for it.
	want := []string{"StartOrder", "MakePaymentIntent", "CancelPaymentIntent", "ReleaseOrder"}
	var ran []string
	require.Eventually(t, func() bool { ran = s.localActivities(unpaid); return len(ran) >= len(want) }, 10*time.Second, 50*time.Millisecond,
		"the saga's workflow task that closed the order completed")
	require.Equal(t, want, ran, "the PaymentIntent is cancelled before the unit is given back")
	s.requireAudit(short)

	// The shop page with Stripe: Pay makes the PaymentIntent and says
	// where Stripe's Payment Element mounts.
	page := s.createSale(1, time.Minute)
	ctx := browser(t)
	do(t, ctx, "sign in, claim and pay with Stripe",
		chromedp.Navigate(shop+"/sales/"+page),
		chromedp.WaitVisible("#signin-button"),
		chromedp.SetValue("#signin-name", "stripe-shopper"),
		chromedp.Click("#signin-button"),
		chromedp.WaitEnabled("#claim"),
		chromedp.Click("#claim"),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
		chromedp.WaitVisible("#pay"),
		chromedp.Click("#pay"),
		chromedp.WaitVisible("#stripe-mount"),
	)
	require.Contains(t, text(t, ctx, "#stripe-mount"), "Stripe's Payment Element mounts here, for PaymentIntent pi_")
	screenshot(t, ctx, "shopper-stripe.png")
}

// localActivities lists the local activities an order's saga ran, in order.
func (s *system) localActivities(orderID string) []string {
	s.t.Helper()
	iter := s.temporal.GetWorkflowHistory(context.Background(), seckill.OrderWorkflowID(mustInt(s.t, orderID)), "", false, 0)
	var names []string
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(s.t, err)
		m := ev.GetMarkerRecordedEventAttributes()
		if ev.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED || m.GetMarkerName() != "LocalActivity" {
			continue
		}
		for _, p := range m.GetDetails()["data"].GetPayloads() {
			var d struct{ ActivityType string }
			if json.Unmarshal(p.GetData(), &d) == nil && d.ActivityType != "" {
				names = append(names, d.ActivityType)
			}
		}
	}
	return names
}

// A buyer pays through the order's PaymentIntent just as the deadline
// comes, and Stripe's event is slow: the saga's cancel finds the
// PaymentIntent succeeded (Stripe refuses to cancel it), so the buyer paid
// in time by Stripe's clock. The saga waits for Stripe's event instead of
// closing the order, and the event makes the order PAID: no unit given
// back while the buyer's money is taken, no refund of a payment in time.
func TestStripe_PaidAsTheDeadlineCame(t *testing.T) {
	mock := stripemock.Start(t)
	target, err := url.Parse(mock)
	require.NoError(t, err)
	// In front of stripe-mock: the PaymentIntents in paid have taken a
	// payment, as Stripe would answer for them (stripe-mock keeps no state).
	var paid sync.Map
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		id := strings.TrimPrefix(resp.Request.URL.Path, "/v1/payment_intents/")
		if _, ok := paid.Load(id); !ok || resp.Request.Method != http.MethodGet {
			return nil
		}
		var pi map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&pi); err != nil {
			return err
		}
		_ = resp.Body.Close()
		pi["id"], pi["status"], pi["amount"], pi["amount_received"], pi["currency"] = id, "succeeded", 990, 990, "usd"
		b, err := json.Marshal(pi)
		if err != nil {
			return err
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, cancel := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/cancel")
		if _, ok := paid.Load(id); ok && cancel {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state",`+
				`"message":"You cannot cancel this PaymentIntent because it has a status of succeeded."}}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.PaymentProvider, c.StripeSecretKey, c.StripeAPIBase = app.ProviderStripe, "sk_test_seckill", front.URL
	}})
	sale := s.createSale(1, 5*time.Second)
	o := s.awaiting(sale, "ann")
	require.Eventually(t, func() bool { return s.order(o.OrderID, "ann").Payment != nil }, 10*time.Second, 50*time.Millisecond,
		"the saga made the PaymentIntent")
	intent := s.order(o.OrderID, "ann").Payment.PaymentIntentID
	paid.Store(intent, true)

	// Past the deadline the saga has asked Stripe to cancel, and waits.
	require.Eventually(t, func() bool {
		return slices.Contains(s.localActivities(o.OrderID), "CancelPaymentIntent")
	}, 30*time.Second, 100*time.Millisecond, "the saga tried to cancel the PaymentIntent at the deadline")
	require.Equal(t, seckill.StatusAwaitingPayment, s.order(o.OrderID, "ann").Status, "not closed while the payment is taken")
	require.EqualValues(t, 1, s.dbStock(sale).Locked, "the unit is not given back")

	wh := s.webhookFor("evt_paid_at_deadline", seckill.PaymentSucceeded, o.OrderID, intent, 990)
	require.Equal(t, http.StatusOK, wh.status, "%s", wh.body)
	final := s.waitOrder(o.OrderID, "ann", seckill.StatusPaid, 30*time.Second)
	require.Nil(t, final.Refund)
	require.Equal(t, 1, s.count("SELECT count(*) FROM payment_events WHERE id = 'evt_paid_at_deadline' AND outcome = 'APPLIED'"))
	require.Equal(t, 0, s.count("SELECT count(*) FROM refunds"))
	s.requireAudit(sale)
	s.recordHistory(seckill.OrderWorkflowID(mustInt(t, o.OrderID)), "v4-own_intent_paid_at_deadline")
}
