package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/proc"
)

// The lobby run (--lobby, docs/API.md "Fair start"): the buyers enter the
// sale's lobby instead of claiming, the draw runs at starts_at while the
// driver SIGKILLs the worker at steps of the draw the seed picks (and fails
// the Redis primary over), and the draw's record is then held to the
// orders.

// lobbyWaitlistMax is SECKILL_WAITLIST_MAX in a lobby run, as a multiple of
// the units: ranks past the units and that many more are LOST, so the draw
// also settles ranks past the waitlist's bound.
const lobbyWaitlistMax = 1

// drawStep is a moment of the draw at which the driver strikes.
type drawStep struct {
	// Kind: "closed" (the lobby is closed and nobody admitted yet: the draw
	// ranks, or is about to settle), "rank" (the draw's progress in Redis,
	// admissions plus places queued, reached Rank), "borrow" (the draw's
	// admissions borrow between the sale's segments: a move in flight, or a
	// segment empty while another holds units) or "done" (the database
	// records the draw done: FinishDraw may not have opened the sale in
	// Redis yet).
	Kind string
	Rank int
	// HoldToEnd: the worker is kept down from the kill until the sale has
	// ended (SIGKILLed again as soon as its supervisor restarts it).
	HoldToEnd bool
}

func (s drawStep) String() string {
	name := s.Kind
	if s.Kind == "rank" {
		name = "rank " + strconv.Itoa(s.Rank)
	}
	if s.HoldToEnd {
		name += ", held down until the sale ends"
	}
	return name
}

// lobbyPlan is what the seed decides of a lobby run.
type lobbyPlan struct {
	// window: from the lobby's opening (the sale's creation) to starts_at.
	window time.Duration
	// endsAfter: from starts_at to ends_at. Short when endInDraw: the sale
	// ends while the draw settles.
	endsAfter time.Duration
	endInDraw bool
	// kills: the worker's SIGKILLs, in the draw's order; failover: the
	// Redis primary's (Sentinel, Cluster), nil on one server.
	kills    []drawStep
	failover *drawStep
	// failoverSegment: on a Cluster, the segment whose slot's primary
	// fails over.
	failoverSegment int
	// waitlistMax is SECKILL_WAITLIST_MAX.
	waitlistMax int
}

// drawWithin bounds the wait for the draw: each SIGKILL in the middle of a
// step holds it up for Temporal's heartbeat timeout (30 s).
const drawWithin = 5 * time.Minute

// entryWindow is how long the lobby stays open: the entries are sent over
// its first half (the entry rate measured here with faults: some 150 a
// second, far fewer while the API or PostgreSQL is down), so that entries
// retried through a fault still land before starts_at.
func entryWindow(buyers int) time.Duration {
	return 6*time.Second + time.Duration(buyers)*6*time.Millisecond
}

