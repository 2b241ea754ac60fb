package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/store"
)

// rejoinStore runs, once, a hook just before the leave's last step
// (DeleteLeftWaitlistEntry): the buyer's own join, made after the leave's
// Redis step took them out of line (a client that retried, a second tab).
type rejoinStore struct {
	*store.Store
	before func()
}

func (s *rejoinStore) DeleteLeftWaitlistEntry(ctx context.Context, saleID int64, userID string, place int64) error {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.Store.DeleteLeftWaitlistEntry(ctx, saleID, userID, place)
}

// Hostile review (issue 32, fifth): the leave's last step deleted the
// buyer's row whatever it held (pending or not). A join of the same buyer
// that lands between the leave's Redis step and that delete is seated
// anew, filled (its place in the row) and answered 201 WAITING; the
// leave's delete then removes the row. The buyer waits in Redis, told 201,
// with no row: the next Redis loss loses the place (invariant 10).
func TestWaitlist_ARejoinBetweenTheLeavesRedisStepAndItsDeleteKeepsItsPlace(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(ctx, r.rs.IDNodes(), log)
	require.NoError(t, err)
	rs := &rejoinStore{Store: r.st}
	r.srv = api.New(api.Config{Store: rs, Redis: r.rs, Log: log, IDs: ids, Sagas: r.sagas, Delivery: r.delivery,
		JWTSecret: r.jwt, WebhookSecret: r.webhookSecret})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	annOrder := r.claim(t, saleID, "ann")
	r.write(t, annOrder, saleID, "ann")

	first := r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusCreated, first.status, "%v", first.body)

	var again answer
	rs.before = func() { again = r.do(t, "POST", path, "bob", false, nil) }
	left := r.do(t, "DELETE", path+"/me", "bob", false, nil)
	require.Equal(t, http.StatusNoContent, left.status, "%v", left.body)
	require.Equal(t, http.StatusCreated, again.status, "%v", again.body)
	require.Equal(t, "WAITING", again.body["status"])

	ws, err := r.rs.WaitStateOf(ctx, saleID, "bob")
	require.NoError(t, err)
	require.True(t, ws.Waiting, "bob's second join was answered 201 WAITING")
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ok && place != nil, "bob waits in Redis, answered 201, but no row keeps his place (row %v, place %v): "+
		"the leave's delete removed the row his later join filled", ok, place)

	// And so a Redis loss and the worker's re-warm lose him.
	require.NoError(t, r.rs.DropAll(ctx))
	rewarmFromDatabase(t, r, saleID)
	ws, err = r.rs.WaitStateOf(ctx, saleID, "bob")
	require.NoError(t, err)
	require.True(t, ws.Waiting, "bob, answered 201 WAITING, waits nowhere after the re-warm")
}
