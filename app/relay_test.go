//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/redisstore"
)

// TestRelay_TakesOverEntriesOfACrashedRelay admits claims while no relay
// runs (the orders answer QUEUED, payable at once), lets a relay read them
// and die before acknowledging, then starts two relays: every claim gets
// exactly one saga, within seconds (the dead relay's liveness key is gone;
// the idle-time safety net is set far beyond the test).
func TestRelay_TakesOverEntriesOfACrashedRelay(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testConfig(t)
	cfg.RelayClaimIdle = 10 * time.Minute
	// Reconciliation would start lost claims' sagas too: keep it out of this test.
	cfg.ReconcileEvery, cfg.ReconcileGrace = time.Minute, 10*time.Minute
	d, err := app.Connect(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(d.Close)

	// The API alone: claims are admitted, nothing relays them yet.
	ln, err := app.Listen("127.0.0.1:0", "SECKILL_HTTP_ADDR")
	require.NoError(t, err)
	apiDone := make(chan error, 1)
	go func() { apiDone <- app.RunAPI(ctx, cfg, d, ln) }()
	base := "http://" + ln.Addr().String()
	require.Eventually(t, func() bool {
		r, err := http.Get(base + "/healthz")
		if err == nil {
			_ = r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	}, 10*time.Second, 50*time.Millisecond)

	client := checkedClient(t, 30*time.Second, nil)
	call := func(method, path, user string, admin bool, body string) (int, map[string]any) {
		tok, err := auth.SignToken(cfg.JWTSecret, user, admin, time.Hour)
		require.NoError(t, err)
		req := httptest.NewRequest(method, base+path, stringsReader(body))
		req.RequestURI = ""
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	now := time.Now().UTC()
	status, sale := call("POST", "/api/v1/sales", "admin", true, fmt.Sprintf(
		`{"name":"relay","price_cents":500,"currency":"EUR","stock":5,"starts_at":%q,"ends_at":%q,"payment_timeout_seconds":600}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)))
	require.Equal(t, http.StatusCreated, status, "%v", sale)
	saleID := sale["id"].(string)

	orders, payBy := map[string]string{}, map[string]any{}
	for _, u := range []string{"ann", "bob", "cid"} {
		status, body := call("POST", "/api/v1/sales/"+saleID+"/claims", u, false, "")
		require.Equal(t, http.StatusAccepted, status, "%v", body)
		orders[u] = body["order_id"].(string)
		payBy[u] = body["pay_by"]
		require.EqualValues(t, 500, body["amount_cents"])
		require.Equal(t, "eur", body["currency"])
		at, err := time.Parse(time.RFC3339, body["pay_by"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(600*time.Second), at, 5*time.Second, "pay_by = admission + the sale's timeout")
	}
	// Admitted but not yet written: the owner sees QUEUED, others nothing.
	status, o := call("GET", "/api/v1/orders/"+orders["ann"], "ann", false, "")
	require.Equal(t, http.StatusOK, status, "%v", o)
	require.Equal(t, "QUEUED", o["status"])
	require.Equal(t, "eur", o["currency"])
	require.EqualValues(t, 500, o["amount_cents"])
	require.Equal(t, payBy["ann"], o["pay_by"], "the pay_by of the 202")
	status, o = call("GET", "/api/v1/orders/"+orders["ann"], "admin", true, "")
	require.Equal(t, http.StatusOK, status, "an admin finds a queued order too: %v", o)
	require.Equal(t, "QUEUED", o["status"])
	status, o = call("GET", "/api/v1/orders/"+orders["ann"], "bob", false, "")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "ORDER_NOT_FOUND", o["code"])

	// ann pays before her saga exists: the event is recorded and answered
	// 200, and delivered once the saga runs.
	body := fmt.Sprintf(`{"id":"evt_early","type":"payment_intent.succeeded","data":{"object":{"id":"pi_early","amount":500,"currency":"eur","metadata":{"order_id":%q}}}}`, orders["ann"])
	req, err := http.NewRequest("POST", base+"/api/v1/payments/webhook", stringsReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json") // as a provider sends it
	req.Header.Set("Stripe-Signature", api.Sign([]byte(body), cfg.WebhookSecret, time.Now()))
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// cid cancels while QUEUED: the saga is started with the cancel in it.
	status, cancelled := call("POST", "/api/v1/orders/"+orders["cid"]+"/cancel", "cid", false, "")
	require.Equal(t, http.StatusAccepted, status, "%v", cancelled)
	require.Equal(t, "QUEUED", cancelled["status"])

	// A relay reads every entry and dies before acknowledging any.
	read, err := d.Redis.ReadOutbox(ctx, redisstore.Outbox{SaleID: mustInt(t, saleID)}, "crashed-relay", 100, 10*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, read, 3)
	// It was alive until the crash: its liveness key outlives it by up to
	// three heartbeats, as a SIGKILLed relay's does.
	require.NoError(t, d.Redis.MarkRelayAlive(ctx, "crashed-relay", 3*time.Second))

	// Two relays (with their workers) take over; every order gets one saga.
	takeover := time.Now()
	for range 2 {
		go func() { _ = app.RunWorker(ctx, cfg, d) }()
	}
	for u, id := range orders {
		want := seckill.StatusAwaitingPayment
		switch u {
		case "ann":
			want = seckill.StatusPaid
		case "cid":
			want = seckill.StatusClosed
		}
		require.Eventually(t, func() bool {
			o, err := d.Store.Order(ctx, mustInt(t, id))
			return err == nil && o.Status == want && o.UserID == u
		}, 30*time.Second, 100*time.Millisecond, "order of %s", u)
	}
	handover := time.Since(takeover)
	t.Logf("the dead relay's entries had their sagas %s after its liveness key was last refreshed", handover.Round(time.Millisecond))
	require.Less(t, handover, 15*time.Second)
	cidOrder, err := d.Store.Order(ctx, mustInt(t, orders["cid"]))
	require.NoError(t, err)
	require.Equal(t, seckill.CloseCancelled, cidOrder.CloseReason)
	require.Eventually(t, func() bool {
		n, ok, err := d.Redis.Remaining(ctx, mustInt(t, saleID))
		sale, serr := d.Store.Sale(ctx, mustInt(t, saleID))
		return err == nil && serr == nil && ok && n == 3 && sale.Stock.Available == 3 && sale.Stock.Locked == 1 && sale.Stock.Sold == 1
	}, 10*time.Second, 100*time.Millisecond, "cid's unit is back, ann's is sold")
	require.Eventually(t, func() bool {
		n, err := d.Redis.OutboxBacklog(ctx, []int64{mustInt(t, saleID)})
		return err == nil && n == 0
	}, 10*time.Second, 100*time.Millisecond, "outbox drained")
	list, err := d.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("SaleId = %q", saleID),
	})
	require.NoError(t, err)
	require.Len(t, list.GetExecutions(), 3)

	// The owner now sees the order as written by the saga.
	status, o = call("GET", "/api/v1/orders/"+orders["bob"], "bob", false, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "AWAITING_PAYMENT", o["status"])
	require.Equal(t, payBy["bob"], o["pay_by"], "the saga kept the pay_by fixed at admission")

	cancel()
	require.NoError(t, ignoreClosed(<-apiDone))
}
