// Package bench is `seckill bench`: a flash-sale load generator that runs a
// burst of claims at a fixed arrival rate against a running seckill, pays,
// fails or abandons the orders it won through signed webhooks, waits for
// every order to settle, audits the sale, and measures two anchors in the
// same run: the admission script alone in Redis (redis-benchmark) and a
// trivial Temporal workflow on the same server.
//
// Launch starts a system of child processes for it (so each one's memory
// can be read); Run also works against any running system.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/audit"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/proc"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/workflows"
)

// Options describe one benchmark run.
type Options struct {
	// APIURL is the seckill API under test, e.g. http://127.0.0.1:8080.
	APIURL string
	// Config reaches the same Redis, PostgreSQL and Temporal as the API,
	// with its secrets (the bench signs tokens and webhooks).
	Config app.Config
	// Processes whose memory is reported, by name (e.g. "api": pid).
	Processes map[string]int

	Units          int           // units per sale [10000]
	Sales          int           // sales, claims spread evenly [1]
	Buyers         int           // distinct buyers [1000000]
	Requests       int           // claims sent; 0: Rate*Duration, or Buyers
	Rate           int           // claims per second offered [30000]
	Duration       time.Duration // with Requests 0: send for this long
	Conns          int           // connections [256]
	PaymentTimeout time.Duration // the sales' pay-by window [30s]
	PayShare       float64       // share of won orders paid [0]
	FailShare      float64       // share of won orders whose payment fails [0]
	SettleWithin   time.Duration // bound on waiting for orders to settle [10m]
	Segments       int           // parts of each sale's Redis stock (stock_segments) [1]
	// WaitlistShare of the buyers answered SOLD_OUT join the waitlist at
	// once [0]; WaitlistPayShare of the orders the waitlist gives them are
	// paid, the rest abandoned [0; `seckill bench` defaults to 1].
	WaitlistShare    float64
	WaitlistPayShare float64

	// Anchors: AnchorScriptCalls > 0 runs redis-benchmark on the admission
	// script; AnchorWorkflows > 0 starts and completes that many trivial
	// workflows.
	AnchorScriptCalls int
	AnchorWorkflows   int
	// AnchorSagas > 0 runs anchor (c), SagaAnchor, with that many
	// workflows (< 0: Units x Sales, as many as the sagas).
	AnchorSagas int
	// BodyRounds > 0 compares claims with and without a body naming the
	// variant and the quantity (BodyRatio), in that many rounds of
	// BodyRoundTime [2s] each way, on each path.
	BodyRounds    int
	BodyRoundTime time.Duration
	// EntryRounds > 0 compares lobby entries with claims (EntryRatio), in
	// that many rounds of EntryRoundTime [2s] each way.
	EntryRounds    int
	EntryRoundTime time.Duration

	// OutDir receives bench.json and bench.png ("" : neither).
	OutDir string
	// YardstickRounds compare the API's claims with the yardstick's
	// (YardstickRatio), each round YardstickRoundTime each way: an open
	// loop at YardstickRate on a sale of YardstickUnits, then a closed
	// loop. YardstickBinary runs `seckill yardstick` (default: this
	// executable); YardstickLog receives its output.
	YardstickRounds    int
	YardstickRoundTime time.Duration
	YardstickRate      int
	YardstickUnits     int
	YardstickBinary    string
	YardstickLog       io.Writer
	// Progress receives a line a second while the burst runs (nil: none).
	Progress io.Writer
}

