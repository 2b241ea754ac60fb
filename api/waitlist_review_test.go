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
	rewarmFromDatabase(t, r, saleID)

	ws, err := r.rs.WaitStateOf(ctx, saleID, "bob")
	require.NoError(t, err)
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ws.Waiting, "bob was answered 201 WAITING; after the Redis loss and the re-warm he waits nowhere "+
		"(row: %v, place %v)", ok, place)
}

// rewarmFromDatabase re-warms saleID's lost keys from the database as the
// worker does (warmup): the snapshot's units and claims, the waitlist's
// rows and the highest place given.
func rewarmFromDatabase(t *testing.T, r *handlerRig, saleID int64) {
	t.Helper()
	ctx := t.Context()
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
}
