//go:build !slim

package app_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api/contract"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string
	data string
}

// openEvents opens GET /orders/{id}/events and returns its events as they
// arrive; the channel closes when the server ends the stream.
func (s *system) openEvents(orderID, token string) (*http.Response, <-chan sseEvent) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.info.APIURL+"/api/v1/orders/"+orderID+"/events", nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 2 * time.Minute, Transport: contract.Transport(s.t, nil)}).Do(req)
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = resp.Body.Close() })
	events := make(chan sseEvent, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || ev.data != "" {
					events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return resp, events
}

func nextStatus(t *testing.T, events <-chan sseEvent, within time.Duration) (seckill.OrderJSON, bool) {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			return seckill.OrderJSON{}, false
		}
		require.Equal(t, "status", ev.name)
		// A status event carries an Order (x-sse-events of the contract).
		if msg := contract.CheckSchema("Order", []byte(ev.data)); msg != "" {
			t.Error(msg)
		}
		var o seckill.OrderJSON
		require.NoError(t, json.Unmarshal([]byte(ev.data), &o), "event data %s", ev.data)
		return o, true
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
		return seckill.OrderJSON{}, false
	}
}

func TestOrderEvents_StreamEveryChangeAndEndAtPaid(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(1, time.Minute)
	r := s.claim(sale, "alice")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	orderID := r.json(t)["order_id"].(string)

	resp, events := s.openEvents(orderID, s.token("alice", false))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	// At once: the order as it stands; then every change up to
	// AWAITING_PAYMENT, each status once and in order.
	var seen []seckill.OrderStatus
	var o seckill.OrderJSON
	for o.Status != seckill.StatusAwaitingPayment {
		var ok bool
		o, ok = nextStatus(t, events, 30*time.Second)
		require.True(t, ok, "stream ended before AWAITING_PAYMENT")
		require.Equal(t, orderID, o.OrderID)
		seen = append(seen, o.Status)
	}
	require.Subset(t, []seckill.OrderStatus{seckill.StatusQueued, seckill.StatusAwaitingPayment}, seen)
	require.NotNil(t, o.PayBy)

	require.Equal(t, http.StatusOK, s.webhook("evt_sse_paid", seckill.PaymentSucceeded, orderID, 990).status)
	o, ok := nextStatus(t, events, 30*time.Second)
	require.True(t, ok)
	require.Equal(t, seckill.StatusPaid, o.Status)
	require.NotNil(t, o.PaidAt)
	_, ok = nextStatus(t, events, 10*time.Second)
	require.False(t, ok, "the stream must end after a terminal status")

	// A finished order: one event, then the end.
	_, events = s.openEvents(orderID, s.token("alice", false))
	o, ok = nextStatus(t, events, 10*time.Second)
	require.True(t, ok)
	require.Equal(t, seckill.StatusPaid, o.Status)
	_, ok = nextStatus(t, events, 10*time.Second)
	require.False(t, ok)
}

func TestOrderEvents_OthersGetNotFound(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(1, time.Minute)
	r := s.claim(sale, "alice")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	orderID := r.json(t)["order_id"].(string)

	for _, path := range []string{"/api/v1/orders/" + orderID + "/events", "/api/v1/orders/999999/events", "/api/v1/orders/0" + orderID + "/events"} {
		r := s.mustDo("GET", path, s.token("mallory", false), nil)
		require.Equal(t, http.StatusNotFound, r.status, path)
		require.Equal(t, "ORDER_NOT_FOUND", r.json(t)["code"], path)
	}
	r = s.mustDo("GET", "/api/v1/orders/"+orderID+"/events", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
}

func TestDevCheckout_PaysWithASignedWebhook(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(2, time.Minute)

	cfg := s.mustDo("GET", "/ui/config", "", nil).json(t)
	require.Equal(t, true, cfg["demo_sign_in"])
	require.Equal(t, "/dev/checkout", cfg["checkout_url"])

	r := s.mustDo("POST", "/dev/sign-in", "", []byte(`{"user_id":"bob"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	token := r.json(t)["token"].(string)
	for _, bad := range []string{`{"user_id":"b\u0000b"}`, `{"user_id":"élise"}`, `{"user_id":"` + strings.Repeat("b", 256) + `"}`, `{}`, `{"user_id":""}`, `[`} {
		r := s.mustDo("POST", "/dev/sign-in", "", []byte(bad))
		require.Equal(t, http.StatusBadRequest, r.status, bad)
		require.Equal(t, "INVALID_REQUEST", r.json(t)["code"], bad)
	}
	// A demo token is a user's, never an admin's.
	r = s.mustDo("POST", "/api/v1/sales", token, []byte(`{}`))
	require.Equal(t, http.StatusForbidden, r.status)

	r = s.mustDo("POST", "/api/v1/sales/"+sale+"/claims", token, nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	orderID := r.json(t)["order_id"].(string)
	s.waitOrder(orderID, "bob", seckill.StatusAwaitingPayment, 30*time.Second)

	r = s.mustDo("POST", "/dev/checkout/"+orderID, token, []byte(`{"outcome":"maybe"}`))
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Contains(t, r.json(t)["detail"], "outcome")
	r = s.mustDo("POST", "/dev/checkout/"+orderID, s.token("mallory", false), []byte(`{"outcome":"succeeded"}`))
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, seckill.StatusAwaitingPayment, s.order(orderID, "bob").Status)

	r = s.mustDo("POST", "/dev/checkout/"+orderID, token, []byte(`{"outcome":"succeeded"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	o := s.waitOrder(orderID, "bob", seckill.StatusPaid, 30*time.Second)
	require.Equal(t, int64(990), o.AmountCents)
	s.requireSplit(sale, 1, 1, 0, 1)
	s.requireAudit(sale)
}
