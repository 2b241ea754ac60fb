package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// joinLog is the database and Redis of a join, in the order the join
// asked them; each may be told to fail or to lose the buyer's row.
type joinLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *joinLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *joinLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// pendingStore is the database, its waitlist writes logged. failPend fails
// the pending write; leaveFirst deletes the buyer's row just before the
// fill, as a concurrent leave would.
type pendingStore struct {
	*store.Store
	log        *joinLog
	failPend   bool
	leaveFirst bool
}

func (s *pendingStore) PendWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) error {
	s.log.add("pend")
	if s.failPend {
		return errors.New("connection reset by peer")
	}
	return s.Store.PendWaitlistEntry(ctx, e)
}

func (s *pendingStore) FillWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) (bool, error) {
	s.log.add("fill")
	if s.leaveFirst {
		if err := s.Store.DeleteWaitlistEntry(ctx, e.SaleID, e.UserID); err != nil {
			return false, err
		}
	}
	return s.Store.FillWaitlistEntry(ctx, e)
}

// joinRedis is Redis, its joins logged; failJoin fails them after the
// script ran (its answer lost).
type joinRedis struct {
	*redisstore.Store
	log      *joinLog
	failJoin bool
}

func (r *joinRedis) Join(ctx context.Context, saleID int64, userID string, item seckill.Item, maxEntries int, orderID int64, terms seckill.Terms) (seckill.JoinResult, error) {
	r.log.add("join")
	res, err := r.Store.Join(ctx, saleID, userID, item, maxEntries, orderID, terms)
	if r.failJoin && err == nil {
		return seckill.JoinResult{}, errors.New("i/o timeout")
	}
	return res, err
}

// newJoinRig is a handler rig whose server's database and Redis log the
// join's steps.
func newJoinRig(t *testing.T, cfg api.Config) (*handlerRig, *pendingStore, *joinRedis, *joinLog) {
	t.Helper()
	r := newHandlerRig(t, api.Config{})
	calls := &joinLog{}
	ps := &pendingStore{Store: r.st, log: calls}
	jr := &joinRedis{Store: r.rs, log: calls}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(t.Context(), r.rs.IDNodes(), log)
	require.NoError(t, err)
	cfg.Store, cfg.Redis, cfg.Log, cfg.IDs = ps, jr, log, ids
	cfg.Sagas, cfg.Delivery, cfg.JWTSecret, cfg.WebhookSecret = r.sagas, r.delivery, r.jwt, r.webhookSecret
	r.srv = api.New(cfg)
	return r, ps, jr, calls
}

// rowOf is userID's row of saleID's lines as the database has it: ok
// false for none, place nil while pending.
func rowOf(t *testing.T, r *handlerRig, saleID int64, userID string) (place *int64, ok bool) {
	t.Helper()
	var rows []struct{ Place *int64 }
	require.NoError(t, r.st.Gorm().Raw(`SELECT place FROM waitlist_entries WHERE sale_id = ? AND user_id = ?`, saleID, userID).
		Scan(&rows).Error)
	if len(rows) == 0 {
		return nil, false
	}
	return rows[0].Place, true
}

// The join writes the buyer's pending row before it asks Redis
// (docs/DESIGN.md invariant 10), so whoever waits in Redis has a row.
// When that write fails the answer is 503 with Retry-After and Redis is
// never asked: nobody waits whom the database does not know of.
func TestWaitlist_ThePendingRowIsWrittenBeforeRedisIsAsked(t *testing.T) {
	r, ps, _, calls := newJoinRig(t, api.Config{})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	r.claim(t, saleID, "ann")
	calls.take()

	ps.failPend = true
	a := r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.Equal(t, "UNAVAILABLE", a.code())
	require.NotEmpty(t, a.header.Get("Retry-After"))
	require.Equal(t, []string{"pend"}, calls.take(), "Redis is never asked")
	ws, err := r.rs.WaitStateOf(t.Context(), saleID, "bob")
	require.NoError(t, err)
	require.False(t, ws.Waiting)

	ps.failPend = false
	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "WAITING", a.body["status"])
	require.Equal(t, []string{"pend", "join", "fill"}, calls.take())
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ok)
	require.NotNil(t, place, "answered 201: the row has the place")
	require.Equal(t, int64(1), *place)
}

