//go:build !slim

package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/audit"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/store"
)

// system is seckill dev wired in-process for one test: its own embedded
// Temporal server, database and Redis prefix.
type system struct {
	t        *testing.T
	info     app.DevInfo
	cfg      app.Config
	store    *store.Store
	redis    *redis.Client
	rstore   *redisstore.Store
	temporal sdkclient.Client
	http     *http.Client
	// mint gives the bearer tokens of token: a dev token under the JWT
	// secret unless the system verifies an identity provider's tokens.
	mint func(user string, admin bool) string
}

type systemOptions struct {
	// configure adjusts the configuration before the system starts.
	configure func(*app.Config)
	// dev adjusts the dev-mode options.
	dev func(*app.DevOptions)
	// mint, when set, gives the system's tokens (an identity provider's).
	mint func(user string, admin bool) string
}

func startSystem(t *testing.T, opts systemOptions) *system {
	t.Helper()
	cfg := testConfig(t)
	st, err := store.Open(context.Background(), cfg.DatabaseURL, store.Options{MaxOpenConns: 16, MaxIdleConns: 16})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ropts, err := redis.ParseURL(cfg.RedisURL)
	require.NoError(t, err)
	ropts.PoolSize = 512
	rdb := redis.NewClient(ropts)
	t.Cleanup(func() { _ = rdb.Close() })
	if opts.configure != nil {
		opts.configure(&cfg)
	}
	// The system's Redis as seckill sees it (any topology); rdb above is
	// the default single server, for tests that look at keys directly.
	rstore, err := app.OpenRedis(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rstore.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan app.DevInfo, 1)
	done := make(chan error, 1)
	devOpts := app.DevOptions{TemporalAddress: shared.Address(), TemporalUIURL: shared.UIURL()}
	if opts.dev != nil {
		opts.dev(&devOpts)
	}
	go func() {
		done <- app.Dev(ctx, cfg, devOpts, func(info app.DevInfo) { ready <- info })
	}()
	s := &system{t: t, cfg: cfg, store: st, redis: rdb, rstore: rstore, mint: opts.mint,
		http: checkedClient(t, 30*time.Second, &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512})}
	select {
	case s.info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("seckill dev stopped before it was ready: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		t.Fatal("seckill dev not ready after 90s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Error("seckill dev did not stop within 60s")
		}
	})
	// As the system dials it (over TLS when the test's Temporal asks).
	tcfg := cfg
	tcfg.TemporalAddress = s.info.TemporalAddress
	s.temporal, err = app.DialTemporal(context.Background(), tcfg, sdkclient.Options{Logger: nopLogger{}})
	require.NoError(t, err)
	t.Cleanup(s.temporal.Close)
	return s
}