func (o *Options) defaults() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Units, 10000)
	def(&o.Sales, 1)
	def(&o.Buyers, 1000000)
	def(&o.Rate, 30000)
	def(&o.Conns, 256)
	def(&o.Segments, 1)
	if o.PaymentTimeout == 0 {
		o.PaymentTimeout = 30 * time.Second
	}
	if o.BodyRoundTime == 0 {
		o.BodyRoundTime = 2 * time.Second
	}
	if o.AnchorSagas < 0 {
		o.AnchorSagas = o.Units * o.Sales
	}
	if o.EntryRoundTime == 0 {
		o.EntryRoundTime = 2 * time.Second
	}
	if o.YardstickRoundTime == 0 {
		o.YardstickRoundTime = 2 * time.Second
	}
	def(&o.YardstickRate, 10000)
	def(&o.YardstickUnits, 1)
	if o.YardstickBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.YardstickBinary = exe
	}
	if o.SettleWithin == 0 {
		o.SettleWithin = 10 * time.Minute
	}
	if o.Requests == 0 {
		o.Requests = o.Buyers
		if o.Duration > 0 {
			o.Requests = int(float64(o.Rate) * o.Duration.Seconds())
		}
	}
	switch {
	case o.APIURL == "":
		return errors.New("bench: the API's URL is required")
	case o.Units < 1 || o.Units > 10000000:
		return fmt.Errorf("bench: units must be 1..10000000, got %d", o.Units)
	case o.Sales < 1 || o.Sales > 1000:
		return fmt.Errorf("bench: sales must be 1..1000, got %d", o.Sales)
	case o.Buyers < 1 || o.Buyers > 20000000:
		return fmt.Errorf("bench: buyers must be 1..20000000, got %d", o.Buyers)
	case o.Requests < 1 || o.Rate < 1 || o.Conns < 1 || o.Conns > 10000:
		return fmt.Errorf("bench: requests, rate and conns (1..10000) must be positive")
	case o.PayShare < 0 || o.FailShare < 0 || o.PayShare+o.FailShare > 1:
		return fmt.Errorf("bench: pay and fail shares must be >= 0 and add up to at most 1")
	case o.BodyRounds < 0 || o.BodyRounds > 0 && (o.Buyers < 2 || o.BodyRoundTime < 100*time.Millisecond):
		return fmt.Errorf("bench: body rounds need at least 2 buyers and rounds of at least 100ms")
	case o.EntryRounds < 0 || o.EntryRounds > 0 && (o.Buyers < 2 || o.EntryRoundTime < 100*time.Millisecond):
		return fmt.Errorf("bench: entry rounds need at least 2 buyers and rounds of at least 100ms")
	case o.YardstickRounds < 0 || o.YardstickRounds > 0 && (o.YardstickRoundTime < 100*time.Millisecond || o.YardstickRate < 1 || o.YardstickUnits < 1):
		return fmt.Errorf("bench: yardstick rounds need rounds of at least 100ms, a positive rate and units")
	case o.Segments < 1 || o.Segments > seckill.MaxStockSegments:
		return fmt.Errorf("bench: segments must be 1..%d, got %d", seckill.MaxStockSegments, o.Segments)
	case o.WaitlistShare < 0 || o.WaitlistShare > 1 || o.WaitlistPayShare < 0 || o.WaitlistPayShare > 1:
		return fmt.Errorf("bench: the waitlist shares must be 0..1")
	case o.PaymentTimeout < 5*time.Second || o.PaymentTimeout > 24*time.Hour:
		return fmt.Errorf("bench: the payment timeout must be 5s..24h, got %s", o.PaymentTimeout)
	case len(o.Config.JWTSecret) == 0 || len(o.Config.WebhookSecret) == 0:
		return errors.New("bench: the JWT and webhook secrets of the system under test are required")
	}
	return nil
}

// begin is how every benchmark run begins: the API's URL checked, a say
// that prints a progress line to progress (nil: none), and a connection to
// the stores and the Temporal of the system under test.
func begin(ctx context.Context, apiURL string, progress io.Writer, cfg app.Config) (host string, say func(format string, args ...any), deps *app.Deps, err error) {
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return "", nil, nil, fmt.Errorf("bench: bad API URL %q", apiURL)
	}
	say = func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format+"\n", args...)
		}
	}
	if deps, err = app.Connect(ctx, cfg); err != nil {
		return "", nil, nil, err
	}
	return u.Host, say, deps, nil
}