// planLobby draws the lobby run's plan from the seed, from a source of its
// own so that the fault schedule of the other streams stays the seed's.
//
// The worker is SIGKILLed once at a rank, in the middle of a settle step
// (Temporal times the step out 30 s after its first heartbeat and retries
// it), and then by the seed's residue mod 3, so that seeds 1, 2 and 3
// walk every kind of step: 1, once more at the lobby's close (while the
// draw ranks) or once the draw is recorded done (before FinishDraw opens
// the sale in Redis); 2, once more while the draw's admissions borrow
// between segments (--segments), else at another rank; 0, the sale ends
// inside the draw.
//
// There ends_at is starts_at + 60-70 s, and from the SIGKILL at the rank
// the worker is kept down until the sale has ended, so the end falls
// between that rank's admission and the rest of the draw whenever the
// draw reaches the rank before ends_at. It does within seconds of
// starts_at, unless the fault stream holds it up (a Temporal restart,
// PostgreSQL stalls: up to some 60 s seen here); the end then falls
// earlier in the draw. The JSON line says whether the sale ended before the
// draw was done (draw.sale_ended_in_draw).
func planLobby(o options, seed uint64) lobbyPlan {
	rng := newRand(seed ^ 0x10bb1)
	p := lobbyPlan{window: entryWindow(o.buyers), endsAfter: time.Hour, waitlistMax: max(1, lobbyWaitlistMax*o.units)}
	k := min(o.units, o.buyers)
	reach := k + min(p.waitlistMax, o.buyers-k) // the ranks whose settling Redis shows
	rank := func() drawStep { return drawStep{Kind: "rank", Rank: 1 + rng.IntN(reach)} }
	// Always once in the middle of a settle step, where a batch is cut
	// off. Then by the seed's residue mod 3, so that any three seeds in a
	// row walk every kind: 0, the sale ends in the draw there (the worker
	// stays down until ends_at); 1, once more at the lobby's close or once
	// the draw is done; 2, once more while the draw borrows between
	// segments, or at another rank on one segment.
	p.kills = []drawStep{rank()}
	switch seed % 3 {
	case 0:
		p.endInDraw = true
		p.endsAfter = 60*time.Second + time.Duration(rng.IntN(10000))*time.Millisecond
		p.kills[0].HoldToEnd = true
	case 1:
		p.kills = append(p.kills, drawStep{Kind: []string{"closed", "done"}[rng.IntN(2)]})
	case 2:
		if o.segments > 1 {
			p.kills = append(p.kills, drawStep{Kind: "borrow"})
		} else {
			p.kills = append(p.kills, rank())
		}
	}
	order := func(s drawStep) int {
		switch s.Kind {
		case "closed":
			return 0
		case "borrow":
			return k / 2
		case "done":
			return reach + 1
		}
		return s.Rank
	}
	sort.SliceStable(p.kills, func(i, j int) bool { return order(p.kills[i]) < order(p.kills[j]) })
	if o.replicated() {
		f := rank()
		p.failover, p.failoverSegment = &f, rng.IntN(o.segments)
	}
	return p
}

func (p lobbyPlan) String() string {
	kills := make([]string, len(p.kills))
	for i, k := range p.kills {
		kills[i] = k.String()
	}
	s := fmt.Sprintf("lobby open %s; worker SIGKILLed at the draw's steps %v", p.window.Round(100*time.Millisecond), kills)
	if p.failover != nil {
		s += fmt.Sprintf(", Redis primary failed over at %s", p.failover)
	}
	if p.endInDraw {
		s += fmt.Sprintf("; the sale ends %s after starts_at, inside the draw", p.endsAfter.Round(100*time.Millisecond))
	}
	return s
}

// createLobbySale creates the run's sale with a lobby open from now, the
// draw at starts_at and no proof of work; it returns the sale's id and its
// starts_at.
func createLobbySale(base, admin string, o options, p lobbyPlan) (string, time.Time, error) {
	now := time.Now().UTC()
	startsAt := now.Add(p.window)
	fields := map[string]any{
		"name": "chaos lobby", "price_cents": unitPriceCents, "stock": o.units,
		"lobby_opens_at":          now.Add(-time.Second).Format(time.RFC3339Nano),
		"starts_at":               startsAt.Format(time.RFC3339Nano),
		"ends_at":                 startsAt.Add(p.endsAfter).Format(time.RFC3339Nano),
		"payment_timeout_seconds": int(o.timeout / time.Second),
	}
	if o.segments > 1 {
		fields["stock_segments"] = o.segments
	}
	id, err := postSale(base, admin, fields)
	return id, startsAt, err
}

// lobbyAnswer is what GET /lobby/me and POST /lobby answer (docs/API.md
// "Fair start"), or the problem's code when they refuse.
type lobbyAnswer struct {
	seckill.LobbyEntryJSON
	Code string `json:"code"`
}

// enterAll enters every buyer in the lobby once, spread over the first
// half of the lobby's window, each retried through faults until answered
// (bounded by starts_at: an entry is then refused, LOBBY_CLOSED).
func (s *shop) enterAll(window time.Duration, startsAt time.Time) {
	spread := window / 2
	start := time.Now()
	eachBuyer(s.o.buyers, 32, func(i int) {
		time.Sleep(time.Until(start.Add(spread * time.Duration(i) / time.Duration(s.o.buyers))))
		s.enter(i, startsAt)
	})
}

