package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// The handlers for sales, orders, the webhook and the waitlist, on the
// real database and Redis, with Temporal and payment delivery replaced by
// fakes that record what the API asked of them: what each handler answers,
// and what it changes, without a Temporal server.

// fakeSagas is Temporal as the API sees it.
type fakeSagas struct {
	mu        sync.Mutex
	cancels   []seckill.SagaInput
	cancelErr error
	healthErr error
}

func (f *fakeSagas) Cancel(_ context.Context, in seckill.SagaInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancelErr != nil {
		return f.cancelErr
	}
	f.cancels = append(f.cancels, in)
	return nil
}

// StartDraw records nothing: the handler tests need no draw to run (the
// app package's end-to-end tests run real ones).
func (f *fakeSagas) StartDraw(context.Context, seckill.DrawInput) error { return nil }

func (f *fakeSagas) CheckHealth(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.healthErr
}

func (f *fakeSagas) set(cancelErr, healthErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelErr, f.healthErr = cancelErr, healthErr
}

func (f *fakeSagas) cancelled() []seckill.SagaInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seckill.SagaInput(nil), f.cancels...)
}

// delivered is one payment event handed to fakeDelivery.
type delivered struct {
	ev      seckill.PaymentEvent
	orderID int64
}

// fakeDelivery is payment delivery: it answers outcome, or err.
type fakeDelivery struct {
	mu      sync.Mutex
	got     []delivered
	outcome seckill.PaymentOutcome
	err     error
}

func (f *fakeDelivery) Deliver(_ context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, delivered{ev, orderID})
	return f.outcome, f.err
}

func (f *fakeDelivery) answer(outcome seckill.PaymentOutcome, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcome, f.err = outcome, err
}

func (f *fakeDelivery) calls() []delivered {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivered(nil), f.got...)
}

// handlerRig is one API on a database and Redis prefix of its own.
type handlerRig struct {
	srv                *api.Server
	st                 *store.Store
	dsn                string // st's database
	rs                 *redisstore.Store
	sagas              *fakeSagas
	delivery           *fakeDelivery
	jwt, webhookSecret []byte
}

// newHandlerRig serves cfg, with cfg.IDs when set (else a generator of
// its own).
func newHandlerRig(t *testing.T, cfg api.Config) *handlerRig {
	t.Helper()
	st, dsn := testenv.Store(t)
	rs := testenv.RedisStore(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if cfg.IDs == nil {
		ids, err := idgen.New(context.Background(), rs.IDNodes(), log)
		require.NoError(t, err)
		cfg.IDs = ids
	}
	r := &handlerRig{st: st, dsn: dsn, rs: rs, sagas: &fakeSagas{}, delivery: &fakeDelivery{outcome: seckill.OutcomeDelivered},
		jwt: []byte("handler-jwt-secret"), webhookSecret: []byte("handler-webhook-secret")}
	if cfg.Store == nil { // else the test's, which may wrap r.st
		cfg.Store = st
	}
	cfg.Redis, cfg.Log = rs, log
	cfg.Sagas, cfg.Delivery, cfg.JWTSecret, cfg.WebhookSecret = r.sagas, r.delivery, r.jwt, r.webhookSecret
	r.srv = api.New(cfg)
	return r
}

// answer is an HTTP answer with its JSON body decoded.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	list   []map[string]any
}

func (a answer) code() string { s, _ := a.body["code"].(string); return s }

func (r *handlerRig) token(t *testing.T, user string, admin bool) string {
	t.Helper()
	tok, err := auth.SignToken(r.jwt, user, admin, time.Hour)
	require.NoError(t, err)
	return tok
}

// do sends method path with body (JSON, or nil) as user ("" for none).
func (r *handlerRig) do(t *testing.T, method, path, user string, admin bool, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+r.token(t, user, admin))
	}
	return r.send(t, req)
}

func (r *handlerRig) send(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp := contract.Test(t, r.srv.App(), req)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 && raw[0] == '[' {
		require.NoError(t, json.Unmarshal(raw, &a.list), "%s", raw)
	} else if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &a.body), "%s", raw)
	}
	return a
}

