package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/redisstore"
)

// losingRedis is Redis that loses every key of the sale (a restart with no
// persistence, a Cluster primary lost with no replica) right after a join
// script answered: after the buyer is in line, before the API reads their
// place back (keepPlace's PlaceOf).
type losingRedis struct {
	*redisstore.Store
	t      *testing.T
	saleID int64
	lose   bool
}

func (r *losingRedis) Join(ctx context.Context, saleID int64, userID string, item seckill.Item, maxEntries int, orderID int64, terms seckill.Terms) (seckill.JoinResult, error) {
	res, err := r.Store.Join(ctx, saleID, userID, item, maxEntries, orderID, terms)
	if r.lose && err == nil {
		require.NoError(r.t, r.Store.DropAll(ctx))
	}
	return res, err
}

// Hostile review (issue 32, fourth) finding 1 (invariant 10): a join whose buyer Redis seated, and
// whose Redis lost the sale before keepPlace read the place back, is
// answered 201 WAITING while keepPlace takes "no place" for "served or
// gone" and drops the pending row. The re-warm rebuilds the line from the
// rows: the buyer told 201 is in no line.
func TestWaitlist_A201SurvivesARedisLossBetweenTheJoinAndThePlaceRead(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(ctx, r.rs.IDNodes(), log)
	require.NoError(t, err)
	lr := &losingRedis{Store: r.rs, t: t}
	r.srv = api.New(api.Config{Store: r.st, Redis: lr, Log: log, IDs: ids, Sagas: r.sagas, Delivery: r.delivery,
		JWTSecret: r.jwt, WebhookSecret: r.webhookSecret})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	annOrder := r.claim(t, saleID, "ann")
	r.write(t, annOrder, saleID, "ann")

	lr.lose = true
	a := r.do(t, "POST", path, "bob", false, nil)
	lr.lose = false
	if a.status != http.StatusCreated {
		return // a 503 promises nothing
	}
	require.Equal(t, "WAITING", a.body["status"], "%v", a.body)

	// The worker's re-warm (warmup.rewarm), from the database.
	snap, err := r.st.WarmSnapshot(ctx, saleID)
	require.NoError(t, err)
	claims := make([]seckill.ActiveClaim, len(snap.Claims))
	for i, c := range snap.Claims {
		claims[i] = seckill.ActiveClaim{UserID: c.UserID, OrderID: c.OrderID, Item: c.Item}
	}
	rows, err := r.st.WaitlistEntries(ctx, saleID)
	require.NoError(t, err)
	spec := seckill.WarmSpecOf(snap.Sale, snap.Units)
	spec.Restocks = snap.Restocks
	spec.LastPlace, err = r.st.WaitlistHighPlace(ctx, saleID)
	require.NoError(t, err)
	_, err = r.rs.RewarmRebuilding(ctx, spec, claims, nil, rows, seckill.TermsBySKU(*snap.Sale))
	require.NoError(t, err)

	ws, err := r.rs.WaitStateOf(ctx, saleID, "bob")
	require.NoError(t, err)
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ws.Waiting, "bob was answered 201 WAITING; after the Redis loss and the re-warm he waits nowhere "+
		"(row: %v, place %v)", ok, place)
}

// blockingDelivery is a saga signal that misses the webhook's request
// deadline on its first try (a loaded machine: the Temporal call returns
// only when the webhook's context expires), then is delivered.
type blockingDelivery struct {
	mu    sync.Mutex
	tries int
}

func (d *blockingDelivery) Deliver(ctx context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error) {
	d.mu.Lock()
	d.tries++
	first := d.tries == 1
	d.mu.Unlock()
	if first {
		<-ctx.Done()
		return "", fmt.Errorf("signal: %w: %w", ctx.Err(), seckill.ErrTemporal)
	}
	return seckill.OutcomeDelivered, nil
}

// Hostile review (issue 32, fourth) finding 3 (ed831a2): the dev provider's retry is meant for the
// press of Pay whose saga signal missed the request deadline. But the
// provider's own try has a deadline of the same length that started
// earlier: it gives up (an error, not a 503) before the webhook answers
// 503, and no try follows; the buyer is told 503 "try again" although
// the event is recorded, and a second press pays a second time.
func TestDevCheckout_RetriesASignalThatMissedTheDeadline(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(t.Context(), r.rs.IDNodes(), log)
	require.NoError(t, err)
	d := &blockingDelivery{}
	r.srv = api.New(api.Config{Store: r.st, Redis: r.rs, Log: log, IDs: ids, Sagas: r.sagas, Delivery: d,
		JWTSecret: r.jwt, WebhookSecret: r.webhookSecret, Dev: api.DevTools{Checkout: true}, RequestTimeout: 300 * time.Millisecond})
	saleID := r.createSale(t, 1)
	orderID := r.claim(t, saleID, "ann")
	r.write(t, orderID, saleID, "ann")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+"/dev/checkout/"+strconv.FormatInt(orderID, 10),
		bytes.NewReader([]byte(`{"outcome":"succeeded"}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token(t, "ann", false))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	time.Sleep(100 * time.Millisecond) // the webhook's first try ends
	d.mu.Lock()
	tries := d.tries
	d.mu.Unlock()
	require.Equal(t, http.StatusOK, resp.StatusCode, "one press of Pay whose signal missed the deadline once (%d tries reached the webhook's delivery)", tries)
}
