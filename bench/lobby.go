package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/draw/drawcli"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/proc"
	"github.com/seckill/seckill/store"
)

// LobbyOptions describe one run of `seckill bench --lobby` (docs/API.md
// "Fair start"): one sale with a lobby, every buyer entered once in an
// open loop at Rate, then the draw at starts_at, measured.
type LobbyOptions struct {
	// Options: APIURL, Config, Processes, Units, Buyers, Rate, Conns,
	// PaymentTimeout, OutDir and Progress are used; the rest are not.
	Options
	// Window is how long the lobby takes entries, from the first entry's
	// due time to starts_at [Buyers/Rate + Margin]. Entries due after
	// starts_at are not sent (LobbyEntries.NotSent).
	Window time.Duration
	// Margin is added to Buyers/Rate when Window is 0, so that entries
	// queued behind a slow server still land before starts_at
	// [max(15 s, 10% of Buyers/Rate)].
	Margin time.Duration
	// DrawWithin bounds the wait for the draw and its orders [30m].
	DrawWithin time.Duration
	// Verify runs draw.Verify on the published draw (as `seckill draw
	// verify` does) and reports its result and duration.
	Verify bool
	// ProcessesNow, when set, returns the children's pids at the time of
	// asking (System.Processes): a child restarted since the launch (the
	// worker exits when Temporal is not up yet) has a new pid, and the
	// draw's memory is the worker's at starts_at. Processes is used
	// otherwise.
	ProcessesNow func() map[string]int
}