// createSale creates a sale open since a minute ago and returns its id.
func (r *handlerRig) createSale(t *testing.T, stock int64) int64 {
	t.Helper()
	now := time.Now().UTC()
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "handlers", "price_cents": 990, "stock": stock, "payment_timeout_seconds": 600,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	id, err := strconv.ParseInt(a.body["id"].(string), 10, 64)
	require.NoError(t, err)
	return id
}

// claim claims a unit of saleID for user and returns the order id.
func (r *handlerRig) claim(t *testing.T, saleID int64, user string) int64 {
	t.Helper()
	a := r.do(t, "POST", "/api/v1/sales/"+strconv.FormatInt(saleID, 10)+"/claims", user, false, nil)
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	id, err := strconv.ParseInt(a.body["order_id"].(string), 10, 64)
	require.NoError(t, err)
	return id
}

// write is the saga's first step: the admitted order gets its row.
func (r *handlerRig) write(t *testing.T, orderID, saleID int64, user string) *seckill.Order {
	t.Helper()
	// With the pay_by fixed at admission (Redis' clock), as the relay passes
	// it: one derived from the id's time may differ by milliseconds.
	adm, ok, err := r.rs.Admission(context.Background(), orderID, []int64{saleID})
	require.NoError(t, err)
	require.True(t, ok, "order %d was admitted", orderID)
	o, _, err := r.st.StartOrder(context.Background(), store.NewOrder{ID: orderID, SaleID: saleID, UserID: user, CreatedAt: idgen.Time(orderID), PayBy: adm.PayBy})
	require.NoError(t, err)
	return o
}

func orderPath(id int64) string { return "/api/v1/orders/" + strconv.FormatInt(id, 10) }

func TestSales_AnAdminCreatesASaleEveryoneReadsIt(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	now := time.Now().UTC()
	valid := map[string]any{"name": "Lamp", "price_cents": 1500, "stock": 7, "stock_segments": 2,
		"starts_at": now.Add(time.Hour).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339)}

	require.Equal(t, http.StatusUnauthorized, r.do(t, "POST", "/api/v1/sales", "", false, valid).status)
	a := r.do(t, "POST", "/api/v1/sales", "buyer", false, valid)
	require.Equal(t, http.StatusForbidden, a.status)
	require.Equal(t, "FORBIDDEN", a.code())
	bad := map[string]any{"name": "Lamp", "price_cents": 1500, "stock": 7,
		"starts_at": now.Add(2 * time.Hour).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339)}
	a = r.do(t, "POST", "/api/v1/sales", "admin", true, bad)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "INVALID_REQUEST", a.code())
	sales, err := r.st.Sales(context.Background(), 10, 0)
	require.NoError(t, err)
	require.Empty(t, sales, "a refused sale is not written")

	a = r.do(t, "POST", "/api/v1/sales", "admin", true, valid)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	id := a.body["id"].(string)
	require.Equal(t, "SCHEDULED", a.body["state"])
	require.EqualValues(t, 2, a.body["stock_segments"])
	saleID, _ := strconv.ParseInt(id, 10, 64)
	left, warmed, err := r.rs.Remaining(context.Background(), saleID)
	require.NoError(t, err)
	require.True(t, warmed, "a created sale is loaded into Redis with its row")
	require.EqualValues(t, 7, left)

	a = r.do(t, "GET", "/api/v1/sales/"+id, "", false, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "Lamp", a.body["name"])
	require.EqualValues(t, 7, a.body["stock"].(map[string]any)["remaining"])
	a = r.do(t, "GET", "/api/v1/sales", "", false, nil)
	require.Equal(t, http.StatusOK, a.status)
	listed := a.body["sales"].([]any)
	require.Len(t, listed, 1)
	require.Equal(t, id, listed[0].(map[string]any)["id"])
	require.Nil(t, a.body["next_before"], "one page")
	for q, field := range map[string]string{"limit=abc": "limit", "limit=0": "limit", "limit=201": "limit", "limit=1.5": "limit", "before=x": "before"} {
		a = r.do(t, "GET", "/api/v1/sales?"+q, "", false, nil)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: a bad page is refused, never ignored", q)
		require.Equal(t, "INVALID_REQUEST", a.code(), q)
		require.Contains(t, a.body["detail"], field, q)
	}
	a = r.do(t, "GET", "/api/v1/sales?limit=1", "", false, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Len(t, a.body["sales"].([]any), 1)

	for _, path := range []string{"/api/v1/sales/999999", "/api/v1/sales/007", "/api/v1/sales/x"} {
		a = r.do(t, "GET", path, "", false, nil)
		require.Equal(t, http.StatusNotFound, a.status, path)
		require.Equal(t, "SALE_NOT_FOUND", a.code(), path)
	}

	require.Equal(t, http.StatusForbidden, r.do(t, "GET", "/api/v1/sales/"+id+"/stats", "buyer", false, nil).status)
	a = r.do(t, "GET", "/api/v1/sales/"+id+"/stats", "admin", true, nil)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, id, a.body["sale_id"])
}

