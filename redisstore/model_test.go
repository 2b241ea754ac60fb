// A model-checked core (issue 19): a property-based state-machine test of
// the Redis scripts (through redisstore.Store) against a small model of
// the sale in Go. The model stands in for the database: which orders are
// active, which are paid, how many units the database holds; Redis is the
// machine's real one, each case on a key prefix of its own.
//
// Each case warms a sale of 0..12 units over 1..4 segments for 8 buyers and
// runs a random sequence of: claims (with and without an Idempotency-Key,
// and a client's retry of the last one: same key, fresh order id), joins,
// leaves, releases (the saga's compensation, the unit given back; and a
// SOLD_OUT close, no unit given back), the activity's retry of the last
// release (a fresh NextOrder id, as activities.release draws one per
// attempt), payments (a PAID order keeps its claim), the loss of one
// segment's keys, re-warm from the model's database figure, a reconciliation
// pass (FinishMoves, then HandOver while units sit in stock and buyers
// wait), crashes between the scripts of a move (taken not given, given not
// forgotten), and WAIT failures (Store.WithReplicas(1, 5ms) on this
// replica-less Redis: every durable write happens, then ErrNotReplicated;
// the model takes it as done, as a WAIT timeout without a failover is; on
// a sale of several segments a release that fails so is a release parked and
// not landed).
//
// The laws, checked after every step:
//
//  1. Units are conserved: with every segment loaded, Store.Remaining (the
//     stocks plus the units in flight between segments, each once) plus the
//     units held by active unpaid orders plus the units sold equals the
//     sale's units (less the units of SOLD_OUT closes: units the database
//     never had). The move records Redis keeps (Store.Moves) are the ones
//     the model expects, given or not.
//  2. One buyer, one active order: Redis' claims (Store.Claims) are the
//     model's active orders (PAID ones included), nothing more.
//  3. The waitlist is first come, first served: a unit handed to the
//     waitlist (by a release, a join's or reconciliation's hand-over, a
//     parked release landed) goes to the buyer who joined first among those
//     waiting; every buyer's WaitStateOf (position in the one line over all
//     segments, or the order the waitlist gave) and WaitlistAdmissions are the
//     model's. (A move between segments landed by reconciliation serves its
//     destination segment's line, as give.lua documents; a join or a claim
//     that finds a unit in its own segment's stock takes it, as a claim does:
//     units in stock while buyers wait are the drift reconciliation repairs.)
//  4. After a reconciliation pass over a sale whose segments are all loaded, no
//     move is left in flight and no unit is in stock while a buyer waits.
//
// Claim, join and release answers are checked against the model's too.
// `make test` runs rapid's default 100 cases; a long run:
//
//	go test ./redisstore -run TestModel_EveryStepKeepsTheScriptsAndTheModelInAgreement -rapid.checks=20000
//
// (-rapid.steps=80 for longer sequences; -rapid.nofailfile keeps a
// failing run from writing testdata/rapid/TestModel_EveryStepKeepsTheScriptsAndTheModelInAgreement/*.fail, which later
// runs replay first; -rapid.seed=N replays one run).

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// The model's sale, its buyers and the terms of every admission.
const (
	modelSale        int64 = 7
	modelUsers             = 8
	modelMaxUnits          = 12
	modelMaxSegments       = 4
)

var modelTerms = seckill.Terms{PaymentTimeout: 15 * time.Minute, UnitPriceCents: 990, Currency: "usd"}

func TestModel_EveryStepKeepsTheScriptsAndTheModelInAgreement(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	var cases atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		m := newModel(rt, rdb, prefix+":m"+strconv.FormatInt(cases.Add(1), 10))
		rt.Repeat(m.actions())
	})
}

// actions are the steps a case draws from, the common ones twice as often.
func (m *model) actions() map[string]func(*rapid.T) {
	actions := map[string]func(*rapid.T){
		"":               m.check,
		"retryClaim":     m.retryClaim,
		"leave":          m.leave,
		"releaseSoldOut": func(t *rapid.T) { m.release(t, false) },
		"retryRelease":   m.retryRelease,
		"pay":            m.pay,
		"loseSegment":    m.loseSegment,
		"rewarm":         m.rewarm,
		"reconcile":      m.reconcile,
		"crashTake":      m.crashTake,
		"crashGive":      m.crashGive,
	}
	for _, name := range []string{"claim", "claim'"} {
		actions[name] = m.claim
	}
	for _, name := range []string{"join", "join'"} {
		actions[name] = m.join
	}
	for _, name := range []string{"releaseGiveBack", "releaseGiveBack'"} {
		actions[name] = func(t *rapid.T) { m.release(t, true) }
	}
	return actions
}