// Run runs the benchmark and returns its report. An error means the run
// could not be carried out; a failed audit is in the report (Report.OK).
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	host, say, deps, err := begin(ctx, o.APIURL, o.Progress, o.Config)
	if err != nil {
		return nil, err
	}
	defer deps.Close()
	rep := &Report{Config: reportConfig(o), Started: time.Now().UTC(), Processes: map[string]*Memory{}}
	rep.sampleMemory(o.Processes, false)

	runID := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	sales := make([]int64, o.Sales)
	for i := range sales {
		if sales[i], err = createSale(ctx, o, fmt.Sprintf("bench %s #%d", runID, i+1)); err != nil {
			return nil, err
		}
	}
	rep.SaleIDs = sales
	say("sales %v: %d units each, pay within %s", sales, o.Units, o.PaymentTimeout)

	say("minting %d buyer tokens ...", o.Buyers)
	tokens, err := mintTokens(o.Config.JWTSecret, o.Buyers, runID)
	if err != nil {
		return nil, err
	}

	if o.AnchorScriptCalls > 0 {
		say("anchor (a): the admission script in redis-benchmark, %d calls at %d connections ...", o.AnchorScriptCalls, o.Conns)
		a, err := scriptAnchor(ctx, o, runID)
		if err != nil {
			return nil, fmt.Errorf("anchor (a): %w", err)
		}
		rep.Anchors.Script = a
	}

	say("burst: %d claims at %d/s over %d connections ...", o.Requests, o.Rate, o.Conns)
	// Memory every 5 s from the burst to the end of the run, to tell
	// warm-up from growth.
	sampling, stopSampling := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		rep.sampleSeries(sampling, o.Processes, 5*time.Second)
	}()
	stopSampler := func() { stopSampling(); <-samplerDone }
	defer stopSampler()
	// Winners are payable from their 202: the payers pay (or fail) their
	// share of them as the 202s arrive, while the sagas are still starting.
	won := make(chan admission, o.Units*o.Sales+1024)
	payments := make(chan payResult, 1)
	go func() { payments <- pay(ctx, o, won) }()
	lr, err := burst(loadPlan{host: host, sales: sales, tokens: tokens, requests: o.Requests,
		rate: o.Rate, conns: o.Conns, progress: o.Progress, won: won, waitShare: o.WaitlistShare})
	close(won)
	if err != nil {
		<-payments
		return nil, err
	}
	rep.addClaims(lr)
	burstEnd := time.Now()
	say("burst done: %d claims in %.1fs, %d admitted; paying %.0f%%, failing %.0f%% of them from their 202, abandoning the rest",
		len(lr.samples), lr.wall.Seconds(), len(lr.admissions), o.PayShare*100, o.FailShare*100)
	pr := <-payments
	if pr.err != nil {
		return nil, pr.err
	}
	rep.Settle.Paid, rep.Settle.Failed, rep.Settle.Abandoned = pr.paid, pr.failed, len(lr.admissions)-pr.paid-pr.failed
	rep.Payable = Payable{Accepted: latencies(pr.accepted, 0), WhileQueued: pr.whileQueued}

	// The waitlist's orders (released units, and joins that found one in
	// stock) are paid (their share) as they appear.
	st := deps.Store
	var waitlisted func() (int, payResult)
	if o.WaitlistShare > 0 {
		rep.Waitlist = &Waitlist{Joined: latencies(lr.joinsHist, 0), Answers: lr.joins}
		waitlisted = followAndPay(ctx, o, deps.Redis, sales)
	}

	// Sagas: every won order reaches AWAITING_PAYMENT (or CLOSED).
	if err := waitOrders(ctx, o, st, sales, len(lr.admissions), leftQueued, say, "sagas"); err != nil {
		return nil, err
	}
	if err := rep.addSagas(ctx, st, sales); err != nil {
		return nil, err
	}

	if err := waitOrders(ctx, o, st, sales, len(lr.admissions), seckill.OrderStatus.Terminal, say, "settled"); err != nil {
		return nil, err
	}
	if waitlisted != nil {
		// Every unit released has gone to a waiting buyer or back to the
		// stock; their orders settle in turn.
		if err := waitQuiet(ctx, o, st, deps.Redis, sales, say); err != nil {
			return nil, err
		}
		found, wp := waitlisted()
		if wp.err != nil {
			return nil, wp.err
		}
		say("waitlist: %d orders, %d paid", found, wp.paid)
		if err := rep.addWaitlist(ctx, st, sales, lr.admissions); err != nil {
			return nil, err
		}
	}
	settled := time.Now()
	rep.Settle.AfterBurstSeconds = settled.Sub(burstEnd).Seconds()
	if err := rep.addSettleRate(ctx, st, sales, o.PaymentTimeout+workflows.DeliveryGrace); err != nil {
		return nil, err
	}
	// No order timed out when everyone paid: no deadline was missed then.
	lastPayBy, err := st.LastMissedPayBy(ctx, sales)
	if err != nil {
		return nil, err
	}
	if !lastPayBy.IsZero() {
		rep.Settle.AfterLastDeadlineSeconds = settled.Sub(lastPayBy).Seconds()
	}
	say("every order settled %.1fs after the burst", rep.Settle.AfterBurstSeconds)
	if rep.UnitsSold, err = unitsSold(ctx, st, sales); err != nil {
		return nil, err
	}

	// The audit checks the invariants from the outside, reading Postgres
	// itself (audit.Auditor.DB), as `seckill audit` does.
	auditor := &audit.Auditor{DB: st.Gorm(), Redis: deps.Redis, Sagas: saga.New(deps.Temporal, saga.Options{})}
	for _, s := range sales {
		ar, err := auditor.Wait(ctx, s, audit.Options{Grace: time.Minute}, 2*time.Minute)
		if err != nil {
			return nil, fmt.Errorf("audit of sale %d: %w", s, err)
		}
		rep.Audits = append(rep.Audits, ar)
	}
	stopSampler()
	rep.sampleMemory(o.Processes, true)

	if o.BodyRounds > 0 {
		say("claims with and without a body: %d rounds of %s each way, on the sold-out flag's path and the script's ...", o.BodyRounds, o.BodyRoundTime)
		if rep.BodyRatio, err = bodyRatio(ctx, o, host, tokens, runID); err != nil {
			return nil, fmt.Errorf("body ratio: %w", err)
		}
	}
	if o.EntryRounds > 0 {
		say("lobby entries vs claims: %d rounds of %s each way ...", o.EntryRounds, o.EntryRoundTime)
		if rep.EntryRatio, err = entryRatio(ctx, o, host, tokens, runID); err != nil {
			return nil, fmt.Errorf("entry ratio: %w", err)
		}
	}
	if o.YardstickRounds > 0 {
		say("claims vs the yardstick (fasthttp + JWT + the admission script): %d rounds of %s each way, %d claims/s on %d units, then a closed loop ...",
			o.YardstickRounds, o.YardstickRoundTime, o.YardstickRate, o.YardstickUnits)
		if rep.YardstickRatio, err = yardstickRatio(ctx, o, host, tokens, runID); err != nil {
			return nil, fmt.Errorf("yardstick ratio: %w", err)
		}
	}
	if o.AnchorWorkflows > 0 {
		say("anchor (b): %d trivial workflows on the same server ...", o.AnchorWorkflows)
		a, err := workflowAnchor(ctx, deps.Temporal, o)
		if err != nil {
			return nil, fmt.Errorf("anchor (b): %w", err)
		}
		rep.Anchors.Workflow = a
	}
	if o.AnchorSagas > 0 {
		// The timer a timed-out saga waits: the payment timeout and the
		// grace for payments on their way.
		timer := o.PaymentTimeout + workflows.DeliveryGrace
		say("anchor (c): %d workflows of a local activity, a %s timer and a local activity ...", o.AnchorSagas, timer)
		a, err := sagaAnchor(ctx, deps.Temporal, o, o.AnchorSagas, timer)
		if err != nil {
			return nil, fmt.Errorf("anchor (c): %w", err)
		}
		rep.Anchors.Saga = a
	}
	// The rounds' claims sold units too, each starting a saga: their
	// sales are audited like the burst's, last, when their sagas have
	// had the anchors' time to settle.
	for _, s := range rep.roundSales() {
		ar, err := auditor.Wait(ctx, s, audit.Options{Grace: time.Minute}, 2*time.Minute)
		if err != nil {
			return nil, fmt.Errorf("audit of sale %d (the rounds'): %w", s, err)
		}
		rep.Audits = append(rep.Audits, ar)
	}
	rep.ratios()
	rep.Finished = time.Now().UTC()

	if o.OutDir != "" {
		if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
			return nil, err
		}
		if err := rep.writeJSON(filepath.Join(o.OutDir, "bench.json")); err != nil {
			return nil, err
		}
		if err := plotBurst(lr, filepath.Join(o.OutDir, "bench.png")); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func createSale(ctx context.Context, o Options, name string) (int64, error) {
	now := time.Now().UTC()
	return postSale(ctx, o.APIURL, o.Config.JWTSecret, map[string]any{
		"name": name, "price_cents": 990, "stock": o.Units,
		"starts_at":               now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at":                 now.Add(6 * time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(o.PaymentTimeout / time.Second),
		"stock_segments":          o.Segments,
	})
}

