package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// gatedRedis answers the first claim SALE_NOT_STARTED (as claim.lua does
// to a request whose script ran a moment before starts_at), but only once
// told to: the request holds its proof of work meanwhile.
type gatedRedis struct {
	*redisstore.Store
	first   chan struct{}
	release chan struct{}
	calls   int
}

func (g *gatedRedis) Claim(ctx context.Context, saleID int64, userID string, orderID int64, key string, terms seckill.Terms, item seckill.Item) (seckill.ClaimResult, error) {
	g.calls++
	if g.calls == 1 {
		close(g.first)
		<-g.release
		return seckill.ClaimResult{Outcome: seckill.SaleNotStarted}, nil
	}
	return g.Store.Claim(ctx, saleID, userID, orderID, key, terms, item)
}

// Two copies of one claim (same Idempotency-Key, same proof) straddling
// starts_at: the first takes the proof and is answered SALE_NOT_STARTED,
// the second (ProofRetried) is admitted; the first then gives the proof
// back. The proof must stay spent: it bought a decision, and once the
// order closed it would buy a second admission.
func TestProof_GivenBackAfterItsTwinDecidedStaysSpent(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(context.Background(), rs.IDNodes(), log)
	require.NoError(t, err)
	g := &gatedRedis{Store: rs, first: make(chan struct{}), release: make(chan struct{})}
	r := &handlerRig{st: st, rs: rs, sagas: &fakeSagas{}, delivery: &fakeDelivery{outcome: seckill.OutcomeDelivered},
		jwt: []byte("handler-jwt-secret"), webhookSecret: []byte("handler-webhook-secret")}
	r.srv = api.New(api.Config{Store: st, Redis: g, Log: log, IDs: ids, Sagas: r.sagas, Delivery: r.delivery,
		JWTSecret: r.jwt, WebhookSecret: r.webhookSecret})

	saleID := r.createPoWSale(t, 10)
	proof, _ := solveChallenge(t, r.challengeFor(t, saleID, "ann"))
	h := map[string]string{api.HeaderProof: proof, api.HeaderIdempotencyKey: "k1"}

	done := make(chan answer)
	go func() { done <- r.post(t, claimsPath(saleID), "ann", h) }()
	<-g.first // A holds the proof, its script "ran before the start"
	b := r.post(t, claimsPath(saleID), "ann", h)
	require.Equal(t, http.StatusAccepted, b.status, "%v", b.body)
	close(g.release)
	a := <-done
	require.Equal(t, http.StatusConflict, a.status, "%v", a.body)

	// The order closes (cancelled, timed out): its saga releases the claim.
	orderID, err := strconv.ParseInt(b.body["order_id"].(string), 10, 64)
	require.NoError(t, err)
	_, err = rs.Release(t.Context(), saleID, "ann", orderID, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{77}, Terms: seckill.Terms{}})
	require.NoError(t, err)

	c := r.post(t, claimsPath(saleID), "ann", map[string]string{api.HeaderProof: proof})
	require.Equal(t, http.StatusForbidden, c.status, "the proof bought a decision already; got %v", c.body)
}