// mOrder is an order as the database holds it.
type mOrder struct {
	user         string
	paid, closed bool
}

// mMove is a move record Redis should keep (moves.go).
type mMove struct {
	from, dest int // dest -1: a parked release not aimed yet
	units      int64
	given      bool
}

// mIdem is the first decision recorded for an Idempotency-Key.
type mIdem struct {
	outcome seckill.Outcome
	order   int64
}

type mClaim struct{ user, key string }

type mRelease struct {
	order    int64
	giveBack bool
}

type model struct {
	ctx     context.Context
	s       *redisstore.Store
	slow    *redisstore.Store // every durable write ends in ErrNotReplicated
	spec    seckill.WarmSpec
	n       int
	maxWait int
	users   []string

	// The database.
	total, dropped, sold int64 // dropped: units of SOLD_OUT closes (the database never had them)
	orders               map[int64]*mOrder
	active               map[string]int64 // user -> their active (unpaid or PAID) order

	// What Redis should hold besides the counts.
	line   []string         // the waitlist, first first
	waited map[string]int64 // user -> order the waitlist gave (WaitStateOf.OrderID)
	idem   map[string]mIdem // user|key -> the recorded decision
	lost   map[int]bool     // segments whose keys are gone
	moves  map[string]*mMove

	ids         int64
	crashes     int
	lastClaim   *mClaim
	lastRelease *mRelease
}

func newModel(t *rapid.T, rdb *redis.Client, prefix string) *model {
	s := redisstore.New(rdb, prefix)
	m := &model{
		ctx: t.Context(), s: s, slow: s.WithReplicas(1, 5*time.Millisecond),
		orders: map[int64]*mOrder{}, active: map[string]int64{}, waited: map[string]int64{},
		idem: map[string]mIdem{}, lost: map[int]bool{}, moves: map[string]*mMove{}, ids: 1000,
	}
	t.Cleanup(func() { _ = s.DropAll(context.Background()) })
	for i := range modelUsers {
		m.users = append(m.users, fmt.Sprint("u", i))
	}
	// Fewer units than buyers more often than not: the waitlist has work.
	m.total = int64(rapid.OneOf(rapid.IntRange(0, 4), rapid.IntRange(0, modelMaxUnits)).Draw(t, "units"))
	m.n = rapid.IntRange(1, modelMaxSegments).Draw(t, "parts")
	m.maxWait = rapid.IntRange(1, modelUsers).Draw(t, "waitlistMax")
	now := time.Now()
	m.spec = seckill.WarmSpec{SaleID: modelSale, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: m.total}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Segments: m.n}
	loaded, err := s.Warm(m.ctx, m.spec)
	if err != nil || !loaded {
		t.Fatalf("warm: %v %v", loaded, err)
	}
	return m
}

// ---- the model's reads

func (m *model) id() int64 { m.ids++; return m.ids }

func (m *model) segment(u string) int { return redisstore.SegmentOf(u, m.n) }