// LobbyReport is what a lobby run measured. Seconds are from starts_at
// unless said otherwise; latencies are milliseconds.
type LobbyReport struct {
	Config   map[string]any `json:"config"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	SaleID   int64          `json:"sale_id"`
	StartsAt time.Time      `json:"starts_at"`
	// DrawWorkflowAfterSeconds: when the draw's workflow was found
	// running, from the sale's creation (polled every 250 ms).
	DrawWorkflowAfterSeconds float64 `json:"draw_workflow_after_seconds"`
	// StartsAtAfterSeconds: starts_at, from the sale's creation.
	StartsAtAfterSeconds float64      `json:"starts_at_after_creation_seconds"`
	Entries              LobbyEntries `json:"entries"`
	Draw                 DrawFigures  `json:"draw"`
	Memory               DrawMemory   `json:"memory"`
	Table                LobbyTable   `json:"lobby_entries_table"`
	Verify               *DrawVerify  `json:"verify,omitempty"`
	// Processes: every child's memory over the whole run (start, end, peak).
	Processes map[string]*Memory `json:"processes"`
}

// LobbyEntries sums up the entry phase.
type LobbyEntries struct {
	Offered int `json:"offered"` // buyers, one entry each
	Sent    int `json:"sent"`
	// NotSent: entries due at or after starts_at, never sent.
	NotSent int `json:"not_sent"`
	// Entered: answered 201 (a fresh entry).
	Entered int `json:"entered"`
	// OfferedPerSecond is --rate; WindowSeconds from the first entry due
	// to starts_at.
	OfferedPerSecond int     `json:"offered_per_second"`
	WindowSeconds    float64 `json:"window_seconds"`
	// WallSeconds: first entry due to last answer; PerSecond: entries
	// answered 201 per wall second (the rate the lobby sustained).
	WallSeconds float64 `json:"wall_seconds"`
	PerSecond   float64 `json:"per_second"`
	// LastAnswerBeforeStartSeconds: how long before starts_at the last
	// answer arrived (negative: after it).
	LastAnswerBeforeStartSeconds float64        `json:"last_answer_before_start_seconds"`
	HTTPStatus                   map[string]int `json:"http_status"`
	// Errors counts every answer other than 201 by status and code
	// ("409 LOBBY_CLOSED", "0 NO_ANSWER").
	Errors map[string]int `json:"errors"`
	// Latency of the 201s, from each entry's due time (open loop); All:
	// every answer.
	Latency Latencies `json:"entered_latency"`
	All     Latencies `json:"all_latency"`
}

// DrawFigures are the draw's outcome and timing.
type DrawFigures struct {
	Entries  int `json:"entries"`  // GET /draw "entries"
	Admitted int `json:"admitted"` // GET /draw "admitted"
	// AdmittedOK: admitted == min(units, entries); EntriesOK: every entry
	// answered 201 is in the draw (entries >= entered, <= sent).
	AdmittedOK bool `json:"admitted_is_min_units_entries"`
	EntriesOK  bool `json:"entries_cover_201s"`
	Orders     int  `json:"orders"` // GET /draw/orders
	// Outcomes of the entries (lobby_entries.outcome) after the draw.
	Outcomes map[string]int `json:"outcomes"`
	// Seconds from starts_at: the draw observed CLOSED and RANKED (polled
	// every 100 ms), the first and the last winner's admission
	// (idgen.Time of the order ids), the draw DONE (sales.drawn_at), and
	// the last winner's order AWAITING_PAYMENT (orders.awaiting_at),
	// i.e. admitted and payable ("202-equivalent").
	ClosedSeconds         float64 `json:"closed_seconds"`
	RankedSeconds         float64 `json:"ranked_seconds"`
	FirstAdmissionSeconds float64 `json:"first_admission_seconds"`
	LastAdmissionSeconds  float64 `json:"last_admission_seconds"`
	DoneSeconds           float64 `json:"done_seconds"`
	LastAwaitingSeconds   float64 `json:"last_awaiting_payment_seconds"`
	// AdmittedToAwaiting: each winner's admission to its AWAITING_PAYMENT.
	AdmittedToAwaiting Latencies `json:"admitted_to_awaiting_payment"`
}

// DrawMemory is the worker's memory around the draw, bytes.
type DrawMemory struct {
	// Before: just before starts_at (VmRSS, and VmHWM: the peak since the
	// worker started).
	BeforeRSS int64 `json:"worker_before_rss"`
	BeforeHWM int64 `json:"worker_before_hwm"`
	// PeakSampledRSS: the largest VmRSS of the samples taken every 100 ms
	// from starts_at until the last winner was payable and the draw done.
	PeakSampledRSS int64 `json:"worker_peak_sampled_rss"`
	// HWMDuring: VmHWM at the end when it could be reset at starts_at
	// (/proc/PID/clear_refs 5): the exact peak during the draw; 0 when
	// it could not.
	HWMDuring int64 `json:"worker_hwm_during_draw,omitempty"`
	EndRSS    int64 `json:"worker_end_rss"`
	EndHWM    int64 `json:"worker_end_hwm"`
	Samples   int   `json:"samples"`
	// Series is [seconds from starts_at, worker VmRSS MB] every 100 ms.
	Series [][2]float64 `json:"worker_rss_series_mb"`
}

// LobbyTable is pg_total_relation_size('lobby_entries') (the run's
// database holds this sale only), before the draw and after it (the draw
// rewrites each row twice: rank, then outcome).
type LobbyTable struct {
	BeforeDrawBytes int64 `json:"before_draw_bytes"`
	BeforeHeapBytes int64 `json:"before_draw_heap_bytes"`
	BeforeIdxBytes  int64 `json:"before_draw_index_bytes"`
	AfterDrawBytes  int64 `json:"after_draw_bytes"`
	Rows            int64 `json:"rows"`
}

// DrawVerify is draw.Verify run on the published draw.
type DrawVerify struct {
	OK            bool     `json:"ok"`
	Failed        []string `json:"failed,omitempty"`
	Checks        int      `json:"checks"`
	FetchSeconds  float64  `json:"fetch_seconds"`  // the draw, the entries and the orders, over HTTP
	VerifySeconds float64  `json:"verify_seconds"` // draw.Verify itself
	Error         string   `json:"error,omitempty"`
}

func (o *LobbyOptions) defaults() error {
	if o.Units == 0 {
		o.Units = 10000
	}
	if o.PaymentTimeout == 0 {
		// Long enough that no winner's order times out (and hands its
		// unit to the waitlist) while the run measures.
		o.PaymentTimeout = time.Hour
	}
	if err := o.Options.defaults(); err != nil {
		return err
	}
	if o.DrawWithin == 0 {
		o.DrawWithin = 30 * time.Minute
	}
	if o.Window == 0 {
		phase := time.Duration(float64(o.Buyers) / float64(o.Rate) * float64(time.Second))
		margin := o.Margin
		if margin == 0 {
			margin = max(15*time.Second, phase/10)
		}
		o.Window = phase + margin
	}
	if o.Window < time.Second {
		return fmt.Errorf("bench: the lobby window must be at least 1s, got %s", o.Window)
	}
	return nil
}

// RunLobby runs the lobby benchmark and returns its report. An error means
// the run could not be carried out; failed checks are in the report
// (LobbyReport.OK).
func RunLobby(ctx context.Context, o LobbyOptions) (*LobbyReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	r, err := startLobbyRun(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.deps.Close()
	if err := r.mintTokens(); err != nil {
		return nil, err
	}
	if err := r.openLobby(ctx); err != nil {
		return nil, err
	}
	workflowAfter := r.watchDrawWorkflow(ctx)
	r.enterEveryBuyer()
	if err := r.measureLobbyBeforeDraw(ctx); err != nil {
		return nil, err
	}
	if err := r.waitForStartsAt(ctx); err != nil {
		return nil, err
	}
	worker := r.watchWorker(ctx)
	defer worker.stop()
	r.say("the draw runs at starts_at ...")
	if err := r.followDraw(ctx); err != nil {
		return nil, err
	}
	worker.finish()
	r.rep.DrawWorkflowAfterSeconds = workflowAfter()
	if err := r.measureLobbyAfterDraw(ctx); err != nil {
		return nil, err
	}
	r.mem.sampleMemory(worker.pids, true)
	if o.Verify {
		r.say("verifying the published draw (draw.Verify) ...")
		r.rep.Verify = verifyDraw(ctx, o, r.sale)
	}
	r.rep.Finished = time.Now().UTC()
	if err := r.rep.write(o.OutDir); err != nil {
		return nil, err
	}
	return r.rep, nil
}

// lobbyRun is one run of the lobby benchmark, as its steps share it.
type lobbyRun struct {
	o     LobbyOptions
	host  string
	say   func(string, ...any)
	deps  *app.Deps
	st    *store.Store
	rep   *LobbyReport
	mem   *Report // every child's memory over the run, into rep.Processes
	runID string

	tokens   [][]byte // one per buyer, until every buyer has entered
	sale     int64
	first    time.Time // the first entry's due time
	startsAt time.Time
	created  time.Time // when the sale was created
}

// startLobbyRun connects to the system under test and notes every child's
// memory at the start.
func startLobbyRun(ctx context.Context, o LobbyOptions) (*lobbyRun, error) {
	host, say, deps, err := begin(ctx, o.APIURL, o.Progress, o.Config)
	if err != nil {
		return nil, err
	}
	rep := &LobbyReport{Config: lobbyConfig(o), Started: time.Now().UTC(), Processes: map[string]*Memory{}}
	r := &lobbyRun{o: o, host: host, say: say, deps: deps, st: deps.Store, rep: rep, mem: &Report{Processes: rep.Processes},
		runID: strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	r.mem.sampleMemory(o.Processes, false)
	return r, nil
}

// mintTokens signs every buyer's token before the sale exists, so that
// signing costs nothing while the lobby is open.
func (r *lobbyRun) mintTokens() error {
	r.say("minting %d buyer tokens ...", r.o.Buyers)
	tokens, err := mintTokens(r.o.Config.JWTSecret, r.o.Buyers, r.runID)
	r.tokens = tokens
	return err
}

// openLobby creates the sale, its lobby open now: the first entry is due
// 2 s after the sale is created (its answer and the API's sale cache), and
// starts_at is Window after that.
func (r *lobbyRun) openLobby(ctx context.Context) error {
	// The sale starts its draw's workflow when it is created: wait until
	// the launched Temporal knows its namespace (it can lag the API's
	// readiness; the worker's reconciliation would start the draw later).
	if err := waitNamespace(ctx, r.deps.Temporal, time.Minute); err != nil {
		return err
	}
	r.first = time.Now().Add(2 * time.Second)
	r.startsAt = r.first.Add(r.o.Window).UTC().Truncate(time.Millisecond)
	sale, err := createLobbySale(ctx, r.o, "bench lobby "+r.runID, r.startsAt)
	if err != nil {
		return err
	}
	r.sale, r.created = sale, time.Now()
	r.rep.SaleID, r.rep.StartsAt = sale, r.startsAt
	r.rep.StartsAtAfterSeconds = r.startsAt.Sub(r.created).Seconds()
	return nil
}

// watchDrawWorkflow looks for the draw's workflow every 250 ms until a
// minute past starts_at; the returned function says when it was found,
// in seconds from the sale's creation (0: not found). The workflow is
// started with the sale, or (when Temporal refused then) by the worker's
// reconciliation: the draw is late if it starts after starts_at.
func (r *lobbyRun) watchDrawWorkflow(ctx context.Context) (foundAfter func() float64) {
	var afterMs atomic.Int64
	go func() {
		for time.Now().Before(r.startsAt.Add(time.Minute)) {
			if _, err := r.deps.Temporal.DescribeWorkflowExecution(ctx, "draw-"+strconv.FormatInt(r.sale, 10), ""); err == nil {
				afterMs.Store(max(time.Since(r.created).Milliseconds(), 1))
				if time.Now().After(r.startsAt) {
					r.say("WARNING: the draw's workflow started %.1fs after starts_at", time.Since(r.startsAt).Seconds())
				}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() float64 { return float64(afterMs.Load()) / 1000 }
}

// enterEveryBuyer sends every buyer's entry (enterAll) and lets the
// tokens go.
func (r *lobbyRun) enterEveryBuyer() {
	o := r.o
	r.say("sale %d: %d units, lobby open now, starts_at %s (in %s); %d entries at %d/s",
		r.sale, o.Units, r.startsAt.Format(time.RFC3339Nano), time.Until(r.startsAt).Round(time.Second), o.Buyers, o.Rate)
	lr := enterAll(lobbyPlan{host: r.host, sale: r.sale, tokens: r.tokens, rate: o.Rate, conns: o.Conns,
		start: r.first, deadline: r.startsAt, progress: o.Progress})
	r.tokens = nil
	r.rep.addEntries(o, lr, r.startsAt)
	e := r.rep.Entries
	r.say("entries: %d sent (%d not sent: due after starts_at), %d answered 201 in %.1fs = %.0f/s; errors %v",
		e.Sent, e.NotSent, e.Entered, e.WallSeconds, e.PerSecond, e.Errors)
}

// measureLobbyBeforeDraw reads the table as the draw finds it (the lobby
// takes nothing more after the last answer, and nobody else writes it).
func (r *lobbyRun) measureLobbyBeforeDraw(ctx context.Context) error {
	size, err := r.st.LobbySize(ctx)
	if err != nil {
		return err
	}
	t := &r.rep.Table
	t.BeforeDrawBytes, t.BeforeHeapBytes, t.BeforeIdxBytes = size.Total, size.Heap, size.Indexes
	t.Rows, err = r.st.LobbyCount(ctx, r.sale)
	return err
}

// measureLobbyAfterDraw reads the table's size once the draw has written
// every entry's rank and outcome.
func (r *lobbyRun) measureLobbyAfterDraw(ctx context.Context) error {
	size, err := r.st.LobbySize(ctx)
	r.rep.Table.AfterDrawBytes = size.Total
	return err
}

// waitForStartsAt waits until just before starts_at, when the worker's
// memory is read.
func (r *lobbyRun) waitForStartsAt(ctx context.Context) error {
	d := time.Until(r.startsAt.Add(-200 * time.Millisecond))
	if d <= 0 {
		return nil
	}
	r.say("waiting %s for starts_at ...", d.Round(100*time.Millisecond))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// workerWatch follows the worker's memory through the draw.
type workerWatch struct {
	mem  *DrawMemory
	pids map[string]int // the children's, at starts_at
	pid  int            // the worker's; 0 when it has no process of its own
	// reset: its VmHWM was reset at starts_at, so that its value at the
	// end is the draw's own peak.
	reset bool
	stop  func() // stops the sampling, and waits for it
}

// watchWorker reads the worker's memory just before starts_at, resets its
// VmHWM, and samples its VmRSS every 100 ms until stopped.
func (r *lobbyRun) watchWorker(ctx context.Context) *workerWatch {
	w := &workerWatch{mem: &r.rep.Memory, pids: r.o.Processes}
	if r.o.ProcessesNow != nil {
		w.pids = r.o.ProcessesNow()
	}
	w.pid = w.pids["worker"]
	if w.pid != 0 {
		w.mem.BeforeRSS, w.mem.BeforeHWM, _ = proc.Memory(w.pid)
		w.reset = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", w.pid), []byte("5"), 0) == nil
	}
	sampling, stopSampling := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.rep.sampleWorker(sampling, w.pid, r.startsAt)
	}()
	w.stop = func() { stopSampling(); <-done }
	return w
}

// finish stops the sampling and reads the worker's memory at the end.
func (w *workerWatch) finish() {
	w.stop()
	if w.pid == 0 {
		return
	}
	w.mem.EndRSS, w.mem.EndHWM, _ = proc.Memory(w.pid)
	if w.reset {
		w.mem.HWMDuring = w.mem.EndHWM
	}
}

// write writes the report to dir/bench.json ("": nowhere).
func (r *LobbyReport) write(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bench.json"), append(b, '\n'), 0o644)
}

func lobbyConfig(o LobbyOptions) map[string]any {
	return map[string]any{
		"mode": "lobby", "units": o.Units, "buyers": o.Buyers, "rate": o.Rate, "conns": o.Conns,
		"window_seconds": o.Window.Seconds(), "payment_timeout_seconds": o.PaymentTimeout.Seconds(),
		"verify": o.Verify,
	}
}

// createLobbySale creates a sale whose lobby is open now and which starts
// (and draws) at startsAt.
func createLobbySale(ctx context.Context, o LobbyOptions, name string, startsAt time.Time) (int64, error) {
	return postSale(ctx, o.APIURL, o.Config.JWTSecret, map[string]any{
		"name": name, "price_cents": 990, "stock": o.Units,
		"lobby_opens_at":          time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano),
		"starts_at":               startsAt.Format(time.RFC3339Nano),
		"ends_at":                 startsAt.Add(6 * time.Hour).Format(time.RFC3339Nano),
		"payment_timeout_seconds": int(o.PaymentTimeout / time.Second),
		"stock_segments":          o.Segments,
	})
}

// waitNamespace waits until Temporal answers for the namespace: asking
// for a workflow that does not exist answers NotFound then, and
// NamespaceNotFound (or Unavailable) before.
func waitNamespace(ctx context.Context, c client.Client, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		_, err := c.DescribeWorkflowExecution(ctx, "bench-namespace-probe", "")
		var nf *serviceerror.NotFound
		if err == nil || errors.As(err, &nf) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: Temporal does not answer for its namespace: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// lobbyPlan is the entry phase: buyer i's entry is due at start + i/rate,
// none is sent at or after deadline (starts_at).
type lobbyPlan struct {
	host            string
	sale            int64
	tokens          [][]byte
	rate, conns     int
	start, deadline time.Time
	progress        io.Writer
}

type lobbyResult struct {
	sent, notSent, entered int
	wall                   time.Duration // first due to last answer
	lastAnswer             time.Time
	statuses               map[int]int
	errors                 map[string]int
	entered201, all        *hdrhistogram.Histogram
}

// enterAll enters every buyer once, on an open loop (openLoop): buyer i's
// entry is due at start + i/rate, and none is sent at or after starts_at.
func enterAll(p lobbyPlan) *lobbyResult {
	path := salePath(p.sale, "lobby")
	n := len(p.tokens)
	tally := &entryTally{}
	loop := openLoop{host: p.host, requests: n, rate: p.rate, conns: p.conns, start: p.start, deadline: p.deadline}
	if p.progress != nil {
		prev := int64(0)
		loop.progress = func(now time.Time) {
			a := tally.answered.Load()
			fmt.Fprintf(p.progress, "  %6.1fs  due %d/%d  answered %d (%d/s)  errors %d  starts_at in %s\n",
				now.Sub(p.start).Seconds(), min(int64(now.Sub(p.start).Seconds()*float64(p.rate)), int64(n)), n,
				a, a-prev, tally.errors.Load(), time.Until(p.deadline).Round(time.Second))
			prev = a
		}
	}
	lanes := make([]*entryLane, p.conns)
	lr := loop.run(func(w int) lane {
		lanes[w] = &entryLane{path: path, tokens: p.tokens, tally: tally, errors: map[string]int{},
			entered201: newHist(), all: newHist()}
		return lanes[w]
	})
	res := &lobbyResult{sent: lr.sent, notSent: lr.notSent, statuses: lr.statuses, errors: map[string]int{},
		entered201: newHist(), all: newHist()}
	for _, l := range lanes {
		res.entered += l.entered
		res.entered201.Merge(l.entered201)
		res.all.Merge(l.all)
		for k, v := range l.errors {
			res.errors[k] += v
		}
	}
	if ns := tally.lastAnswerUnixNs.Load(); ns != 0 {
		res.lastAnswer = time.Unix(0, ns)
		res.wall = res.lastAnswer.Sub(p.start)
	}
	return res
}

// entryTally is what every lane of the entries counts together: the
// progress line's figures, and the last answer.
type entryTally struct {
	answered, errors atomic.Int64
	lastAnswerUnixNs atomic.Int64
}

// entryLane is one worker of the entries: it records each answer's
// latency, and names every answer other than 201.
type entryLane struct {
	path   []byte
	tokens [][]byte
	tally  *entryTally

	entered         int
	entered201, all *hdrhistogram.Histogram
	errors          map[string]int
}

func (e *entryLane) target(i int) (path, token []byte) { return e.path, e.tokens[i] }

func (e *entryLane) answered(x *exchange) {
	lat := max(x.latency().Microseconds(), 1)
	e.tally.answered.Add(1)
	if x.err == nil {
		e.tally.lastAnswerUnixNs.Store(max(e.tally.lastAnswerUnixNs.Load(), x.answered.UnixNano()))
		_ = e.all.RecordValue(lat)
	}
	if x.status() == fasthttp.StatusCreated {
		e.entered++
		_ = e.entered201.RecordValue(lat)
	} else {
		e.tally.errors.Add(1)
		e.errors[answerKey(x.err, x.resp)]++
	}
}

// answerKey names an answer other than 201: "<status> <code>".
func answerKey(err error, resp *fasthttp.Response) string {
	if err != nil {
		return "0 NO_ANSWER"
	}
	var body struct{ Code string }
	_ = json.Unmarshal(resp.Body(), &body)
	if body.Code == "" {
		return strconv.Itoa(resp.StatusCode())
	}
	return strconv.Itoa(resp.StatusCode()) + " " + body.Code
}

func (r *LobbyReport) addEntries(o LobbyOptions, lr *lobbyResult, startsAt time.Time) {
	e := &r.Entries
	e.Offered, e.Sent, e.NotSent, e.Entered = o.Buyers, lr.sent, lr.notSent, lr.entered
	e.OfferedPerSecond, e.WindowSeconds = o.Rate, o.Window.Seconds()
	e.WallSeconds = lr.wall.Seconds()
	if lr.wall > 0 {
		e.PerSecond = float64(lr.entered) / lr.wall.Seconds()
	}
	if !lr.lastAnswer.IsZero() {
		e.LastAnswerBeforeStartSeconds = startsAt.Sub(lr.lastAnswer).Seconds()
	}
	e.HTTPStatus = map[string]int{}
	for k, v := range lr.statuses {
		e.HTTPStatus[strconv.Itoa(k)] = v
	}
	e.Errors = lr.errors
	e.Latency = latencies(lr.entered201, lr.wall)
	e.All = latencies(lr.all, lr.wall)
}

// sampleWorker reads the worker's VmRSS every 100 ms until ctx is done.
func (r *LobbyReport) sampleWorker(ctx context.Context, pid int, startsAt time.Time) {
	if pid == 0 {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if rss, _, err := proc.Memory(pid); err == nil {
			r.Memory.PeakSampledRSS = max(r.Memory.PeakSampledRSS, rss)
			r.Memory.Samples++
			r.Memory.Series = append(r.Memory.Series, [2]float64{
				float64(time.Since(startsAt).Milliseconds()) / 1000, float64(rss) / (1 << 20)})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// followDraw follows the draw from starts_at until it is DONE and every
// winner's order is payable, then reads its figures.
func (r *lobbyRun) followDraw(ctx context.Context) error {
	if err := r.waitDrawSettled(ctx); err != nil {
		return err
	}
	if err := r.readDrawDone(ctx); err != nil {
		return err
	}
	orders, err := r.readPublishedDraw(ctx)
	if err != nil {
		return err
	}
	r.measureAdmissions(orders)
	if err := r.measureAwaiting(ctx, orders); err != nil {
		return err
	}
	return r.countOutcomes(ctx)
}

// since is t in seconds from starts_at.
func (r *lobbyRun) since(t time.Time) float64 { return t.Sub(r.startsAt).Seconds() }

// waitDrawSettled polls the draw every 100 ms until it is DONE and no
// winner's order is still QUEUED, noting when it was first seen CLOSED
// and RANKED, and saying how it goes every 5 s.
func (r *lobbyRun) waitDrawSettled(ctx context.Context) error {
	deadline := time.Now().Add(r.o.DrawWithin)
	sayDue := every(5 * time.Second)
	for {
		d, err := r.st.DrawOf(ctx, r.sale)
		if err != nil {
			return err
		}
		now := time.Now()
		r.rep.Draw.noteState(d.State, r.since(now))
		settled, err := r.drawSettled(ctx, d, now, sayDue)
		if err != nil || settled {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the draw and its orders were not done within %s (state %s, next rank %d)", r.o.DrawWithin, d.State, d.NextRank)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noteState records when the draw was first seen CLOSED and RANKED, at
// seconds from starts_at (a draw first seen further on was that too).
func (f *DrawFigures) noteState(state string, at float64) {
	switch state {
	case seckill.DrawClosed:
		if f.ClosedSeconds == 0 {
			f.ClosedSeconds = at
		}
	case seckill.DrawRanked, seckill.DrawDone:
		if f.ClosedSeconds == 0 {
			f.ClosedSeconds = at
		}
		if f.RankedSeconds == 0 {
			f.RankedSeconds = at
		}
	}
}

// drawSettled reports whether the draw d, read at now, is DONE and every
// winner's saga has written its order; when not, and sayDue says so, it
// says how far the draw is.
func (r *lobbyRun) drawSettled(ctx context.Context, d *seckill.Draw, now time.Time, sayDue func() bool) (bool, error) {
	if d.State != seckill.DrawDone {
		if !sayDue() {
			return false, nil
		}
		orders, err := countOrders(ctx, r.st, []int64{r.sale}, leftQueued)
		if err != nil {
			return false, err
		}
		r.say("  %.0fs: draw %s, next rank %d of %d; %d orders AWAITING_PAYMENT", r.since(now), d.State, d.NextRank, d.Entries, orders)
		return false, nil
	}
	// Done: then wait for every winner's saga.
	waiting, err := r.st.WinnersNotYetPayable(ctx, r.sale)
	if err != nil {
		return false, err
	}
	if waiting > 0 && sayDue() {
		r.say("  %.0fs: draw DONE; %d winners' orders not AWAITING_PAYMENT yet", r.since(now), waiting)
	}
	return waiting == 0, nil
}

// every returns a function that reports true at most once per period,
// the first time a period after it was made.
func every(period time.Duration) func() bool {
	last := time.Now()
	return func() bool {
		if time.Since(last) < period {
			return false
		}
		last = time.Now()
		return true
	}
}

// readDrawDone notes when the draw was recorded DONE (sales.drawn_at).
func (r *lobbyRun) readDrawDone(ctx context.Context) error {
	d, err := r.st.DrawOf(ctx, r.sale)
	if err != nil {
		return err
	}
	if d.DrawnAt != nil {
		r.rep.Draw.DoneSeconds = r.since(*d.DrawnAt)
	}
	return nil
}

// readPublishedDraw reads what the API publishes of the draw, checks its
// counts against the entries, and returns the orders it lists.
func (r *lobbyRun) readPublishedDraw(ctx context.Context) ([]int64, error) {
	c, sale, f := drawClient(r.o), strconv.FormatInt(r.sale, 10), &r.rep.Draw
	pub, err := c.Draw(ctx, sale)
	if err != nil {
		return nil, err
	}
	f.Entries, f.Admitted = int(pub.Entries), int(pub.Admitted)
	f.AdmittedOK = f.Admitted == min(r.o.Units, f.Entries)
	f.EntriesOK = f.Entries >= r.rep.Entries.Entered && f.Entries <= r.rep.Entries.Sent
	listed, err := c.Orders(ctx, sale)
	if err != nil {
		return nil, err
	}
	orders := make([]int64, len(listed))
	for i, x := range listed {
		if orders[i], err = strconv.ParseInt(x.ID, 10, 64); err != nil {
			return nil, fmt.Errorf("GET /draw/orders: order id %q", x.ID)
		}
	}
	f.Orders = len(orders)
	return orders, nil
}

// measureAdmissions notes the first and the last winner's admission, from
// the times in their order ids.
func (r *lobbyRun) measureAdmissions(orders []int64) {
	if len(orders) == 0 {
		return
	}
	var first, last time.Time
	for _, id := range orders {
		t := idgen.Time(id)
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	r.rep.Draw.FirstAdmissionSeconds, r.rep.Draw.LastAdmissionSeconds = r.since(first), r.since(last)
}

// measureAwaiting measures each of the draw's orders from its admission
// to its AWAITING_PAYMENT, and notes when the last one got there.
func (r *lobbyRun) measureAwaiting(ctx context.Context, orders []int64) error {
	drawn := make(map[int64]bool, len(orders))
	for _, id := range orders {
		drawn[id] = true
	}
	lines, err := r.st.OrderTimelines(ctx, []int64{r.sale})
	if err != nil {
		return err
	}
	h := newHist()
	var last time.Time
	for _, l := range lines {
		if !drawn[l.ID] || l.AwaitingAt == nil {
			continue
		}
		_ = h.RecordValue(max(l.AwaitingAt.Sub(idgen.Time(l.ID)).Microseconds(), 1))
		if l.AwaitingAt.After(last) {
			last = *l.AwaitingAt
		}
	}
	r.rep.Draw.AdmittedToAwaiting = latencies(h, 0)
	if !last.IsZero() {
		r.rep.Draw.LastAwaitingSeconds = r.since(last)
	}
	return nil
}

// countOutcomes counts the entries by the outcome the draw gave them
// ("NONE": not settled).
func (r *lobbyRun) countOutcomes(ctx context.Context) error {
	outcomes, err := r.st.EntryOutcomes(ctx, r.sale)
	if err != nil {
		return err
	}
	r.rep.Draw.Outcomes = map[string]int{}
	for outcome, n := range outcomes {
		if outcome == "" {
			outcome = "NONE"
		}
		r.rep.Draw.Outcomes[outcome] = int(n)
	}
	return nil
}

// drawClient reads the published draw as `seckill draw verify` does, with
// an admin token for the order list.
func drawClient(o LobbyOptions) *drawcli.Client {
	return &drawcli.Client{Base: o.APIURL, HTTP: &http.Client{Timeout: 10 * time.Minute}, AdminToken: func() (string, error) {
		return auth.SignToken(o.Config.JWTSecret, "bench-admin", true, time.Hour)
	}}
}

// verifyDraw reads the published draw as `seckill draw verify` does and
// checks it, timing both.
func verifyDraw(ctx context.Context, o LobbyOptions, sale int64) *DrawVerify {
	v := &DrawVerify{}
	t := time.Now()
	p, err := drawClient(o).Fetch(ctx, strconv.FormatInt(sale, 10))
	v.FetchSeconds = time.Since(t).Seconds()
	if err != nil {
		v.Error = err.Error()
		return v
	}
	t = time.Now()
	p.DevChainOK = true // the launched system's development beacon (bench.Launch)
	vr := draw.Verify(p)
	v.VerifySeconds = time.Since(t).Seconds()
	v.OK, v.Failed, v.Checks = vr.OK(), vr.Failed(), len(vr.Checks)
	return v
}

// OK reports whether the run's checks passed: no entry got a server error
// or no answer, admitted == min(units, entries), every 201 is in the draw,
// every winner has its order listed, and the verifier (when run) agreed.
func (r *LobbyReport) OK() bool {
	return len(r.Problems()) == 0
}

// Problems lists the checks that failed.
func (r *LobbyReport) Problems() []string {
	var out []string
	for code, n := range r.Entries.HTTPStatus {
		if code == "0" || strings.HasPrefix(code, "5") {
			out = append(out, fmt.Sprintf("%d entries answered %s", n, code))
		}
	}
	if r.DrawWorkflowAfterSeconds == 0 || r.DrawWorkflowAfterSeconds > r.StartsAtAfterSeconds {
		out = append(out, fmt.Sprintf("the draw's workflow was not running by starts_at (found %.1fs after the sale's creation): the draw's times include that delay", r.DrawWorkflowAfterSeconds))
	}
	if !r.Draw.AdmittedOK {
		out = append(out, fmt.Sprintf("admitted %d, not min(units, entries %d)", r.Draw.Admitted, r.Draw.Entries))
	}
	if !r.Draw.EntriesOK {
		out = append(out, fmt.Sprintf("the draw has %d entries; %d were answered 201, %d sent", r.Draw.Entries, r.Entries.Entered, r.Entries.Sent))
	}
	if r.Draw.Orders != r.Draw.Admitted {
		out = append(out, fmt.Sprintf("%d orders listed for %d admitted", r.Draw.Orders, r.Draw.Admitted))
	}
	if v := r.Verify; v != nil && !v.OK {
		if v.Error != "" {
			out = append(out, "verify: "+v.Error)
		} else {
			out = append(out, "verify failed: "+strings.Join(v.Failed, "; "))
		}
	}
	sort.Strings(out)
	return out
}

// String renders the report.
func (r *LobbyReport) String() string {
	var b strings.Builder
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	e := r.Entries
	fmt.Fprintf(&b, "lobby of sale %d: %d buyers offered at %d/s over a %.1fs window; %d sent, %d not sent (due after starts_at)\n",
		r.SaleID, e.Offered, e.OfferedPerSecond, e.WindowSeconds, e.Sent, e.NotSent)
	fmt.Fprintf(&b, "entries: %d answered 201 in %.1fs = %.0f entries/s sustained; last answer %.1fs before starts_at; HTTP %v\n",
		e.Entered, e.WallSeconds, e.PerSecond, e.LastAnswerBeforeStartSeconds, e.HTTPStatus)
	if len(e.Errors) > 0 {
		fmt.Fprintf(&b, "entry errors: %v\n", e.Errors)
	}
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "answer\tcount\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\t")
	row := func(name string, l Latencies) {
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.1f\t\n", name, l.Count, l.P50, l.P99, l.P999, l.Max)
	}
	row("entry 201", e.Latency)
	row("all answers", e.All)
	row("winner: admitted->AWAITING_PAYMENT", r.Draw.AdmittedToAwaiting)
	_ = w.Flush()
	d := r.Draw
	fmt.Fprintf(&b, "draw: %d entries, %d admitted (min(units, entries) %v), %d orders listed; outcomes %v\n",
		d.Entries, d.Admitted, d.AdmittedOK, d.Orders, d.Outcomes)
	fmt.Fprintf(&b, "draw workflow running %.1fs after the sale's creation (starts_at was %.1fs after it)\n",
		r.DrawWorkflowAfterSeconds, r.StartsAtAfterSeconds)
	fmt.Fprintf(&b, "draw from starts_at: CLOSED seen %.1fs, RANKED seen %.1fs, first admission %.2fs, last admission %.2fs, DONE %.2fs, last winner AWAITING_PAYMENT %.2fs\n",
		d.ClosedSeconds, d.RankedSeconds, d.FirstAdmissionSeconds, d.LastAdmissionSeconds, d.DoneSeconds, d.LastAwaitingSeconds)
	m := r.Memory
	during := "-"
	if m.HWMDuring > 0 {
		during = fmt.Sprintf("%.0f MB", mb(m.HWMDuring))
	}
	if m.Samples == 0 {
		fmt.Fprintf(&b, "worker memory: not measured (no worker process of its own)\n")
	} else {
		fmt.Fprintf(&b, "worker memory: before the draw RSS %.0f MB (HWM %.0f MB); during it peak RSS %.0f MB (%d samples, 100 ms), VmHWM reset at starts_at %s; end RSS %.0f MB\n",
			mb(m.BeforeRSS), mb(m.BeforeHWM), mb(m.PeakSampledRSS), m.Samples, during, mb(m.EndRSS))
	}
	t := r.Table
	per := 0.0
	if t.Rows > 0 {
		per = float64(t.BeforeDrawBytes) / float64(t.Rows)
	}
	fmt.Fprintf(&b, "lobby_entries: %d rows, %.1f MB before the draw (heap %.1f MB, indexes %.1f MB; %.0f B per entry), %.1f MB after it\n",
		t.Rows, mb(t.BeforeDrawBytes), mb(t.BeforeHeapBytes), mb(t.BeforeIdxBytes), per, mb(t.AfterDrawBytes))
	if v := r.Verify; v != nil {
		verdict := "the draw checks out"
		switch {
		case v.Error != "":
			verdict = "could not verify: " + v.Error
		case !v.OK:
			verdict = "FAILED: " + strings.Join(v.Failed, "; ")
		}
		fmt.Fprintf(&b, "verify: %s (%d checks; fetch %.1fs, verify %.2fs)\n", verdict, v.Checks, v.FetchSeconds, v.VerifySeconds)
	}
	for _, k := range sortedKeys(r.Processes) {
		p := r.Processes[k]
		fmt.Fprintf(&b, "memory %-8s RSS start %.0f MB, end %.0f MB, peak %.0f MB\n", k, mb(p.StartRSS), mb(p.EndRSS), mb(p.PeakRSS))
	}
	if p := r.Problems(); len(p) > 0 {
		fmt.Fprintf(&b, "PROBLEMS: %s\n", strings.Join(p, "; "))
	}
	return b.String()
}