// enter is buyer i's entry, retried until answered or a little past
// startsAt. An entry answered 201 or 200 is one the draw must rank.
func (s *shop) enter(i int, startsAt time.Time) {
	token := s.token(i)
	for time.Now().Before(startsAt.Add(2 * time.Second)) {
		status, body, err := s.lobbyCall("POST", "/lobby", token)
		if err != nil {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		switch {
		case status == http.StatusCreated || status == http.StatusOK:
			s.mu.Lock()
			s.entered[i] = true
			s.entryAnswers[strconv.Itoa(status)]++
			s.mu.Unlock()
			return
		case status == http.StatusConflict || status == http.StatusNotFound:
			s.mu.Lock()
			s.entryAnswers[body.Code]++
			s.mu.Unlock()
			return
		}
		time.Sleep(300 * time.Millisecond) // 503, 5xx: try again
	}
	s.mu.Lock()
	s.entryAnswers["gave-up"]++
	s.mu.Unlock()
}

// learnOutcomes asks every buyer's GET /lobby/me once the draw is done, as
// the shop page does: a winner pays (or fails, or leaves) the order it
// names by the buyer's fate, as a 202's; an entrant told LOST who would
// pay (a third) claims once, as any buyer may after the draw (a SOLD_OUT
// joins the waitlist by --waitlist's share); WAITING entrants get their
// orders from the waitlist (followWaitlist). Each answer is kept for the
// referee.
func (s *shop) learnOutcomes() {
	var mu sync.Mutex
	var lost []int
	eachBuyer(s.o.buyers, 32, func(i int) {
		a, ok := s.lobbyMe(i)
		if !ok {
			return
		}
		s.mu.Lock()
		s.told[i] = a
		s.mu.Unlock()
		switch a.Status {
		case "WON":
			if a.OrderID != "" {
				s.drawOrder(a.OrderID, i)
			}
		case "LOST":
			if fate(s.seed, i) == 0 { // the losers who would pay try their luck
				mu.Lock()
				lost = append(lost, i)
				mu.Unlock()
			}
		}
	})
	sort.Ints(lost)
	// The losers' claims, a little spread: most are SOLD_OUT (or
	// SALE_ENDED); a unit no waiting buyer took may be theirs.
	start := time.Now()
	var claims sync.WaitGroup
	work := make(chan int)
	for range 16 {
		claims.Add(1)
		go func() {
			defer claims.Done()
			for i := range work {
				s.claim(i)
			}
		}()
	}
	for n, i := range lost {
		time.Sleep(time.Until(start.Add(3 * time.Second * time.Duration(n) / time.Duration(len(lost)))))
		work <- i
	}
	close(work)
	claims.Wait()
}

// lobbyMe is buyer i's GET /lobby/me, retried through faults (bounded):
// the answer, with Status "NOT_IN_LOBBY" for a buyer who has no entry.
func (s *shop) lobbyMe(i int) (lobbyAnswer, bool) {
	token := s.token(i)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		status, a, err := s.lobbyCall("GET", "/lobby/me", token)
		if err != nil {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		switch {
		case status == http.StatusOK:
			return a, true
		case status == http.StatusNotFound && a.Code == string(seckill.CodeNotInLobby):
			return lobbyAnswer{LobbyEntryJSON: seckill.LobbyEntryJSON{Status: a.Code}}, true
		}
		time.Sleep(300 * time.Millisecond) // 503 (the waitlist unreadable), 5xx: try again
	}
	return lobbyAnswer{}, false
}

// lobbyCall sends method to the sale's lobby resource at path (/lobby,
// /lobby/me) as the buyer of token, and reads the answer, or the
// problem's code.
func (s *shop) lobbyCall(method, path, token string) (int, lobbyAnswer, error) {
	req, _ := http.NewRequest(method, s.base+"/api/v1/sales/"+s.saleID+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, lobbyAnswer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	var a lobbyAnswer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a, nil
}

// drawOrder records order id, which the draw gave buyer i (GET /lobby/me
// says WON), once, and pays it by i's fate, as a 202's.
func (s *shop) drawOrder(id string, i int) { s.follow(id, i, false) }

// drawRow is the draw's record in the database, as the watcher polls it.
type drawRow struct {
	State    string
	NextRank int
	Entries  int
}

// drawFault is one strike at a step of the draw, as the JSON line reports
// it.
type drawFault struct {
	Step  string `json:"step"`
	Fault string `json:"fault"` // "worker" or "redis-primary"
	// Taken: the draw reached the step and the fault struck; false: the
	// draw was done (or the sale ended) before it.
	Taken     bool    `json:"taken"`
	AtSeconds float64 `json:"at_s,omitempty"`
	// State and NextRank: the draw's record just before the strike;
	// Progress: its admissions plus places queued, as Redis showed them.
	State    string `json:"draw_state,omitempty"`
	NextRank int    `json:"next_rank,omitempty"`
	Progress int64  `json:"progress,omitempty"`
}

// drawWatch follows one sale's draw and strikes at the plan's steps.
type drawWatch struct {
	ref      *referee
	dbName   string
	sale     int64
	units    int
	segments int
	start    time.Time // the run's, for the log's seconds
	endsAt   time.Time // the sale's
	worker   *proc.Proc
	// failover fails the Redis primary over (nil on one server); it runs
	// in a goroutine of its own, and returns when the primary is back.
	failover func() error
	faults   []drawFault
	seen     watchSeen

	// What run keeps between two reads.
	conn       *pgx.Conn
	pending    []drawStep // the worker's kills still to come
	failAt     *drawStep  // the failover still to come
	failing    sync.WaitGroup
	progress   int64 // the most seen: releases (a winner's timeout) lower the counts
	lastKill   int64 // progress at the last kill
	killedAt   string
	lastRead   time.Time
	lastMoves  time.Time
	lastRecord drawRow
	lastDB     time.Time
}

// watchSeen is how well the watcher saw the draw, as the JSON line reports
// it: a step is struck at the first read that shows it, so a long gap
// between two reads is a step struck late.
type watchSeen struct {
	Reads       int     `json:"reads"`
	DBErrors    int     `json:"db_errors"`
	RedisErrors int     `json:"redis_errors"`
	LongestGap  float64 `json:"longest_gap_ms"` // between two reads of both, while the draw ran
	// States: when the watcher first saw each state of the draw, seconds
	// from the run's start.
	States map[string]float64 `json:"states"`
}

// drawNow is one read of the draw: its record, and what Redis shows of it.
type drawNow struct {
	row       drawRow
	progress  int64 // admissions plus places queued, the most seen
	stocks    []int64
	borrowing bool // a move in flight, or a segment empty while another holds units
}

// run follows the draw from starts_at until the database records it done,
// or until within has passed: it reads the draw every 2 ms, fails the
// Redis primary over at the plan's rank, and SIGKILLs the worker at each of
// the plan's steps once the draw has moved since the last one (so two
// kills never fall into one gap). It returns whether the draw is done.
func (w *drawWatch) run(ctx context.Context, p lobbyPlan, within time.Duration) bool {
	w.pending, w.failAt, w.lastKill = append([]drawStep(nil), p.kills...), p.failover, -1
	w.seen.States = map[string]float64{}
	defer w.closeDB()
	deadline := time.Now().Add(within)
	done := false
	for !done && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
		now, ok := w.read(ctx)
		if !ok {
			continue
		}
		done = now.row.State == "DONE"
		w.failOverAt(now)
		w.strikeDue(now, done)
	}
	w.notTaken()
	w.failing.Wait()
	r := w.lastRecord
	fmt.Printf("  %5.1fs the draw is %s (next rank %d of %d entries)\n", time.Since(w.start).Seconds(), r.State, r.NextRank, r.Entries)
	return done
}

// read reads the draw's progress in Redis (the claims and waitlist entries
// it has made, the segments' stocks and, while a "borrow" step waits, the
// moves between segments) and, every 25 ms, its record in PostgreSQL: a
// settle step admits a rank in a millisecond or so, and only Redis shows
// it before the step ends. False while the record cannot be read or the
// lobby is still open.
func (w *drawWatch) read(ctx context.Context) (drawNow, bool) {
	if time.Since(w.lastDB) < 25*time.Millisecond && w.lastRecord.State != "" && w.lastRecord.State != "OPEN" {
		return w.readRedis(ctx, w.lastRecord), true
	}
	if w.conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := connectDB(cctx, w.dbName)
		cancel()
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			return drawNow{}, false
		}
		w.conn = c
	}
	row, err := readDraw(ctx, w.conn, w.sale)
	if err != nil {
		w.seen.DBErrors++
		w.closeDB()
		return drawNow{}, false
	}
	w.lastRecord, w.lastDB = row, time.Now()
	if _, ok := w.seen.States[row.State]; !ok {
		w.seen.States[row.State] = time.Since(w.start).Seconds()
	}
	if row.State == "OPEN" {
		return drawNow{}, false
	}
	return w.readRedis(ctx, row), true
}