// A claim whose admission record Redis lost (its owner's claim kept) is
// answered QUEUED with the pay_by its saga's row will hold, never null:
// the admission's time and the sale's payment timeout (found by the
// contract's check of the end-to-end reconcile test).
func TestOrders_AQueuedOrderWithoutItsAdmissionHasItsPayBy(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createSale(t, 5)
	id := r.claim(t, saleID, "ann")
	opts, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer func() { _ = rdb.Close() }()
	require.NoError(t, rdb.HDel(t.Context(), r.rs.SaleKeys(saleID).Admitted, strconv.FormatInt(id, 10)).Err())

	a := r.do(t, "GET", orderPath(id), "ann", false, nil)

	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, "QUEUED", a.body["status"])
	want := idgen.Time(id).Add(600 * time.Second).UTC()
	got, err := time.Parse(time.RFC3339Nano, a.body["pay_by"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, want, got, time.Millisecond)
}

func TestOrders_AnAdmittedOrderIsItsOwnersFromTheFirstAnswer(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createSale(t, 5)
	id := r.claim(t, saleID, "ann")

	// Not written yet: answered QUEUED from its admission, pay_by fixed.
	a := r.do(t, "GET", orderPath(id), "ann", false, nil)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, "QUEUED", a.body["status"])
	require.NotEmpty(t, a.body["pay_by"])
	payBy := a.body["pay_by"]
	for _, who := range []string{"bob"} {
		a = r.do(t, "GET", orderPath(id), who, false, nil)
		require.Equal(t, http.StatusNotFound, a.status, "another buyer cannot see it")
		require.Equal(t, "ORDER_NOT_FOUND", a.code())
	}
	require.Equal(t, http.StatusOK, r.do(t, "GET", orderPath(id), "admin", true, nil).status)
	a = r.do(t, "GET", "/api/v1/orders?sale_id="+strconv.FormatInt(saleID, 10), "ann", false, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Len(t, a.list, 1)
	require.Equal(t, "QUEUED", a.list[0]["status"])

	// Written by its saga: the row is the answer, with the same pay_by,
	// listed once.
	r.write(t, id, saleID, "ann")
	a = r.do(t, "GET", orderPath(id), "ann", false, nil)
	require.Equal(t, "AWAITING_PAYMENT", a.body["status"])
	require.Equal(t, payBy, a.body["pay_by"])
	a = r.do(t, "GET", "/api/v1/orders?sale_id="+strconv.FormatInt(saleID, 10), "ann", false, nil)
	require.Len(t, a.list, 1)
	require.Equal(t, "AWAITING_PAYMENT", a.list[0]["status"])

	a = r.do(t, "GET", "/api/v1/orders?sale_id="+strconv.FormatInt(saleID, 10)+"&user_id=ann", "bob", false, nil)
	require.Equal(t, http.StatusBadRequest, a.status, "only an admin lists another's orders")
	a = r.do(t, "GET", "/api/v1/orders?sale_id="+strconv.FormatInt(saleID, 10)+"&user_id=ann", "admin", true, nil)
	require.Len(t, a.list, 1)
	a = r.do(t, "GET", "/api/v1/orders", "ann", false, nil)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "INVALID_REQUEST", a.code())
	for _, path := range []string{orderPath(id + 1), "/api/v1/orders/0" + strconv.FormatInt(id, 10), "/api/v1/orders/abc"} {
		a = r.do(t, "GET", path, "ann", false, nil)
		require.Equal(t, http.StatusNotFound, a.status, path)
		require.Equal(t, "ORDER_NOT_FOUND", a.code(), path)
	}
}

