//go:build !slim

package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/testenv"
)

const shopSecret = "whsec_c2Vja2lsbC1zaG9wLWV2ZW50cy10ZXN0LWtleS0zMmJ5dGVz"

// shopReceiver is the shop's order-events endpoint: it verifies each
// delivery with the Standard Webhooks library, drops repeats by
// webhook-id (as the contract tells receivers to) and records, per order,
// the types in the order they came. It can answer 500 or be taken off its
// address (connection refused) and brought back.
type shopReceiver struct {
	t      *testing.T
	wh     *standardwebhooks.Webhook
	addr   string
	mu     sync.Mutex
	srv    *http.Server
	seen   map[string]bool
	orders map[string][]seckill.ShopEventType
	// repeats counts deliveries of an id seen before; refusals the 500s
	// and bad signatures answered.
	repeats, refusals atomic.Int64
	failing           atomic.Bool
	badSignature      atomic.Int64
}

func newShopReceiver(t *testing.T) *shopReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(shopSecret)
	require.NoError(t, err)
	r := &shopReceiver{t: t, wh: wh, seen: map[string]bool{}, orders: map[string][]seckill.ShopEventType{}}
	r.addr = freeAddr(t)
	r.up()
	t.Cleanup(r.down)
	return r
}

func (r *shopReceiver) URL() string { return "http://" + r.addr + "/hooks/seckill" }

func (r *shopReceiver) up() {
	ln, err := net.Listen("tcp", r.addr)
	require.NoError(r.t, err)
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
}