// readRedis reads the draw's progress in Redis; its record is row.
func (w *drawWatch) readRedis(ctx context.Context, row drawRow) drawNow {
	now := drawNow{row: row}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	admitted, waiting, stocks, err := w.ref.drawProgress(rctx)
	if err != nil {
		w.seen.RedisErrors++
		now.progress = w.progress
		return now
	}
	w.progress = max(w.progress, admitted+waiting)
	now.progress, now.stocks = w.progress, stocks
	w.seen.Reads++
	if !w.lastRead.IsZero() {
		w.seen.LongestGap = max(w.seen.LongestGap, float64(time.Since(w.lastRead).Microseconds())/1000)
	}
	w.lastRead = time.Now()
	if hasKind(w.pending, "borrow") && row.State != "DONE" && admitted < int64(w.units) {
		empty, holding := false, int64(0)
		for _, v := range stocks {
			empty = empty || v == 0
			holding += max(v, 0)
		}
		now.borrowing = empty && holding > 0
		if !now.borrowing && time.Since(w.lastMoves) > 20*time.Millisecond {
			w.lastMoves = time.Now()
			ms, err := w.ref.rs.Moves(rctx, w.sale)
			now.borrowing = err == nil && len(ms) > 0
		}
	}
	return now
}

// failOverAt starts the Redis primary's failover once the draw's progress
// reaches the plan's rank, in a goroutine of its own (run waits for it).
func (w *drawWatch) failOverAt(now drawNow) {
	if w.failAt == nil || now.progress < int64(w.failAt.Rank) {
		return
	}
	f := drawFault{Step: w.failAt.String(), Fault: "redis-primary", Taken: true, AtSeconds: time.Since(w.start).Seconds(),
		State: now.row.State, NextRank: now.row.NextRank, Progress: now.progress}
	w.faults = append(w.faults, f)
	fmt.Printf("  %5.1fs draw fault: redis-primary failover at %s (draw %s, next rank %d, progress %d)\n",
		f.AtSeconds, w.failAt, now.row.State, now.row.NextRank, now.progress)
	w.failAt = nil
	w.failing.Add(1)
	go func() {
		defer w.failing.Done()
		if err := w.failover(); err != nil {
			fmt.Printf("  %5.1fs draw fault: redis-primary: %v\n", time.Since(w.start).Seconds(), err)
		}
	}()
}