// A join Redis gives no place (admitted at once, already claimed, the
// line full) leaves no pending row behind; the row of a buyer answered
// 201 stays through their retries.
func TestWaitlist_AJoinWithNoPlaceLeavesNoPendingRow(t *testing.T) {
	r, _, _, calls := newJoinRig(t, api.Config{WaitlistMax: 1})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"

	a := r.do(t, "POST", path, "ann", false, nil)
	require.Equal(t, "ADMITTED", a.body["status"], "%v", a.body)
	require.Equal(t, []string{"pend", "join"}, calls.take(), "a pending row was written")
	_, ok := rowOf(t, r, saleID, "ann")
	require.False(t, ok, "admitted at once: no pending row left")

	a = r.do(t, "POST", path, "ann", false, nil)
	require.Equal(t, "ALREADY_CLAIMED", a.code(), "%v", a.body)
	require.Equal(t, []string{"pend", "join"}, calls.take())
	_, ok = rowOf(t, r, saleID, "ann")
	require.False(t, ok, "already claimed: no pending row left")

	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, "WAITING", a.body["status"], "%v", a.body)
	calls.take()
	a = r.do(t, "POST", path, "cat", false, nil)
	require.Equal(t, "WAITLIST_FULL", a.code(), "%v", a.body)
	require.Equal(t, []string{"pend", "join"}, calls.take())
	_, ok = rowOf(t, r, saleID, "cat")
	require.False(t, ok, "the line is full: no pending row left")

	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, "ALREADY_WAITING", a.code(), "%v", a.body)
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ok)
	require.NotNil(t, place, "a retry keeps the row with its place")
}

// The fill only fills the row the join wrote: when it is gone (a leave
// deleted it meanwhile) the buyer is answered 503, never 201 without a
// row that has their place, and a pending row says they may wait in
// Redis without having been told; their retry fills it.
func TestWaitlist_AFillThatFindsNoRowIsAnswered503(t *testing.T) {
	r, ps, _, calls := newJoinRig(t, api.Config{})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	r.claim(t, saleID, "ann")
	calls.take()

	ps.leaveFirst = true
	a := r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.Equal(t, "UNAVAILABLE", a.code())
	require.NotEmpty(t, a.header.Get("Retry-After"))
	require.Equal(t, []string{"pend", "join", "fill", "pend"}, calls.take(), "the pending row is put back")
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ok)
	require.Nil(t, place, "bob waits in Redis, never told: his row is pending")

	ps.leaveFirst = false
	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, "ALREADY_WAITING", a.code(), "%v", a.body)
	place, ok = rowOf(t, r, saleID, "bob")
	require.True(t, ok)
	require.NotNil(t, place)
	require.Equal(t, int64(1), *place)
}

// A join whose Redis answer is lost (the script may have run) is answered
// 503 and keeps its pending row: the buyer may wait in Redis, never told.
func TestWaitlist_AJoinRedisMayHaveSeatedKeepsItsPendingRow(t *testing.T) {
	r, _, jr, _ := newJoinRig(t, api.Config{})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	r.claim(t, saleID, "ann")

	jr.failJoin = true
	a := r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	ws, err := r.rs.WaitStateOf(t.Context(), saleID, "bob")
	require.NoError(t, err)
	require.True(t, ws.Waiting, "the script ran")
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ok, "the pending row stays")
	require.Nil(t, place)

	jr.failJoin = false
	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, "ALREADY_WAITING", a.code(), "%v", a.body)
	place, ok = rowOf(t, r, saleID, "bob")
	require.True(t, ok)
	require.NotNil(t, place)
}

// leaveRedis is Redis whose leave fails after its script ran or before
// (failLeave), as a timeout or a failover does.
type leaveRedis struct {
	*redisstore.Store
	failLeave bool
}

func (r *leaveRedis) Leave(ctx context.Context, saleID int64, userID string) (bool, error) {
	if r.failLeave {
		return false, errors.New("i/o timeout")
	}
	return r.Store.Leave(ctx, saleID, userID)
}

// A leave takes the place back (the row turns pending) before it asks
// Redis: when Redis fails (503), the buyer still in Redis' line is a join
// in flight to the audit and to a rebuild, never a kept place, and never a
// lost one; the retry leaves and deletes the row.
func TestWaitlist_ALeaveWhoseRedisStepFailsKeepsNoPlace(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	lr := &leaveRedis{Store: r.rs}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(t.Context(), r.rs.IDNodes(), log)
	require.NoError(t, err)
	r.srv = api.New(api.Config{Store: r.st, Redis: lr, Log: log, IDs: ids, Sagas: r.sagas, Delivery: r.delivery,
		JWTSecret: r.jwt, WebhookSecret: r.webhookSecret})
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	r.write(t, r.claim(t, saleID, "ann"), saleID, "ann")
	a := r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	place, ok := rowOf(t, r, saleID, "bob")
	require.True(t, ok)
	require.NotNil(t, place, "a 201 keeps bob's place")

	lr.failLeave = true
	a = r.do(t, "DELETE", path+"/me", "bob", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	place, ok = rowOf(t, r, saleID, "bob")
	require.True(t, ok, "the row stays while Redis may still hold bob")
	require.Nil(t, place, "but it keeps no place: bob asked to leave")
	rows, err := r.st.WaitlistEntries(t.Context(), saleID)
	require.NoError(t, err)
	require.Empty(t, rows, "a rebuild puts nobody back")

	lr.failLeave = false
	a = r.do(t, "DELETE", path+"/me", "bob", false, nil)
	require.Equal(t, http.StatusNoContent, a.status, "%v", a.body)
	_, ok = rowOf(t, r, saleID, "bob")
	require.False(t, ok)
	a = r.do(t, "GET", path+"/me", "bob", false, nil)
	require.Equal(t, http.StatusNotFound, a.status, "%v", a.body)
}