func TestOrders_CancelAsksTheOrdersSagaOnlyWhileItIsUnpaid(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createSale(t, 5)
	queued := r.claim(t, saleID, "ann")

	// Another buyer, or an admin, cannot cancel it; nothing is asked.
	require.Equal(t, http.StatusNotFound, r.do(t, "POST", orderPath(queued)+"/cancel", "bob", false, nil).status)
	require.Equal(t, http.StatusNotFound, r.do(t, "POST", orderPath(queued)+"/cancel", "admin", true, nil).status)
	require.Empty(t, r.sagas.cancelled())

	// QUEUED: the saga is asked (signal-with-start), with the admission's
	// terms.
	a := r.do(t, "POST", orderPath(queued)+"/cancel", "ann", false, nil)
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	require.Equal(t, "QUEUED", a.body["status"])
	got := r.sagas.cancelled()
	require.Len(t, got, 1)
	require.Equal(t, queued, got[0].OrderID)
	require.Equal(t, saleID, got[0].SaleID)
	require.Equal(t, "ann", got[0].UserID)
	require.EqualValues(t, 990, got[0].AmountCents)
	require.False(t, got[0].PayBy.IsZero(), "the saga keeps the pay_by fixed at admission")

	// The saga finished meanwhile: 409, not a 5xx.
	r.sagas.set(seckill.ErrOrderDecided, nil)
	a = r.do(t, "POST", orderPath(queued)+"/cancel", "ann", false, nil)
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, "ORDER_NOT_CANCELLABLE", a.code())
	// Temporal unreachable: 503 with Retry-After, to try again.
	r.sagas.set(errors.New("connection refused"), nil)
	a = r.do(t, "POST", orderPath(queued)+"/cancel", "ann", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, "UNAVAILABLE", a.code())
	require.NotEmpty(t, a.header.Get("Retry-After"))
	r.sagas.set(nil, nil)

	// A CLOSED order is not asked about.
	o := r.write(t, queued, saleID, "ann")
	_, err := r.st.CloseUnpaid(context.Background(), o.ID, seckill.CloseCancelled, "", "", time.Now())
	require.NoError(t, err)
	a = r.do(t, "POST", orderPath(queued)+"/cancel", "ann", false, nil)
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, "ORDER_NOT_CANCELLABLE", a.code())
	require.Len(t, r.sagas.cancelled(), 1)
}