// strikeDue SIGKILLs the worker at the first pending step that has come,
// if the draw has moved since the last kill (progress in Redis, or a new
// state: the step retried, or done). Once the draw is recorded done,
// "done" strikes whatever came before.
func (w *drawWatch) strikeDue(now drawNow, done bool) {
	if !done && now.progress <= w.lastKill && now.row.State == w.killedAt {
		return
	}
	for n, step := range w.pending {
		if (done && step.Kind == "done") || (!done && strikes(step, now)) {
			w.strike(n, now)
			return
		}
	}
}

// strike SIGKILLs the worker at pending step n (its supervisor restarts it;
// a HoldToEnd step keeps it down until the sale has ended).
func (w *drawWatch) strike(n int, now drawNow) {
	step := w.pending[n]
	w.worker.Kill()
	f := drawFault{Step: step.String(), Fault: "worker", Taken: true, AtSeconds: time.Since(w.start).Seconds(),
		State: now.row.State, NextRank: now.row.NextRank, Progress: now.progress}
	w.faults = append(w.faults, f)
	fmt.Printf("  %5.1fs draw fault: worker SIGKILLed at %s (draw %s, next rank %d, progress %d, stocks %v)\n",
		f.AtSeconds, step, now.row.State, now.row.NextRank, now.progress, now.stocks)
	w.pending = append(w.pending[:n], w.pending[n+1:]...)
	w.lastKill, w.killedAt = now.progress, now.row.State
	if step.HoldToEnd {
		w.holdDown()
	}
	w.lastRead = time.Time{} // a gap the watcher made is not one it missed
}