func (m *model) unpaid() []int64 {
	var out []int64
	for id, o := range m.orders {
		if !o.closed && !o.paid {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// available is the database's figure for Redis: the units neither sold nor
// held by an active unpaid order.
func (m *model) available() int64 { return m.total - m.dropped - m.sold - int64(len(m.unpaid())) }

func (m *model) anyLost() bool { return len(m.lost) > 0 }

func (m *model) rank(u string) int64 { return int64(slices.Index(m.line, u) + 1) }

func (m *model) waiting(u string) bool { return slices.Contains(m.line, u) }

func (m *model) lineOf(p int) []string {
	var out []string
	for _, u := range m.line {
		if m.segment(u) == p {
			out = append(out, u)
		}
	}
	return out
}

func (m *model) inFlight() int64 {
	var n int64
	for _, mv := range m.moves {
		if !mv.given {
			n += mv.units
		}
	}
	return n
}

// admit gives user u order id. fromLine: a waitlist hand-over or a join
// (admit.lua's from_waitlist), which records the order for WaitStateOf
// whether or not they waited; a claim records it only for a waiting buyer.
func (m *model) admit(u string, id int64, fromLine bool) {
	m.orders[id] = &mOrder{user: u}
	m.active[u] = id
	if fromLine || m.waiting(u) {
		m.waited[u] = id
	}
	m.line = slices.DeleteFunc(m.line, func(w string) bool { return w == u })
}

// handToLine hands one unit to the first waiting buyer as order id, and
// returns who got it ("" when nobody waits).
func (m *model) handToLine(id int64) string {
	if len(m.line) == 0 {
		return ""
	}
	head := m.line[0]
	m.admit(head, id, true)
	return head
}

// ---- Redis reads

// stocks reads every segment's stock, -1 for a segment Redis does not hold.
func (m *model) stocks(t *rapid.T) []int64 {
	cmds := make([]*redis.StringCmd, m.n)
	_, err := m.s.Client().Pipelined(m.ctx, func(p redis.Pipeliner) error {
		for q := range m.n {
			cmds[q] = p.Get(m.ctx, m.s.SegmentKeys(modelSale, q).Stock)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("read stocks: %v", err)
	}
	out := make([]int64, m.n)
	for q, c := range cmds {
		v, err := c.Int64()
		if err != nil {
			v = -1
		}
		out[q] = v
	}
	return out
}

func (m *model) redisMoves(t *rapid.T) map[string]seckill.Move {
	mv, err := m.s.Moves(m.ctx, modelSale)
	if err != nil {
		t.Fatalf("moves: %v", err)
	}
	out := map[string]seckill.Move{}
	for _, x := range mv {
		out[x.ID] = x
	}
	return out
}

// adoptMove takes into the model the one new move record a borrow left
// when the WAIT after its take failed: id, for segment dest, half (rounded
// up) of the fullest other segment's stock st.
func (m *model) adoptMove(t *rapid.T, id string, dest int, st []int64) {
	got := m.redisMoves(t)
	var fresh []string
	for k := range got {
		if _, ok := m.moves[k]; !ok {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) != 1 || fresh[0] != id {
		t.Fatalf("after a take whose WAIT failed: new move records %v, want just %s", fresh, id)
	}
	x := got[id]
	fuller := slices.Max(append(slices.Clone(st[:dest]), st[dest+1:]...))
	if x.Dest != dest || x.From == dest || x.Given || x.Units != (fuller+1)/2 || st[x.From] != fuller {
		t.Fatalf("move %s is %+v; want half (rounded up) of the fullest other segment (stocks %v) for segment %d", id, x, st, dest)
	}
	m.moves[id] = &mMove{from: x.From, dest: x.Dest, units: x.Units}
	time.Sleep(2 * time.Millisecond) // records of different steps never share a millisecond: FinishMoves' order is known
}

// ---- draws

func (m *model) drawUser(t *rapid.T) string { return rapid.SampledFrom(m.users).Draw(t, "user") }

// drawFreshUser is, three times in four, a buyer who holds no active order
// and does not wait (any buyer when there is none).
func (m *model) drawFreshUser(t *rapid.T) string {
	var fresh []string
	for _, u := range m.users {
		if m.active[u] == 0 && !m.waiting(u) {
			fresh = append(fresh, u)
		}
	}
	if len(fresh) == 0 || rapid.SampledFrom([]string{"fresh", "fresh", "fresh", "any"}).Draw(t, "who") == "any" {
		return m.drawUser(t)
	}
	return rapid.SampledFrom(fresh).Draw(t, "user")
}

// drawSlow: does this call's WAIT fail? (One in four.)
func (m *model) drawSlow(t *rapid.T) bool {
	return rapid.SampledFrom([]string{"ok", "ok", "ok", "WAIT fails"}).Draw(t, "replicas") != "ok"
}

func (m *model) store(slow bool) *redisstore.Store {
	if slow {
		return m.slow
	}
	return m.s
}

func expectErr(t *rapid.T, what string, err error, slow bool) {
	if slow {
		if !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("%s: error %v, want ErrNotReplicated (the write happened, no replica holds it)", what, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ---- actions

func (m *model) claim(t *rapid.T) {
	u := m.drawFreshUser(t)
	key := rapid.SampledFrom([]string{"", "k1", "k2"}).Draw(t, "key")
	m.lastClaim = &mClaim{user: u, key: key}
	m.doClaim(t, u, key, m.drawSlow(t))
}

// retryClaim is a client asking again after any answer (a 503 included):
// the same Idempotency-Key, a fresh order id, as the API draws per request.
func (m *model) retryClaim(t *rapid.T) {
	if m.lastClaim == nil {
		t.Skip("no claim to retry")
	}
	m.doClaim(t, m.lastClaim.user, m.lastClaim.key, m.drawSlow(t))
}

func (m *model) doClaim(t *rapid.T, u, key string, slow bool) {
	o := m.id()
	st := m.stocks(t)
	home := m.segment(u)
	others := int64(0)
	for q, v := range st {
		if q != home && v > 0 {
			others += v
		}
	}
	var want seckill.ClaimResult
	anyTentative := false // either answer is right
	wantErr, borrowTake := false, false
	record := false
	admitted := false
	rec, replay := m.idem[u+"|"+key]
	replay = replay && key != ""
	switch {
	case m.lost[home]:
		want.Outcome = seckill.Unavailable
	case replay:
		want = seckill.ClaimResult{Outcome: rec.outcome, OrderID: rec.order, Replayed: true}
		if rec.outcome == seckill.SoldOut && m.n > 1 {
			// A replayed SOLD_OUT on a sale of several segments still borrows
			// (units move into the buyer's segment, the answer stays the
			// replay), tentative when it stopped after maxBorrows.
			anyTentative = true
			if slow && len(m.lineOf(home)) == 0 && others > 0 {
				wantErr, borrowTake = true, true
			}
		}
	case m.active[u] != 0:
		want = seckill.ClaimResult{Outcome: seckill.AlreadyClaimed, OrderID: m.active[u]}
		record = true
	case st[home] > 0:
		want = seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: o}
		wantErr, record, admitted = slow, true, true
	case m.n == 1:
		want.Outcome, record = seckill.SoldOut, true
	case len(m.lineOf(home)) > 0:
		// The segment's line comes first: nothing is borrowed for a new claim.
		want = seckill.ClaimResult{Outcome: seckill.SoldOut, Tentative: true, Owed: true}
	case others > 0:
		if slow { // the borrow's take is the first write: its WAIT fails
			wantErr, borrowTake = true, true
		} else {
			want = seckill.ClaimResult{Outcome: seckill.Admitted, OrderID: o}
			record, admitted = true, true
		}
	case m.inFlight() > 0:
		want = seckill.ClaimResult{Outcome: seckill.SoldOut, Tentative: true}
	default:
		// No segment has a unit and none is in flight: final. (A segment whose
		// keys are lost counts as holding none: Claim cannot see what
		// re-warm will load into it.)
		want.Outcome, record = seckill.SoldOut, true
	}
	res, err := m.store(slow).Claim(m.ctx, modelSale, u, o, key, modelTerms, seckill.DefaultItem)
	t.Logf("claim %s key=%q order=%d WAIT-fails=%v: %+v err=%v (stocks %v)", u, key, o, slow, res, err, st)
	expectErr(t, "claim", err, wantErr)
	if !wantErr {
		res.PayBy, res.RetryAfter = time.Time{}, 0
		if anyTentative {
			res.Tentative, res.Owed = false, false
		}
		if res != want {
			t.Fatalf("claim %s key=%q: got %+v, want %+v", u, key, res, want)
		}
	}
	if admitted {
		m.admit(u, o, false)
	}
	if record && key != "" {
		m.idem[u+"|"+key] = mIdem{outcome: want.Outcome, order: want.OrderID}
	}
	if borrowTake {
		m.adoptMove(t, "b"+strconv.FormatInt(o, 10)+".0", home, st)
	}
}

func (m *model) join(t *rapid.T) {
	u := m.drawFreshUser(t)
	slow := m.drawSlow(t)
	o := m.id()
	st := m.stocks(t)
	home := m.segment(u)
	inStock := int64(0)
	for _, v := range st {
		inStock += max(v, 0)
	}
	var want seckill.JoinResult
	wantErr := false
	switch {
	case m.lost[home], m.n > 1 && m.lost[0]:
		want.Outcome = seckill.Unavailable
	case m.active[u] != 0:
		want = seckill.JoinResult{Outcome: seckill.AlreadyClaimed, OrderID: m.active[u]}
	case m.waiting(u):
		want = seckill.JoinResult{Outcome: seckill.AlreadyWaiting, Position: m.rank(u)}
	case st[home] > 0:
		want = seckill.JoinResult{Outcome: seckill.Admitted, OrderID: o}
		wantErr = slow
		m.admit(u, o, true)
	case len(m.line) >= m.maxWait:
		want.Outcome = seckill.WaitlistFull
	default:
		m.line = append(m.line, u)
		delete(m.waited, u)
		wantErr = slow
		want = seckill.JoinResult{Outcome: seckill.Waiting, Position: m.rank(u)}
		if !slow && m.n > 1 && inStock > 0 {
			// Another segment has a unit: it is handed to the first in line.
			if m.handToLine(o) == u {
				want = seckill.JoinResult{Outcome: seckill.Admitted, OrderID: o}
			} else {
				want.Position = m.rank(u)
			}
		}
	}
	res, err := m.store(slow).Join(m.ctx, modelSale, u, seckill.DefaultItem, m.maxWait, o, modelTerms)
	t.Logf("join %s order=%d WAIT-fails=%v: %+v err=%v (stocks %v)", u, o, slow, res, err, st)
	expectErr(t, "join", err, wantErr)
	res.PayBy = time.Time{}
	if !wantErr && res != want {
		t.Fatalf("join %s: got %+v, want %+v", u, res, want)
	}
}

func (m *model) leave(t *rapid.T) {
	u := m.drawUser(t)
	want := m.waiting(u)
	got, err := m.s.Leave(m.ctx, modelSale, u)
	t.Logf("leave %s: %v err=%v", u, got, err)
	if err != nil || got != want {
		t.Fatalf("leave %s: %v %v, want %v", u, got, err, want)
	}
	m.line = slices.DeleteFunc(m.line, func(w string) bool { return w == u })
	delete(m.waited, u)
}

// release is the saga's compensation of an unpaid order: the database
// closes it, then Redis forgets the claim and, unless the close is a
// SOLD_OUT (the database never had the unit), gives the unit back.
func (m *model) release(t *rapid.T, giveBack bool) {
	unpaid := m.unpaid()
	if len(unpaid) == 0 {
		t.Skip("no unpaid order")
	}
	o := rapid.SampledFrom(unpaid).Draw(t, "order")
	m.lastRelease = &mRelease{order: o, giveBack: giveBack}
	m.doRelease(t, o, giveBack, m.drawSlow(t), true)
}

// retryRelease is the activity retried: the same order, a fresh id for the
// order a waiting buyer may get.
func (m *model) retryRelease(t *rapid.T) {
	if m.lastRelease == nil {
		t.Skip("no release to retry")
	}
	m.doRelease(t, m.lastRelease.order, m.lastRelease.giveBack, m.drawSlow(t), false)
}

func (m *model) doRelease(t *rapid.T, o int64, giveBack, slow, first bool) {
	ord := m.orders[o]
	u, home := ord.user, m.segment(ord.user)
	var next *seckill.NextOrder
	if giveBack {
		next = &seckill.NextOrder{IDs: []int64{m.id()}, Terms: modelTerms}
	}
	moveID := "r" + strconv.FormatInt(o, 10)
	held := !m.lost[home] && m.active[u] == o // the claim names the order
	if first {
		ord.closed = true
		if m.active[u] == o {
			delete(m.active, u)
		}
		if !giveBack {
			m.dropped++
		}
	}
	handedTo := ""
	switch {
	case held && giveBack && m.n > 1 && slow:
		// Parked, and the caller stopped before landing it.
		m.moves[moveID] = &mMove{from: home, dest: -1, units: 1}
	case held && giveBack:
		handedTo = m.handToLine(next.IDs[0])
	case !held && giveBack && m.n > 1 && !slow && m.moves[moveID] != nil:
		// A retry lands the unit an earlier attempt parked.
		delete(m.moves, moveID)
		handedTo = m.handToLine(next.IDs[0])
	}
	res, err := m.store(slow).Release(m.ctx, modelSale, u, o, seckill.DefaultItem, next)
	t.Logf("release %d of %s giveBack=%v first=%v WAIT-fails=%v: now=%v handedTo=%+v err=%v", o, u, giveBack, first, slow, res.Now, res.HandedTo, err)
	expectErr(t, "release", err, slow)
	if slow && m.n > 1 {
		time.Sleep(2 * time.Millisecond) // a parked record's millisecond is its own
	}
	if slow {
		return
	}
	if res.Now != held {
		t.Fatalf("release %d: Now %v, want %v", o, res.Now, held)
	}
	got := ""
	if len(res.HandedTo) > 0 {
		got = res.HandedTo[0].UserID
		if res.HandedTo[0].OrderID != next.IDs[0] {
			t.Fatalf("release %d: handed as order %d, want %d", o, res.HandedTo[0].OrderID, next.IDs[0])
		}
	}
	if got != handedTo {
		t.Fatalf("release %d: unit handed to %q, want %q (the first in line %v)", o, got, handedTo, m.line)
	}
}

func (m *model) pay(t *rapid.T) {
	unpaid := m.unpaid()
	if len(unpaid) == 0 {
		t.Skip("no unpaid order")
	}
	o := rapid.SampledFrom(unpaid).Draw(t, "order")
	m.orders[o].paid = true
	m.sold++
	t.Logf("pay %d of %s", o, m.orders[o].user)
}

// loseSegment deletes every key of one segment, as a Cluster primary lost with
// no replica (or, for a sale of one segment, a Redis restarted empty).
func (m *model) loseSegment(t *rapid.T) {
	p := rapid.IntRange(0, m.n-1).Draw(t, "segment")
	tag := strings.TrimSuffix(m.s.SegmentKeys(modelSale, p).Stock, "stock")
	keys, err := m.s.Client().Keys(m.ctx, tag+"*").Result()
	if err != nil {
		t.Fatalf("list keys of segment %d: %v", p, err)
	}
	for _, k := range keys {
		if err := m.s.Client().Del(m.ctx, k).Err(); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
	}
	short := make([]string, len(keys))
	for i, k := range keys {
		short[i] = strings.TrimPrefix(k, tag)
	}
	slices.Sort(short)
	t.Logf("lose segment %d: keys %v", p, short)
	m.lost[p] = true
	inSegment := func(u string) bool { return m.segment(u) == p }
	m.line = slices.DeleteFunc(m.line, inSegment)
	maps.DeleteFunc(m.waited, func(u string, _ int64) bool { return inSegment(u) })
	maps.DeleteFunc(m.idem, func(k string, _ mIdem) bool { return inSegment(strings.SplitN(k, "|", 2)[0]) })
	for id, mv := range m.moves {
		switch {
		case mv.from == p:
			delete(m.moves, id) // its units are the database's again: re-warm loads them
		case mv.dest == p:
			mv.given = false // the segment's moved set is gone
		}
	}
}

// rewarm loads the lost segments from the database, as warmup and
// reconciliation do: the units neither sold nor held, and the claims of
// the active orders.
func (m *model) rewarm(t *rapid.T) {
	var claims []seckill.ActiveClaim
	for _, u := range m.users {
		if id := m.active[u]; id != 0 {
			claims = append(claims, seckill.ActiveClaim{UserID: u, OrderID: id})
		}
	}
	spec := m.spec
	spec.Variants[0].Units = m.available()
	loaded, err := m.s.Rewarm(m.ctx, spec, claims)
	t.Logf("rewarm %d units, %d claims, lost segments %v: loaded=%v err=%v", spec.Variants[0].Units, len(claims), slices.Sorted(maps.Keys(m.lost)), loaded, err)
	if err != nil || loaded != m.anyLost() {
		t.Fatalf("rewarm: loaded %v, %v; want loaded %v", loaded, err, m.anyLost())
	}
	// A move aimed at a lost segment may have reached it or not: re-warm
	// drops its record, and the segment is loaded with its units.
	maps.DeleteFunc(m.moves, func(_ string, mv *mMove) bool { return mv.dest >= 0 && m.lost[mv.dest] })
	m.lost = map[int]bool{}
}

// reconcile is reconciliation's pass over the sale's units: FinishMoves
// (every record, whatever its age), then HandOver while units sit in
// stock and buyers wait (reconcile.Sale).
func (m *model) reconcile(t *rapid.T) {
	// FinishMoves lands the records oldest first: a parked release at the
	// first in line (or back home with nobody waiting), a move at its
	// destination's line first, a move given only forgotten. A destination
	// not loaded stops it.
	type rec struct {
		id string
		at time.Time
	}
	var order []rec
	for id, x := range m.redisMoves(t) {
		order = append(order, rec{id, x.At})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at.Before(order[j].at) })
	for i := 1; i < len(order); i++ {
		if order[i].at.Equal(order[i-1].at) {
			t.Fatalf("moves %s and %s share a millisecond: the model cannot tell FinishMoves' order", order[i-1].id, order[i].id)
		}
	}
	var ids []int64
	nextID := func() (int64, error) { id := m.id(); ids = append(ids, id); return id, nil }
	type grant struct {
		user  string
		order int64
	}
	var grants []grant
	wantDone, stopped := 0, false
	base := m.ids // the ids FinishMoves will draw, in this order
	for _, r := range order {
		mv := m.moves[r.id]
		if mv == nil {
			t.Fatalf("reconcile: Redis has move %s the model does not", r.id)
		}
		orders := make([]int64, mv.units)
		for i := range orders {
			orders[i] = m.ids + int64(i) + 1 // drawn by nextID in this order
		}
		m.ids += mv.units
		if mv.given {
			delete(m.moves, r.id)
			wantDone++
			continue
		}
		dest := mv.dest
		if dest < 0 {
			dest = mv.from
			if len(m.line) > 0 {
				dest = m.segment(m.line[0])
			}
		}
		if m.lost[dest] {
			stopped = true
			break
		}
		for _, id := range orders {
			line := m.lineOf(dest)
			if len(line) == 0 {
				break
			}
			m.admit(line[0], id, true)
			grants = append(grants, grant{line[0], id})
		}
		delete(m.moves, r.id)
		wantDone++
	}
	drawn := m.ids - base
	m.ids = base // nextID draws them again
	done, err := m.s.FinishMoves(m.ctx, modelSale, func(string) seckill.Terms { return modelTerms }, 0, nextID)
	if int64(len(ids)) != drawn {
		t.Fatalf("FinishMoves drew %d order ids, want %d (one per unit of each record)", len(ids), drawn)
	}
	t.Logf("reconcile: finished %d moves err=%v, grants %v", done, err, grants)
	if stopped != (err != nil) || (err != nil && !strings.Contains(err.Error(), "not warmed")) || done != wantDone {
		t.Fatalf("FinishMoves: %d, %v; want %d, stopped at a segment not loaded: %v", done, err, wantDone, stopped)
	}
	if stopped || m.anyLost() {
		return // the sale is not warmed: the re-warmer's job first
	}
	counts, err := m.s.Counts(m.ctx, []int64{modelSale})
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	c := counts[modelSale]
	if c.Remaining > 0 && c.Waiting > 0 {
		hand := make([]int64, min(c.Remaining, c.Waiting, 256))
		var want []grant
		for i := range hand {
			hand[i] = m.id()
			if u := m.handToLine(hand[i]); u != "" {
				want = append(want, grant{u, hand[i]})
			}
		}
		n, err := m.s.HandOver(m.ctx, modelSale, seckill.DefaultSKU, modelTerms, hand)
		t.Logf("reconcile: %d in stock while %d wait: handed %d err=%v, want %v", c.Remaining, c.Waiting, n, err, want)
		if err != nil || n != len(want) {
			t.Fatalf("HandOver: %d, %v; want %d", n, err, len(want))
		}
	}
	// Law 4: nothing left in flight, no unit in stock while a buyer waits.
	if mv := m.redisMoves(t); len(mv) != 0 {
		t.Fatalf("law 4: moves left in flight after a reconciliation pass: %v", mv)
	}
	counts, err = m.s.Counts(m.ctx, []int64{modelSale})
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	if c := counts[modelSale]; c.Remaining > 0 && c.Waiting > 0 {
		t.Fatalf("law 4: %d units in stock while %d buyers wait, after a reconciliation pass", c.Remaining, c.Waiting)
	}
}

// drawSource is a crashing mover's source: a segment with a unit to take,
// with every segment's stock as read (the case is skipped when no move can be).
func (m *model) drawSource(t *rapid.T) ([]int64, int) {
	if m.n == 1 {
		t.Skip("one segment: no moves")
	}
	st := m.stocks(t)
	var from []int
	for q, v := range st {
		if v > 0 {
			from = append(from, q)
		}
	}
	if len(from) == 0 {
		t.Skip("no segment has a unit to take")
	}
	return st, rapid.SampledFrom(from).Draw(t, "from")
}

// crashTake is a mover that took units and died before giving them: a
// borrow's take (for a segment nobody waits in) or a hand-over's (for the
// segment of the first in line).
func (m *model) crashTake(t *rapid.T) {
	st, src := m.drawSource(t)
	var dests []int
	for q := range m.n {
		if q != src && (len(m.lineOf(q)) == 0 || (len(m.line) > 0 && m.segment(m.line[0]) == q)) {
			dests = append(dests, q)
		}
	}
	if len(dests) == 0 {
		t.Skip("no destination a mover would choose")
	}
	dest := rapid.SampledFrom(dests).Draw(t, "dest")
	units := int64(rapid.IntRange(1, 3).Draw(t, "units"))
	m.crashes++
	id := "x" + strconv.Itoa(m.crashes)
	err := m.s.TakeForTest(m.ctx, modelSale, src, id, units, dest)
	t.Logf("crash after take %s: %d from segment %d (stock %d) for segment %d: %v", id, units, src, st[src], dest, err)
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	m.moves[id] = &mMove{from: src, dest: dest, units: min(units, st[src])}
	time.Sleep(2 * time.Millisecond)
}

// crashGive is a borrow's mover that gave units to a segment nobody waits in
// and died before forgetting the move.
func (m *model) crashGive(t *rapid.T) {
	st, src := m.drawSource(t)
	var dests []int
	for q := range m.n {
		if q != src && !m.lost[q] && len(m.lineOf(q)) == 0 {
			dests = append(dests, q)
		}
	}
	if len(dests) == 0 {
		t.Skip("no loaded segment without a line to give to")
	}
	dest := rapid.SampledFrom(dests).Draw(t, "dest")
	units := int64(rapid.IntRange(1, 3).Draw(t, "units"))
	m.crashes++
	id := "x" + strconv.Itoa(m.crashes)
	err := m.s.GiveForTest(m.ctx, modelSale, src, id, units, dest)
	t.Logf("crash after give %s: %d from segment %d (stock %d) to segment %d: %v", id, units, src, st[src], dest, err)
	if err != nil {
		t.Fatalf("give: %v", err)
	}
	m.moves[id] = &mMove{from: src, dest: dest, units: min(units, st[src]), given: true}
	time.Sleep(2 * time.Millisecond)
}

// ---- the laws

func (m *model) check(t *rapid.T) {
	// The move records (invariant 7's bookkeeping).
	if m.n > 1 {
		got := m.redisMoves(t)
		want := map[string]seckill.Move{}
		for id, mv := range m.moves {
			want[id] = seckill.Move{ID: id, SKU: seckill.DefaultSKU, From: mv.from, Dest: mv.dest, Units: mv.units, Given: mv.given}
		}
		for id, x := range got {
			x.At = time.Time{}
			got[id] = x
		}
		if !maps.Equal(got, want) {
			t.Fatalf("move records: Redis %v, model %v", got, want)
		}
	}

	// Law 1: units conserved.
	rem, ok, err := m.s.Remaining(m.ctx, modelSale)
	if err != nil {
		t.Fatalf("remaining: %v", err)
	}
	if m.anyLost() {
		if ok {
			t.Fatalf("a segment is lost, yet Remaining reads the sale as warmed (%d)", rem)
		}
	} else if !ok || rem != m.available() {
		t.Fatalf("law 1: Redis remaining %d (warmed %v), want %d = %d units - %d never in the database - %d sold - %d held by unpaid orders",
			rem, ok, m.available(), m.total, m.dropped, m.sold, len(m.unpaid()))
	}

	// Law 2: Redis' claims are the model's active orders.
	claims, err := m.s.Claims(m.ctx, modelSale)
	if err != nil {
		t.Fatalf("claims: %v", err)
	}
	want := map[string]int64{}
	for u, id := range m.active {
		if !m.lost[m.segment(u)] {
			want[u] = id
		}
	}
	if !maps.Equal(claims, want) {
		t.Fatalf("law 2: Redis claims %v, model's active orders %v", claims, want)
	}

	// Law 3: the one line, and what the waitlist gave.
	adm, err := m.s.WaitlistAdmissions(m.ctx, modelSale)
	if err != nil {
		t.Fatalf("waitlist admissions: %v", err)
	}
	if !maps.Equal(adm, m.waited) {
		t.Fatalf("law 3: waitlist admissions %v, model %v", adm, m.waited)
	}
	for _, u := range m.users {
		ws, err := m.s.WaitStateOf(m.ctx, modelSale, u)
		if err != nil {
			t.Fatalf("wait state of %s: %v", u, err)
		}
		want := seckill.WaitState{Waiting: m.waiting(u), Position: m.rank(u)}
		if !want.Waiting {
			want.OrderID = m.waited[u]
		}
		if ws != want {
			t.Fatalf("law 3: %s's wait state is %+v, want %+v (the line, first first: %v)", u, ws, want, m.line)
		}
	}
}