// postSale creates the sale spec describes (POST /api/v1/sales, as an
// admin of jwtSecret) and returns its id.
func postSale(ctx context.Context, apiURL string, jwtSecret []byte, spec map[string]any) (int64, error) {
	admin, err := auth.SignToken(jwtSecret, "bench-admin", true, time.Hour)
	if err != nil {
		return 0, err
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", apiURL+"/api/v1/sales", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("create sale: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var sale struct {
		ID string `json:"id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &sale) != nil {
		return 0, fmt.Errorf("create sale: %s %s", resp.Status, b)
	}
	return strconv.ParseInt(sale.ID, 10, 64)
}

// fate of a won order, from its id (so a rerun on the same orders agrees):
// 0 pays, 1 fails, 2 never pays.
func fate(orderID int64, payShare, failShare float64) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(strconv.FormatInt(orderID, 10)))
	x := float64(h.Sum64()%1_000_000) / 1_000_000
	switch {
	case x < payShare:
		return 0
	case x < payShare+failShare:
		return 1
	}
	return 2
}

// payResult is what the payers did.
type payResult struct {
	paid, failed int
	// accepted: from each 202 to the webhook's 200 for its payment.
	accepted *hdrhistogram.Histogram
	// whileQueued counts payments accepted before the order's saga had
	// written it (answered QUEUED): payable at admission, not at the saga.
	whileQueued int
	err         error
}

// pay sends a signed webhook for every won order that pays or fails, as
// soon as its 202 arrives, as many at a time as the burst has connections
// (so a payment waits on the shop, not on the payers), each retried until
// it answers 200 (bounded).
func pay(ctx context.Context, o Options, won <-chan admission) payResult {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Conns}}
	res := payResult{accepted: newHist()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range o.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range won {
				f := fate(a.orderID, o.PayShare, o.FailShare)
				if f == 2 {
					continue
				}
				outcome, err := sendPayment(ctx, client, o, a.orderID, f == 1)
				accepted := time.Since(a.answeredAt)
				mu.Lock()
				switch {
				case err != nil:
					if res.err == nil {
						res.err = err
					}
				case f == 0:
					res.paid++
				default:
					res.failed++
				}
				if err == nil {
					_ = res.accepted.RecordValue(max(accepted.Microseconds(), 1))
					if outcome == string(seckill.OutcomeReceived) {
						res.whileQueued++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// sendPayment sends one signed webhook and returns the outcome it answered
// (RECEIVED: recorded for a saga that has not run yet).
func sendPayment(ctx context.Context, client *http.Client, o Options, orderID int64, fail bool) (string, error) {
	typ := seckill.PaymentSucceeded
	if fail {
		typ = seckill.PaymentFailed
	}
	id := strconv.FormatInt(orderID, 10)
	body := api.EventBody(seckill.PaymentEvent{
		EventID: "evt_bench_" + id, Type: typ, PaymentIntentID: "pi_bench_" + id, AmountCents: 990, Currency: "usd",
	}, orderID, time.Now())
	var last string
	for attempt := 0; attempt < 20; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", o.APIURL+"/api/v1/payments/webhook", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", api.Sign(body, o.Config.WebhookSecret, time.Now()))
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				var answer struct {
					Outcome string `json:"outcome"`
				}
				_ = json.Unmarshal(b, &answer)
				return answer.Outcome, nil
			}
			last = resp.Status + " " + string(b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("payment webhook for order %d: %s", orderID, last)
}

// waitOrders polls until want orders of sales have a status which
// accepts.
func waitOrders(ctx context.Context, o Options, st *store.Store, sales []int64, want int, which func(seckill.OrderStatus) bool,
	say func(string, ...any), what string) error {
	deadline := time.Now().Add(o.SettleWithin)
	last := time.Now()
	for {
		n, err := countOrders(ctx, st, sales, which)
		if err != nil {
			return err
		}
		if n >= int64(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: only %d of %d orders %s within %s", n, want, what, o.SettleWithin)
		}
		if time.Since(last) >= 5*time.Second {
			say("  %s: %d/%d", what, n, want)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// countOrders counts the orders of sales whose status which accepts.
func countOrders(ctx context.Context, st *store.Store, sales []int64, which func(seckill.OrderStatus) bool) (int64, error) {
	counts, err := st.OrderCounts(ctx, sales)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, byStatus := range counts {
		for status, c := range byStatus {
			if which(status) {
				n += c
			}
		}
	}
	return n, nil
}

// leftQueued: the order's saga has written it down (AWAITING_PAYMENT, or
// CLOSED when the database had no unit), or it has gone on since.
func leftQueued(s seckill.OrderStatus) bool { return s != seckill.StatusQueued }

// unitsSold reads the units the sales sold.
func unitsSold(ctx context.Context, st *store.Store, sales []int64) (int64, error) {
	var n int64
	for _, id := range sales {
		sale, err := st.Sale(ctx, id)
		if err != nil {
			return 0, err
		}
		n += sale.Stock.Sold
	}
	return n, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// memoryOf reads the named processes' memory; the bench itself is "bench".
func memoryOf(pids map[string]int) map[string][2]int64 {
	out := map[string][2]int64{}
	all := map[string]int{"bench": os.Getpid()}
	for k, v := range pids {
		all[k] = v
	}
	for name, pid := range all {
		if rss, peak, err := proc.Memory(pid); err == nil {
			out[name] = [2]int64{rss, peak}
		}
	}
	return out
}