// Cancelling an order the draw admitted before the relay started its saga
// starts the saga as the draw's, as the relay's input would have (the
// order row must say the draw admitted it: docs/DESIGN.md, invariant 9),
// and so does a cancel once the row is written; an ordinary claim's
// cancel does not.
func TestOrders_CancelOfAnOrderTheDrawAdmittedStartsItsSagaAsTheDraws(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	ctx := context.Background()
	saleID := r.createSale(t, 5)
	won := idgen.At(time.Now().Add(-time.Second)) // never minted by the rig's generator
	res, err := r.rs.ForDraw().Claim(ctx, saleID, "ann", won, "",
		seckill.Terms{PaymentTimeout: 10 * time.Minute, UnitPriceCents: 990, Currency: "usd"}, seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	bought := r.claim(t, saleID, "bob")

	for user, id := range map[string]int64{"ann": won, "bob": bought} {
		a := r.do(t, "POST", orderPath(id)+"/cancel", user, false, nil)
		require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
		require.Equal(t, "QUEUED", a.body["status"])
	}
	_, _, err = r.st.StartOrder(ctx, store.NewOrder{ID: won, SaleID: saleID, UserID: "ann",
		CreatedAt: idgen.Time(won), PayBy: res.PayBy, Drawn: true})
	require.NoError(t, err)
	a := r.do(t, "POST", orderPath(won)+"/cancel", "ann", false, nil)
	require.Equal(t, http.StatusAccepted, a.status, "%v", a.body)
	require.Equal(t, "AWAITING_PAYMENT", a.body["status"])

	drawn := map[int64][]bool{}
	for _, in := range r.sagas.cancelled() {
		drawn[in.OrderID] = append(drawn[in.OrderID], in.Drawn)
	}
	require.Equal(t, map[int64][]bool{won: {true, true}, bought: {false}}, drawn)
}

// hook posts a Stripe-style event for orderID signed with the rig's
// secret (or with secret when it is not nil).
func (r *handlerRig) hook(t *testing.T, ev seckill.PaymentEvent, orderID int64, secret []byte) answer {
	t.Helper()
	if secret == nil {
		secret = r.webhookSecret
	}
	body := api.EventBody(ev, orderID, time.Now())
	req := httptest.NewRequest("POST", "/api/v1/payments/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", api.Sign(body, secret, time.Now()))
	return r.send(t, req)
}

func paid(id string, amount int64) seckill.PaymentEvent {
	return seckill.PaymentEvent{EventID: id, Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_" + id, AmountCents: amount, Currency: "usd"}
}

func TestWebhook_RecordsEachEventOnceThenDeliversIt(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	ctx := context.Background()
	saleID := r.createSale(t, 5)
	id := r.claim(t, saleID, "ann")

	// A bad signature changes nothing.
	a := r.hook(t, paid("evt_forged", 990), id, []byte("not-the-secret"))
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "INVALID_SIGNATURE", a.code())
	_, err := r.st.PaymentEvent(ctx, "evt_forged")
	require.ErrorIs(t, err, seckill.ErrNotFound)
	require.Empty(t, r.delivery.calls())

	// Delivered: recorded, handed over once with its order.
	a = r.hook(t, paid("evt_1", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, "DELIVERED", a.body["outcome"])
	calls := r.delivery.calls()
	require.Len(t, calls, 1)
	require.Equal(t, id, calls[0].orderID)
	require.Equal(t, "evt_1", calls[0].ev.EventID)
	require.EqualValues(t, 990, calls[0].ev.AmountCents)
	rec, err := r.st.PaymentEvent(ctx, "evt_1")
	require.NoError(t, err)
	require.False(t, calls[0].ev.ReceivedAt.IsZero(), "the saga judges lateness by when seckill received it")
	require.WithinDuration(t, rec.ReceivedAt, calls[0].ev.ReceivedAt, time.Millisecond)

	// The saga cannot take it yet: recorded, 200 RECEIVED, left for
	// reconciliation to deliver.
	r.delivery.answer("", seckill.ErrPaymentNotYet)
	a = r.hook(t, paid("evt_2", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "RECEIVED", a.body["outcome"])
	rec, err = r.st.PaymentEvent(ctx, "evt_2")
	require.NoError(t, err)
	require.Equal(t, seckill.OutcomeReceived, rec.Outcome)
	require.Nil(t, rec.DeliveredAt)

	// Delivery failing: recorded, so 200 RECEIVED as docs/API.md
	// promises, and left undelivered for reconciliation; a redelivery by
	// the provider delivers the same event.
	r.delivery.answer("", errors.New("temporal unreachable"))
	a = r.hook(t, paid("evt_3", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	require.Equal(t, "RECEIVED", a.body["outcome"])
	rec, err = r.st.PaymentEvent(ctx, "evt_3")
	require.NoError(t, err)
	require.Equal(t, seckill.OutcomeReceived, rec.Outcome)
	require.Nil(t, rec.DeliveredAt, "undelivered: reconciliation finds it")
	r.delivery.answer(seckill.OutcomeDelivered, nil)
	n := len(r.delivery.calls())
	a = r.hook(t, paid("evt_3", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Len(t, r.delivery.calls(), n+1, "the retry is delivered")

	// A decided event sent again is answered from its record, not
	// delivered twice.
	require.NoError(t, r.st.SetPaymentOutcome(ctx, "evt_1", seckill.OutcomeApplied, true))
	n = len(r.delivery.calls())
	a = r.hook(t, paid("evt_1", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "APPLIED", a.body["outcome"])
	require.Len(t, r.delivery.calls(), n)

	// An event that names no order is kept for operators, not delivered.
	a = r.hook(t, paid("evt_orphan", 990), 0, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "UNKNOWN_ORDER", a.body["outcome"])
	require.Len(t, r.delivery.calls(), n)

	// Not an event at all.
	body := []byte(`{"id":"evt_x"}`)
	req := httptest.NewRequest("POST", "/api/v1/payments/webhook", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", api.Sign(body, r.webhookSecret, time.Now()))
	a = r.send(t, req)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "MALFORMED_EVENT", a.code())
}

func TestUnavailable_WhilePostgresRefusesConnectionsTheWebhookAndAnOrderReadAnswer503(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createSale(t, 5)
	id := r.claim(t, saleID, "ann")
	r.write(t, id, saleID, "ann")
	allow := testenv.RefuseConnections(t, r.dsn)

	hook := r.hook(t, paid("evt_down", 990), id, nil)
	read := r.do(t, "GET", orderPath(id), "ann", false, nil)

	for name, a := range map[string]answer{"webhook": hook, "order read": read} {
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s: %v", name, a.body)
		require.Equal(t, "UNAVAILABLE", a.code(), "%s", name)
		require.NotEmpty(t, a.header.Get("Retry-After"), "%s", name)
		detail, _ := a.body["detail"].(string)
		require.NotContains(t, detail, "SQLSTATE", "%s: the cause is logged, not shown", name)
		require.NotContains(t, detail, "postgres", "%s: the cause is logged, not shown", name)
	}
	require.Empty(t, r.delivery.calls(), "an event not recorded is not delivered")

	// The provider retries a non-2xx: once PostgreSQL answers again, the
	// retry records the event and delivers it. (A retry may still meet a
	// connection PostgreSQL ended, and be answered 503 again: the
	// provider then retries once more.)
	allow()
	for range 5 {
		if hook = r.hook(t, paid("evt_down", 990), id, nil); hook.status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, hook.status, "%v", hook.body)
	require.Equal(t, "DELIVERED", hook.body["outcome"])
	require.Len(t, r.delivery.calls(), 1)
	_, err := r.st.PaymentEvent(context.Background(), "evt_down")
	require.NoError(t, err)
}

func TestWaitlist_ABuyerWaitsInLineThenLeaves(t *testing.T) {
	r := newHandlerRig(t, api.Config{WaitlistMax: 2})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"

	// A unit still in stock goes to the joiner at once.
	a := r.do(t, "POST", path, "ann", false, nil)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "ADMITTED", a.body["status"])
	require.Equal(t, "/api/v1/orders/"+a.body["order_id"].(string), a.header.Get("Location"))
	a = r.do(t, "POST", path, "ann", false, nil)
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, "ALREADY_CLAIMED", a.code())

	// Sold out: the next buyers wait in the order they came, up to the bound.
	for i, user := range []string{"bob", "cat"} {
		a = r.do(t, "POST", path, user, false, nil)
		require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
		require.Equal(t, "WAITING", a.body["status"])
		require.EqualValues(t, i+1, a.body["position"])
	}
	a = r.do(t, "POST", path, "dan", false, nil)
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, "WAITLIST_FULL", a.code())
	a = r.do(t, "POST", path, "cat", false, nil)
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, "ALREADY_WAITING", a.code())
	require.EqualValues(t, 2, a.body["position"])

	a = r.do(t, "GET", path+"/me", "cat", false, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.EqualValues(t, 2, a.body["position"])
	a = r.do(t, "GET", path+"/me", "ann", false, nil)
	require.Equal(t, "ADMITTED", a.body["status"])

	// bob leaves: cat moves up, bob is no longer waiting.
	require.Equal(t, http.StatusNoContent, r.do(t, "DELETE", path+"/me", "bob", false, nil).status)
	a = r.do(t, "GET", path+"/me", "bob", false, nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, "NOT_WAITING", a.code())
	a = r.do(t, "GET", path+"/me", "cat", false, nil)
	require.EqualValues(t, 1, a.body["position"])

	a = r.do(t, "POST", "/api/v1/sales/999999/waitlist", "eve", false, nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Equal(t, "SALE_NOT_FOUND", a.code())
}

// A sold-out sale shows its line and the line's bound, so a shop offers
// no join that would be refused; the refusal says the bound in words.
func TestWaitlist_AFullLineShowsOnTheSoldOutSale(t *testing.T) {
	for _, tc := range []struct {
		max    int
		detail string
	}{
		{1, "the waitlist holds 1 buyer, its most"},
		{2, "the waitlist holds 2 buyers, its most"},
	} {
		t.Run(strconv.Itoa(tc.max), func(t *testing.T) {
			r := newHandlerRig(t, api.Config{WaitlistMax: tc.max})
			sale := "/api/v1/sales/" + strconv.FormatInt(r.createSale(t, 1), 10)
			a := r.do(t, "GET", sale, "", false, nil)
			require.Equal(t, "ACTIVE", a.body["state"])
			require.NotContains(t, a.body, "waitlist", "a join is admitted while a unit remains, whatever the line")

			require.Equal(t, http.StatusAccepted, r.do(t, "POST", sale+"/claims", "ann", false, nil).status)
			a = r.do(t, "GET", sale, "", false, nil)
			require.Equal(t, "SOLD_OUT", a.body["state"])
			require.Equal(t, map[string]any{"waiting": 0.0, "max": float64(tc.max)}, a.body["waitlist"])
			for i := range tc.max {
				a = r.do(t, "POST", sale+"/waitlist", "waiter-"+strconv.Itoa(i), false, nil)
				require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
			}
			a = r.do(t, "GET", sale, "", false, nil)
			require.Equal(t, map[string]any{"waiting": float64(tc.max), "max": float64(tc.max)}, a.body["waitlist"])

			a = r.do(t, "POST", sale+"/waitlist", "late", false, nil)
			require.Equal(t, http.StatusConflict, a.status)
			require.Equal(t, "WAITLIST_FULL", a.code())
			require.Equal(t, tc.detail, a.body["detail"])
		})
	}
}

func TestReadyz_NotReadyWhileTemporalIsUnreachable(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	a := r.do(t, "GET", "/readyz", "", false, nil)
	require.Equal(t, http.StatusOK, a.status)
	r.sagas.set(nil, errors.New("no frontend"))
	a = r.do(t, "GET", "/readyz", "", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, "unavailable", a.body["temporal"])
	require.Equal(t, "ok", a.body["redis"])
}

// notReady is an identity provider whose keys are not loaded yet.
type notReady struct{}

func (notReady) Verify(context.Context, string) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrNotReady
}
func (notReady) Ready() error { return auth.ErrNotReady }

func TestAuth_EveryRefusalCarriesTheBearerChallenge(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	saleID := r.createSale(t, 5)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/claims"
	expired, err := auth.SignToken(r.jwt, "ann", false, time.Nanosecond)
	require.NoError(t, err)
	time.Sleep(time.Second)
	other, err := auth.SignToken([]byte("another secret"), "ann", false, time.Hour)
	require.NoError(t, err)
	for name, header := range map[string]string{
		"none": "", "not bearer": "Basic YWxpY2U6eA==", "empty bearer": "Bearer ", "garbage": "Bearer abc",
		"expired": "Bearer " + expired, "another secret": "Bearer " + other,
	} {
		req := httptest.NewRequest("POST", path, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		a := r.send(t, req)
		require.Equal(t, http.StatusUnauthorized, a.status, name)
		require.Equal(t, "UNAUTHENTICATED", a.code(), name)
		require.Equal(t, `Bearer error="invalid_token"`, a.header.Get("WWW-Authenticate"), name)
	}
	a := r.do(t, "POST", "/api/v1/sales", "buyer", false, map[string]any{})
	require.Equal(t, http.StatusForbidden, a.status, "a valid token without the admin claim")
	require.Empty(t, a.header.Get("WWW-Authenticate"))
}

func TestAuth_UntilTheProvidersKeysAreLoadedSignInWaits(t *testing.T) {
	r := newHandlerRig(t, api.Config{Auth: notReady{}})
	a := r.do(t, "GET", "/readyz", "", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, "unavailable", a.body["auth"])
	a = r.do(t, "POST", "/api/v1/sales/1/claims", "ann", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "not a 401: the token may be good")
	require.Equal(t, "UNAVAILABLE", a.code())
	require.NotEmpty(t, a.header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, r.do(t, "GET", "/api/v1/sales", "", false, nil).status, "public reads need no sign-in")
}