func (r *shopReceiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (r *shopReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := r.wh.Verify(body, req.Header); err != nil {
		r.badSignature.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Each event is one the contract's webhooks describe (api/openapi.yaml).
	if msg := contract.CheckEvent(req.Header, body); msg != "" {
		r.t.Error(msg)
	}
	if r.failing.Load() {
		r.refusals.Add(1)
		http.Error(w, "the shop is failing", http.StatusInternalServerError)
		return
	}
	var ev struct {
		Type      seckill.ShopEventType `json:"type"`
		Timestamp time.Time             `json:"timestamp"`
		Data      seckill.OrderJSON     `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.Data.OrderID == "" || ev.Timestamp.IsZero() {
		http.Error(w, "not an order event", http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != seckill.ShopEventID(mustParse(ev.Data.OrderID), ev.Type) {
		http.Error(w, "webhook-id "+id+" is not the event's", http.StatusBadRequest)
		return
	}
	if r.seen[id] {
		r.repeats.Add(1)
	} else {
		r.seen[id] = true
		r.orders[ev.Data.OrderID] = append(r.orders[ev.Data.OrderID], ev.Type)
	}
	w.WriteHeader(http.StatusNoContent)
}

func mustParse(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// got returns the types order has received, in order.
func (r *shopReceiver) got(orderID string) []seckill.ShopEventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.orders[orderID])
}

func (r *shopReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func startWithShop(t *testing.T, r *shopReceiver) *system {
	return startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.EventsURL, c.EventsSecret, c.EventsRetryFor = r.URL(), shopSecret, 10*time.Minute
	}})
}

// A shop's receiver is down while orders are decided, then answers 500 for
// a while, then recovers: it gets every event of every order, signed, in
// each order's order: a paid order's awaiting_payment then paid; a
// cancelled one's awaiting_payment then closed, then refunded for a
// payment that came after it closed.
func TestShopEvents_EveryTransitionSignedInOrderAcrossTheShopsOutage(t *testing.T) {
	r := newShopReceiver(t)
	s := startWithShop(t, r)
	sale := s.createSale(5, time.Minute)
	r.down()

	paid := s.claim(sale, "payer").json(t)["order_id"].(string)
	o := s.waitOrder(paid, "payer", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, http.StatusOK, s.webhook("evt_shop_1", seckill.PaymentSucceeded, paid, o.AmountCents).status)
	s.waitOrder(paid, "payer", seckill.StatusPaid, 30*time.Second)

	cancelled := s.claim(sale, "canceller").json(t)["order_id"].(string)
	s.waitOrder(cancelled, "canceller", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, http.StatusAccepted, s.mustDo("POST", "/api/v1/orders/"+cancelled+"/cancel", s.token("canceller", false), nil).status)
	s.waitOrder(cancelled, "canceller", seckill.StatusClosed, 30*time.Second)
	require.Equal(t, http.StatusOK, s.webhook("evt_shop_late", seckill.PaymentSucceeded, cancelled, o.AmountCents).status)
	require.Eventually(t, func() bool {
		ord := s.order(cancelled, "canceller")
		return ord.Refund != nil && ord.Refund.Status == seckill.RefundSucceeded
	}, 30*time.Second, 100*time.Millisecond)

	// Down for a few seconds of retries, then failing with 500s.
	time.Sleep(3 * time.Second)
	require.Zero(t, r.count())
	r.failing.Store(true)
	r.up()
	require.Eventually(t, func() bool { return r.refusals.Load() > 0 }, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, r.count())
	r.failing.Store(false)

	require.Eventually(t, func() bool {
		return len(r.got(paid)) == 2 && len(r.got(cancelled)) == 3
	}, 60*time.Second, 100*time.Millisecond, "paid: %v, cancelled: %v", r.got(paid), r.got(cancelled))
	require.Equal(t, []seckill.ShopEventType{seckill.ShopOrderAwaitingPayment, seckill.ShopOrderPaid}, r.got(paid))
	require.Equal(t, []seckill.ShopEventType{seckill.ShopOrderAwaitingPayment, seckill.ShopOrderClosed, seckill.ShopOrderRefunded}, r.got(cancelled))
	require.Zero(t, r.badSignature.Load())
	s.requireAudit(sale)
}

// A burst of orders decided at once, half paid and half cancelled by
// their buyers: every order's two events arrive, once each (repeats
// dropped by id), in order.
func TestShopEvents_ABurstOfOrdersEachInOrder(t *testing.T) {
	const orders = 500
	r := newShopReceiver(t)
	s := startWithShop(t, r)
	sale := s.createSale(orders, 5*time.Minute)
	ids := make([]string, orders+1)
	var failures atomic.Int64
	testenv.ForEachBuyer(orders, 64, func(i int64) {
		user := fmt.Sprintf("burst-%d", i)
		resp, err := s.do("POST", "/api/v1/sales/"+sale+"/claims", s.token(user, false), nil, nil)
		var claim struct {
			OrderID string `json:"order_id"`
		}
		if err != nil || resp.status != http.StatusAccepted || json.Unmarshal(resp.body, &claim) != nil {
			failures.Add(1)
			return
		}
		ids[i] = claim.OrderID
	})
	require.Zero(t, failures.Load(), "every claim admitted")
	started := time.Now()
	testenv.ForEachBuyer(orders, 64, func(i int64) {
		id := ids[i]
		var resp response
		var err error
		if i%2 == 0 {
			body, _ := json.Marshal(map[string]any{
				"id": "evt_burst_" + id, "type": string(seckill.PaymentSucceeded), "created": time.Now().Unix(),
				"data": map[string]any{"object": map[string]any{
					"id": "pi_burst_" + id, "object": "payment_intent", "amount": 990, "currency": "usd",
					"metadata": map[string]string{"order_id": id},
				}},
			})
			resp, err = untilNot503(func() (response, error) {
				return s.do("POST", "/api/v1/payments/webhook", "", body, map[string]string{
					"Stripe-Signature": api.Sign(body, s.cfg.WebhookSecret, time.Now()),
				})
			})
			if err == nil && resp.status != http.StatusOK && resp.status != http.StatusAccepted {
				err = fmt.Errorf("webhook: %d %s", resp.status, resp.body)
			}
		} else {
			retried := false
			resp, err = untilNot503(func() (response, error) {
				r, err := s.do("POST", "/api/v1/orders/"+id+"/cancel", s.token(fmt.Sprintf("burst-%d", i), false), nil, nil)
				retried = retried || r.status == http.StatusServiceUnavailable
				return r, err
			})
			// A 503 whose signal reached the saga after the request's
			// deadline cancelled the order: the retry finds it closed.
			cancelledBefore := retried && resp.status == http.StatusConflict && bytes.Contains(resp.body, []byte(`"ORDER_NOT_CANCELLABLE"`))
			if err == nil && resp.status != http.StatusAccepted && !cancelledBefore {
				err = fmt.Errorf("cancel: %d %s", resp.status, resp.body)
			}
		}
		if err != nil {
			failures.Add(1)
			t.Log(err)
		}
	})
	require.Zero(t, failures.Load())
	require.Eventually(t, func() bool { return r.count() == 2*orders }, 5*time.Minute, 250*time.Millisecond,
		"%d of %d events delivered", r.count(), 2*orders)
	t.Logf("%d orders decided in a burst: their %d events delivered %s after the first payment or cancel; %d repeats dropped",
		orders, 2*orders, time.Since(started).Round(100*time.Millisecond), r.repeats.Load())
	for i := int64(1); i <= orders; i++ {
		last := seckill.ShopOrderClosed
		if i%2 == 0 {
			last = seckill.ShopOrderPaid
		}
		require.Equal(t, []seckill.ShopEventType{seckill.ShopOrderAwaitingPayment, last}, r.got(ids[i]), "order %s", ids[i])
	}
	require.Zero(t, r.badSignature.Load())
}

// A shop that keeps failing past the retry window: the order's events are
// kept, the later one behind the first, listed by `seckill events failed`;
// once the shop is back, `seckill events redeliver` sends them, in order,
// whichever of them it names.
func TestShopEvents_GivenUpThenRedeliveredByTheOperator(t *testing.T) {
	r := newShopReceiver(t)
	r.failing.Store(true)
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.EventsURL, c.EventsSecret, c.EventsRetryFor = r.URL(), shopSecret, 3*time.Second
	}})
	sale := s.createSale(2, time.Minute)
	id := s.claim(sale, "payer").json(t)["order_id"].(string)
	o := s.waitOrder(id, "payer", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, http.StatusOK, s.webhook("evt_kept_1", seckill.PaymentSucceeded, id, o.AmountCents).status)
	s.waitOrder(id, "payer", seckill.StatusPaid, 30*time.Second)

	ctx := t.Context()
	failed := func() string {
		var out strings.Builder
		require.NoError(t, app.EventsCommand(ctx, s.cfg, []string{"failed"}, &out))
		return out.String()
	}
	first := seckill.ShopEventID(mustParse(id), seckill.ShopOrderAwaitingPayment)
	paid := seckill.ShopEventID(mustParse(id), seckill.ShopOrderPaid)
	require.Eventually(t, func() bool {
		out := failed()
		return strings.Contains(out, first) && strings.Contains(out, paid)
	}, 60*time.Second, 200*time.Millisecond, "kept: %s", failed())
	out := failed()
	require.Less(t, strings.Index(out, first), strings.Index(out, paid), "in order:\n%s", out)
	require.Contains(t, out, "the shop answered 500")
	require.Zero(t, r.count())

	r.failing.Store(false)
	var redeliver strings.Builder
	err := app.EventsCommand(ctx, s.cfg, []string{"redeliver", "--id", "evt_nope"}, &redeliver)
	require.ErrorContains(t, err, `no kept event "evt_nope"`)
	// Naming the later event redelivers the order's kept events from the
	// first, in order.
	require.NoError(t, app.EventsCommand(ctx, s.cfg, []string{"redeliver", "--id", paid}, &redeliver))
	require.Contains(t, redeliver.String(), first+" (order "+id+", order.awaiting_payment): handed to shop-events-"+id)
	require.Contains(t, redeliver.String(), paid)
	require.Eventually(t, func() bool { return len(r.got(id)) == 2 }, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, []seckill.ShopEventType{seckill.ShopOrderAwaitingPayment, seckill.ShopOrderPaid}, r.got(id))
	require.Eventually(t, func() bool { return strings.Contains(failed(), "no kept order events") }, 10*time.Second, 100*time.Millisecond)
}

// untilNot503 sends a request again while it is answered 503 UNAVAILABLE,
// as the contract tells a client to (a payment provider retries its
// webhook; a buyer's page its cancel): a burst of 500 decisions meets 500
// sagas starting on the one test Temporal server, and a signal may miss
// the request's deadline. Up to 8 tries, 250 ms apart and more.
func untilNot503(send func() (response, error)) (response, error) {
	var (
		resp response
		err  error
	)
	for try := 1; ; try++ {
		resp, err = send()
		if err != nil || resp.status != http.StatusServiceUnavailable || try == 8 {
			return resp, err
		}
		time.Sleep(time.Duration(try) * 250 * time.Millisecond)
	}
}