// notTaken records the steps the draw never reached (it was done, or the
// sale ended, before them).
func (w *drawWatch) notTaken() {
	for _, step := range w.pending {
		w.faults = append(w.faults, drawFault{Step: step.String(), Fault: "worker"})
	}
	if w.failAt != nil {
		w.faults = append(w.faults, drawFault{Step: w.failAt.String(), Fault: "redis-primary"})
	}
	w.pending, w.failAt = nil, nil
}

func (w *drawWatch) closeDB() {
	if w.conn != nil {
		_ = w.conn.Close(context.Background())
		w.conn = nil
	}
}

// holdDown keeps the worker down until a second after the sale's end: its
// supervisor restarts it half a second after each kill, and it is killed
// again within 100 ms of starting, before it can poll Temporal.
func (w *drawWatch) holdDown() {
	killed := w.worker.Pid() // just killed
	for time.Now().Before(w.endsAt.Add(time.Second)) {
		time.Sleep(100 * time.Millisecond)
		if pid := w.worker.Pid(); pid != killed {
			w.worker.Kill()
			killed = pid
		}
	}
	fmt.Printf("  %5.1fs draw fault: the worker is up again, the sale has ended\n", time.Since(w.start).Seconds())
}

// strikes says whether step has come, the draw being now.
func strikes(step drawStep, now drawNow) bool {
	switch step.Kind {
	case "closed":
		return now.row.State != "DONE" && now.progress == 0
	case "rank":
		return now.progress >= int64(step.Rank)
	case "borrow":
		return now.borrowing
	case "done":
		return now.row.State == "DONE"
	}
	return false
}

func hasKind(steps []drawStep, kind string) bool {
	for _, s := range steps {
		if s.Kind == kind {
			return true
		}
	}
	return false
}

func readDraw(ctx context.Context, conn *pgx.Conn, sale int64) (drawRow, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r drawRow
	var entries *int
	err := conn.QueryRow(ctx, `SELECT draw_state, draw_next_rank, draw_entries FROM sales WHERE id = $1`, sale).
		Scan(&r.State, &r.NextRank, &entries)
	if entries != nil {
		r.Entries = *entries
	}
	return r, err
}

// drawProgress reads what the draw has made in Redis: the claims (its
// admissions) and the waitlist's entries (its places queued) over every
// segment, and the segments' stocks (-1: not loaded).
func (r *referee) drawProgress(ctx context.Context) (admitted, waiting int64, stocks []int64, err error) {
	claims := make([]*redis.IntCmd, r.segments)
	waits := make([]*redis.IntCmd, r.segments)
	stock := make([]*redis.StringCmd, r.segments)
	_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range r.segments {
			k := r.rs.SegmentKeys(r.sale, q)
			claims[q], waits[q], stock[q] = p.HLen(ctx, k.Claims), p.ZCard(ctx, k.Wait), p.Get(ctx, k.Stock)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, nil, err
	}
	stocks = make([]int64, r.segments)
	for q := range r.segments {
		admitted += claims[q].Val()
		waiting += waits[q].Val()
		v, err := stock[q].Int64()
		if err != nil {
			v = -1
		}
		stocks[q] = v
	}
	return admitted, waiting, stocks, nil
}