func (s *system) token(user string, admin bool) string {
	if s.mint != nil {
		return s.mint(user, admin)
	}
	tok, err := auth.SignToken(s.cfg.JWTSecret, user, admin, time.Hour)
	require.NoError(s.t, err)
	return tok
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

func (s *system) do(method, path, token string, body []byte, header map[string]string) (response, error) {
	req, err := http.NewRequest(method, s.info.APIURL+path, bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return response{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}, err
}

func (s *system) mustDo(method, path, token string, body []byte) response {
	s.t.Helper()
	r, err := s.do(method, path, token, body, nil)
	require.NoError(s.t, err)
	return r
}

// createSale creates an active sale and returns its id.
func (s *system) createSale(stock int, timeout time.Duration) string {
	s.t.Helper()
	return s.createSegmentedSale(stock, timeout, 1)
}

// createSegmentedSale creates an active sale whose Redis stock is split
// into that many segments, and returns its id.
func (s *system) createSegmentedSale(stock int, timeout time.Duration, segments int) string {
	s.t.Helper()
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Test sale", "price_cents": 990, "currency": "usd", "stock": stock,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(timeout / time.Second), "stock_segments": segments,
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(s.t, http.StatusCreated, r.status, "%s", r.body)
	return r.json(s.t)["id"].(string)
}

func (s *system) stock(saleID string) seckill.Stock {
	s.t.Helper()
	r := s.mustDo("GET", "/api/v1/sales/"+saleID, "", nil)
	require.Equal(s.t, http.StatusOK, r.status, "%s", r.body)
	var sale seckill.SaleJSON
	require.NoError(s.t, json.Unmarshal(r.body, &sale))
	return sale.Stock
}

func (s *system) order(orderID, user string) seckill.OrderJSON {
	s.t.Helper()
	r := s.mustDo("GET", "/api/v1/orders/"+orderID, s.token(user, false), nil)
	require.Equal(s.t, http.StatusOK, r.status, "%s", r.body)
	var o seckill.OrderJSON
	require.NoError(s.t, json.Unmarshal(r.body, &o))
	return o
}

// waitOrder polls until the order has status want.
func (s *system) waitOrder(orderID, user string, want seckill.OrderStatus, within time.Duration) seckill.OrderJSON {
	s.t.Helper()
	var o seckill.OrderJSON
	require.Eventually(s.t, func() bool {
		o = s.order(orderID, user)
		return o.Status == want
	}, within, 50*time.Millisecond, "order %s never became %s", orderID, want)
	return o
}

func (s *system) claim(saleID, user string) response {
	s.t.Helper()
	return s.mustDo("POST", "/api/v1/sales/"+saleID+"/claims", s.token(user, false), nil)
}

// webhook sends a Stripe-style event for orderID, signed now.
func (s *system) webhook(eventID string, typ seckill.PaymentEventType, orderID string, amount int64) response {
	s.t.Helper()
	return s.webhookFor(eventID, typ, orderID, "pi_"+eventID, amount)
}

// webhookFor is webhook for the PaymentIntent intentID.
func (s *system) webhookFor(eventID string, typ seckill.PaymentEventType, orderID, intentID string, amount int64) response {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{
		"id": eventID, "type": string(typ), "created": time.Now().Unix(),
		"data": map[string]any{"object": map[string]any{
			"id": intentID, "object": "payment_intent", "amount": amount, "currency": "usd",
			"metadata": map[string]string{"order_id": orderID},
		}},
	})
	r, err := s.do("POST", "/api/v1/payments/webhook", "", body, map[string]string{
		"Stripe-Signature": api.Sign(body, s.cfg.WebhookSecret, time.Now()),
	})
	require.NoError(s.t, err)
	return r
}

// dbStock reads the authoritative split.
func (s *system) dbStock(saleID string) seckill.Stock {
	s.t.Helper()
	id, err := strconv.ParseInt(saleID, 10, 64)
	require.NoError(s.t, err)
	sale, err := s.store.Sale(context.Background(), id)
	require.NoError(s.t, err)
	n, ok, err := s.rstore.Remaining(context.Background(), id)
	require.NoError(s.t, err)
	require.True(s.t, ok, "sale %s not warmed", saleID)
	sale.Stock.Remaining = n
	return sale.Stock
}

func (s *system) requireSplit(saleID string, remaining, available, locked, sold int64) {
	s.t.Helper()
	st := s.stock(saleID)
	require.Equal(s.t, seckill.Stock{Total: st.Total, Remaining: remaining, Available: available, Locked: locked, Sold: sold}, st,
		"stock of sale %s", saleID)
	require.Equal(s.t, st.Total, st.Available+st.Locked+st.Sold)
}

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

func assertEventually(t *testing.T, cond func() bool, within time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// diagnose logs where a sale's claims stand: stock, outbox and workflows.
func (s *system) diagnose(saleID string) {
	ctx := context.Background()
	keys := s.rstore.SaleKeys(mustInt(s.t, saleID))
	s.t.Logf("db+redis stock: %+v", s.dbStock(saleID))
	xlen, _ := s.redis.XLen(ctx, keys.Outbox).Result()
	pending, _ := s.redis.XPending(ctx, keys.Outbox, "relay").Result()
	s.t.Logf("outbox: len %d, pending %+v", xlen, pending)
	claims, _ := s.redis.HLen(ctx, keys.Claims).Result()
	s.t.Logf("claims: %d", claims)
	db, _ := s.store.SQLDB()
	rows, err := db.QueryContext(ctx, "SELECT status, count(*) FROM orders WHERE sale_id = $1 GROUP BY status", saleID)
	if err == nil {
		for rows.Next() {
			var st string
			var n int
			_ = rows.Scan(&st, &n)
			s.t.Logf("orders %s: %d", st, n)
		}
		_ = rows.Close()
	}
	resp, err := s.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("SaleId = %q", saleID), PageSize: 1000,
	})
	if err == nil {
		byStatus := map[string]int{}
		for _, e := range resp.GetExecutions() {
			byStatus[e.GetStatus().String()]++
		}
		s.t.Logf("workflows: %v", byStatus)
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// rawPost announces a body of size bytes and sends only its first 64 KiB
// and one byte, then reads the answer: a server that refuses large bodies
// from their Content-Length answers before the rest is sent.
func rawPost(t *testing.T, baseURL, path, token string, size int) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(baseURL, "http://"))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: seckill\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, token, size)
	require.NoError(t, err)
	_, _ = conn.Write(bytes.Repeat([]byte("a"), 64<<10+1))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// requireAudit waits (up to a minute) for the sale to be at rest and
// checks the invariants of docs/DESIGN.md.
func (s *system) requireAudit(saleID string) {
	s.t.Helper()
	a := &audit.Auditor{DB: s.store.Gorm(), Redis: s.rstore, Sagas: saga.New(s.temporal, saga.Options{TaskQueue: s.cfg.TaskQueue})}
	rep, err := a.Wait(context.Background(), mustInt(s.t, saleID), audit.Options{}, time.Minute)
	require.NoError(s.t, err)
	require.True(s.t, rep.AtRest && rep.OK(), "audit:\n%s", rep)
	s.t.Logf("audit:\n%s", rep)
}

// testConfig is the configuration of one test's system: its own database,
// Redis prefix and Temporal namespace on the shared server, dev secrets,
// quiet logs (SECKILL_TEST_LOG=1 shows them).
func testConfig(t *testing.T) app.Config {
	t.Helper()
	_, dsn := testenv.Store(t)
	_, prefix := testenv.Redis(t)
	cfg, err := app.FromEnv(func(string) string { return "" })
	require.NoError(t, err)
	cfg.WithDevSecrets()
	cfg.DatabaseURL, cfg.RedisURL, cfg.RedisPrefix = dsn, testenv.RedisURL(), prefix
	cfg.Namespace = namespace(t)
	cfg.TemporalAddress = shared.Address()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SECKILL_TEST_LOG") != "" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return cfg
}

// checkedClient is an HTTP client whose every exchange with the API is
// checked against the contract (api/openapi.yaml): an answer it does not
// describe fails t. base is the transport underneath (nil: the default).
func checkedClient(t *testing.T, timeout time.Duration, base http.RoundTripper) *http.Client {
	return &http.Client{Timeout: timeout, Transport: contract.Transport(t, base)}
}
