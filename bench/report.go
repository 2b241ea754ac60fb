package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/audit"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/store"
)

// Report is what a run measured. Latencies are milliseconds.
type Report struct {
	Config   map[string]any `json:"config"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	SaleIDs  []int64        `json:"sale_ids"`
	Claims   Claims         `json:"claims"`
	Payable  Payable        `json:"payable"`
	Sagas    Sagas          `json:"sagas"`
	Settle   Settle         `json:"settle"`
	// Waitlist is set when buyers joined the waitlist (--waitlist).
	Waitlist  *Waitlist          `json:"waitlist,omitempty"`
	UnitsSold int64              `json:"units_sold"`
	Processes map[string]*Memory `json:"processes"`
	// MemorySeries is every process's RSS every few seconds from the start
	// of the burst.
	MemorySeries []MemorySample `json:"memory_series"`
	Anchors      Anchors        `json:"anchors"`
	// BodyRatio compares claims with and without a body (--body-rounds).
	BodyRatio *BodyRatio `json:"body_ratio,omitempty"`
	// EntryRatio compares lobby entries with claims (--entry-rounds).
	EntryRatio *EntryRatio `json:"entry_ratio,omitempty"`
	// YardstickRatio compares the API's claims with the yardstick's
	// (--yardstick-rounds).
	YardstickRatio *YardstickRatio    `json:"yardstick_ratio,omitempty"`
	Ratios         map[string]float64 `json:"ratios"`
	Audits         []*audit.Report    `json:"audits"`

	mu sync.Mutex // MemorySeries and Processes while sampling
}

// Claims sums up the burst.
type Claims struct {
	Sent        int                  `json:"sent"`
	WallSeconds float64              `json:"wall_seconds"`
	PerSecond   float64              `json:"per_second"` // answers / wall time
	HTTPStatus  map[string]int       `json:"http_status"`
	ByOutcome   map[string]Latencies `json:"by_outcome"`
	All         Latencies            `json:"all"`
}

// Latencies are the figures of one class of answers.
type Latencies struct {
	Count     int64   `json:"count"`
	PerSecond float64 `json:"per_second"` // over the span they were sent in
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	P999      float64 `json:"p999_ms"`
	Max       float64 `json:"max_ms"`
}

// Payable: winners who pay at once, from their 202.
type Payable struct {
	// Accepted: from the 202 to the payment webhook's 200.
	Accepted Latencies `json:"accepted"`
	// WhileQueued: payments accepted before the saga had written the order.
	WhileQueued int `json:"while_queued"`
}

// Sagas: admission to AWAITING_PAYMENT, from the database's own times.
type Sagas struct {
	Orders         int       `json:"orders"`
	SoldOutAtDB    int       `json:"closed_sold_out"`
	PerSecond      float64   `json:"per_second"`
	SpanSeconds    float64   `json:"span_seconds"`
	ToAwaitPayment Latencies `json:"admitted_to_awaiting_payment"`
	// TimedOut: orders closed PAYMENT_TIMEOUT; SettlePerSecond: those
	// over the span from the first admission to the last close less the
	// payment timeout and the saga's grace (workflows.DeliveryGrace):
	// what anchor (c) is measured against.
	TimedOut        int     `json:"timed_out"`
	SettlePerSecond float64 `json:"settle_per_second"`
}

// Settle: what became of the won orders.
type Settle struct {
	Paid                     int     `json:"paid"`
	Failed                   int     `json:"failed"`
	Abandoned                int     `json:"abandoned"`
	AfterBurstSeconds        float64 `json:"after_burst_seconds"`
	AfterLastDeadlineSeconds float64 `json:"after_last_deadline_seconds"`
}

// Memory of one process, bytes: before the burst, one minute into it (once
// warm), at the end of the run, and the peak.
type Memory struct {
	StartRSS  int64 `json:"start_rss"`
	MinuteRSS int64 `json:"rss_after_1min,omitempty"`
	EndRSS    int64 `json:"end_rss"`
	PeakRSS   int64 `json:"peak_rss"`
}

// MemorySample is the RSS of every process, Seconds after the burst began.
type MemorySample struct {
	Seconds float64          `json:"seconds"`
	RSS     map[string]int64 `json:"rss"`
}

// sampleSeries appends a MemorySample every interval until ctx is done,
// and records each process's RSS one minute in.
func (r *Report) sampleSeries(ctx context.Context, pids map[string]int, interval time.Duration) {
	start := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			sample := MemorySample{Seconds: now.Sub(start).Seconds(), RSS: map[string]int64{}}
			for name, m := range memoryOf(pids) {
				sample.RSS[name] = m[0]
			}
			r.mu.Lock()
			r.MemorySeries = append(r.MemorySeries, sample)
			if sample.Seconds >= 60 && sample.Seconds < 60+interval.Seconds() {
				for name, rss := range sample.RSS {
					if p := r.Processes[name]; p != nil {
						p.MinuteRSS = rss
					}
				}
			}
			r.mu.Unlock()
		}
	}
}

// Anchors are the raw ceilings measured in the same run.
type Anchors struct {
	Script   *ScriptAnchor   `json:"script,omitempty"`
	Workflow *WorkflowAnchor `json:"workflow,omitempty"`
	Saga     *SagaAnchor     `json:"saga,omitempty"`
}

func reportConfig(o Options) map[string]any {
	return map[string]any{
		"units": o.Units, "sales": o.Sales, "buyers": o.Buyers, "requests": o.Requests,
		"rate": o.Rate, "conns": o.Conns, "payment_timeout_seconds": o.PaymentTimeout.Seconds(),
		"pay_share": o.PayShare, "fail_share": o.FailShare, "segments": o.Segments,
		"waitlist_share": o.WaitlistShare, "waitlist_pay_share": o.WaitlistPayShare,
		"anchor_script_calls": o.AnchorScriptCalls, "anchor_workflows": o.AnchorWorkflows,
	}
}

// newHist records microseconds from 1 µs to 1 h: a saga on an overloaded
// server can take minutes, and a value out of range would be lost.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 3_600_000_000, 3) }

func latencies(h *hdrhistogram.Histogram, span time.Duration) Latencies {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	l := Latencies{Count: h.TotalCount(), P50: ms(h.ValueAtQuantile(50)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
	if span > 0 {
		l.PerSecond = float64(l.Count) / span.Seconds()
	}
	return l
}

func (r *Report) addClaims(lr *loadResult) {
	var hs [numOutcomes]*hdrhistogram.Histogram
	var first, last [numOutcomes]uint32
	all := newHist()
	for i := range hs {
		hs[i] = newHist()
		first[i] = ^uint32(0)
	}
	for _, s := range lr.samples {
		_ = hs[s.outcome].RecordValue(int64(max(s.latencyUs, 1)))
		_ = all.RecordValue(int64(max(s.latencyUs, 1)))
		first[s.outcome] = min(first[s.outcome], s.intendedMs)
		last[s.outcome] = max(last[s.outcome], s.intendedMs)
	}
	r.Claims = Claims{Sent: len(lr.samples), WallSeconds: lr.wall.Seconds(), HTTPStatus: map[string]int{},
		ByOutcome: map[string]Latencies{}, All: latencies(all, lr.wall)}
	if lr.wall > 0 {
		r.Claims.PerSecond = float64(len(lr.samples)) / lr.wall.Seconds()
	}
	for code, n := range lr.statuses {
		r.Claims.HTTPStatus[fmt.Sprint(code)] = n
	}
	for o := Outcome(0); o < numOutcomes; o++ {
		if hs[o].TotalCount() == 0 {
			continue
		}
		// The rate of one kind of answer is over the span its requests
		// were due in (at least 1 ms), not the whole burst.
		span := time.Duration(last[o]-first[o]+1) * time.Millisecond
		r.Claims.ByOutcome[o.String()] = latencies(hs[o], span)
	}
}

func (r *Report) addSagas(ctx context.Context, st *store.Store, sales []int64) error {
	rows, err := st.OrderTimelines(ctx, sales)
	if err != nil {
		return err
	}
	h := newHist()
	var firstAdmit, lastLock time.Time
	locked := 0
	for _, row := range rows {
		if row.AwaitingAt == nil {
			if row.CloseReason == seckill.CloseSoldOut {
				r.Sagas.SoldOutAtDB++
			}
			continue
		}
		admittedAt, lockedAt := idgen.Time(row.ID), *row.AwaitingAt
		_ = h.RecordValue(max(lockedAt.Sub(admittedAt).Microseconds(), 1))
		locked++
		if firstAdmit.IsZero() || admittedAt.Before(firstAdmit) {
			firstAdmit = admittedAt
		}
		if lockedAt.After(lastLock) {
			lastLock = lockedAt
		}
	}
	r.Sagas.Orders = len(rows)
	span := lastLock.Sub(firstAdmit)
	r.Sagas.ToAwaitPayment = latencies(h, 0)
	if span > 0 {
		r.Sagas.SpanSeconds = span.Seconds()
		r.Sagas.PerSecond = float64(locked) / span.Seconds()
	}
	return nil
}

// addSettleRate counts the orders closed PAYMENT_TIMEOUT once every order
// settled, and their rate: over the span from the first admission to the
// last such close, less wait (the payment timeout and the saga's grace).
func (r *Report) addSettleRate(ctx context.Context, st *store.Store, sales []int64, wait time.Duration) error {
	rows, err := st.OrderTimelines(ctx, sales)
	if err != nil {
		return err
	}
	var firstAdmit, lastTimeout time.Time
	r.Sagas.TimedOut = 0
	for _, row := range rows {
		if admittedAt := idgen.Time(row.ID); firstAdmit.IsZero() || admittedAt.Before(firstAdmit) {
			firstAdmit = admittedAt
		}
		if row.CloseReason == seckill.ClosePaymentTimeout && row.ClosedAt != nil {
			r.Sagas.TimedOut++
			if row.ClosedAt.After(lastTimeout) {
				lastTimeout = *row.ClosedAt
			}
		}
	}
	if settle := lastTimeout.Sub(firstAdmit) - wait; r.Sagas.TimedOut > 0 && settle > 0 {
		r.Sagas.SettlePerSecond = float64(r.Sagas.TimedOut) / settle.Seconds()
	}
	return nil
}

func (r *Report) sampleMemory(pids map[string]int, end bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, m := range memoryOf(pids) {
		p := r.Processes[name]
		if p == nil {
			p = &Memory{}
			r.Processes[name] = p
		}
		if end {
			p.EndRSS = m[0]
		} else {
			p.StartRSS = m[0]
		}
		p.PeakRSS = max(p.PeakRSS, m[1])
	}
}

// roundSales are the claim sales the comparison rounds created beside the
// burst's: the body rounds' and the entry rounds' sold-out sales (one unit,
// won and paid) and the yardstick rounds' API sales. The entry rounds'
// lobby stays open past the run, its draw never due: not audited.
func (r *Report) roundSales() []int64 {
	var out []int64
	if r.BodyRatio != nil {
		out = append(out, r.BodyRatio.SaleID)
	}
	if r.EntryRatio != nil {
		out = append(out, r.EntryRatio.SoldOutSaleID)
	}
	if r.YardstickRatio != nil {
		out = append(out, r.YardstickRatio.APISales...)
	}
	return out
}

func (r *Report) ratios() {
	r.Ratios = map[string]float64{}
	if a := r.Anchors.Script; a != nil && a.PerSecond > 0 {
		r.Ratios["claims_vs_script"] = r.Claims.PerSecond / a.PerSecond
	}
	if a := r.Anchors.Workflow; a != nil && a.PerSecond > 0 {
		r.Ratios["sagas_vs_workflow"] = r.Sagas.PerSecond / a.PerSecond
	}
	if a := r.Anchors.Saga; a != nil {
		if a.FirstStepPerSecond > 0 {
			r.Ratios["sagas_vs_saga_anchor_first_step"] = r.Sagas.PerSecond / a.FirstStepPerSecond
		}
		if a.SettlePerSecond > 0 && r.Sagas.SettlePerSecond > 0 {
			r.Ratios["sagas_vs_saga_anchor_settle"] = r.Sagas.SettlePerSecond / a.SettlePerSecond
		}
	}
	if br := r.BodyRatio; br != nil {
		for _, p := range br.Paths {
			r.Ratios["claims_with_body_vs_without_"+p.Path] = p.Ratio
		}
	}
	if er := r.EntryRatio; er != nil {
		for _, arm := range []string{armFlag, armScript} {
			if er.Median[arm] > 0 {
				r.Ratios["entries_vs_claims_"+arm] = er.Median[armEntries] / er.Median[arm]
			}
		}
		if r.Claims.PerSecond > 0 {
			r.Ratios["entries_vs_claims_burst"] = er.Median[armEntries] / r.Claims.PerSecond
		}
	}
	// A comparison in which either side answered something else than a
	// claim's 202 or 409 compares nothing: no ratio (OK fails the run).
	if yr := r.YardstickRatio; yr != nil && yr.Unexpected[armAPI]+yr.Unexpected[armYardstick] == 0 {
		if y := yr.Median[armYardstick+" p99"]; y > 0 {
			r.Ratios["claims_p99_vs_yardstick"] = yr.Median[armAPI+" p99"] / y
		}
		if y := yr.Median[armYardstick+" p50"]; y > 0 {
			r.Ratios["claims_p50_vs_yardstick"] = yr.Median[armAPI+" p50"] / y
		}
		if y := yr.Median[armYardstick+" per_second"]; y > 0 {
			r.Ratios["claims_throughput_vs_yardstick"] = yr.Median[armAPI+" per_second"] / y
		}
		if y := yr.Median[armYardstick+" script"]; y > 0 {
			r.Ratios["claims_throughput_vs_yardstick_script"] = yr.Median[armAPI+" script"] / y
		}
	}
}

// OK reports whether every audit passed, every claim was answered
// without a server error, and the yardstick rounds (if run) got only the
// answers a claim gets.
func (r *Report) OK() bool {
	for _, a := range r.Audits {
		if !a.OK() {
			return false
		}
	}
	if yr := r.YardstickRatio; yr != nil && yr.Unexpected[armAPI]+yr.Unexpected[armYardstick] > 0 {
		return false
	}
	return r.ServerErrors() == 0
}

// ServerErrors counts 5xx answers and claims that got no answer.
func (r *Report) ServerErrors() int {
	n := 0
	for code, c := range r.Claims.HTTPStatus {
		if code == "0" || strings.HasPrefix(code, "5") {
			n += c
		}
	}
	return n
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// String renders the report as tables.
func (r *Report) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(&b, "claims: %d sent in %.1fs = %.0f/s answered; HTTP %v\n", r.Claims.Sent, r.Claims.WallSeconds, r.Claims.PerSecond, r.Claims.HTTPStatus)
	fmt.Fprintln(w, "answer\tcount\tper s\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\t")
	row := func(name string, l Latencies) {
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t\n", name, l.Count, l.PerSecond, l.P50, l.P99, l.P999, l.Max)
	}
	for _, k := range sortedKeys(r.Claims.ByOutcome) {
		row(k, r.Claims.ByOutcome[k])
	}
	row("all", r.Claims.All)
	row("payment: 202->webhook 200", r.Payable.Accepted)
	row("saga: admitted->AWAITING_PAYMENT", r.Sagas.ToAwaitPayment)
	_ = w.Flush()
	fmt.Fprintf(&b, "payable at admission: %d of %d payments sent from the 202 were accepted while the order was still QUEUED\n",
		r.Payable.WhileQueued, r.Payable.Accepted.Count)
	fmt.Fprintf(&b, "sagas: %d orders (%d closed SOLD_OUT at the DB), %.0f/s over %.1fs; %d timed out, settled at %.0f/s\n",
		r.Sagas.Orders, r.Sagas.SoldOutAtDB, r.Sagas.PerSecond, r.Sagas.SpanSeconds, r.Sagas.TimedOut, r.Sagas.SettlePerSecond)
	fmt.Fprintf(&b, "settle: %d paid, %d failed, %d abandoned; all settled %.1fs after the burst, %.1fs after the last deadline\n",
		r.Settle.Paid, r.Settle.Failed, r.Settle.Abandoned, r.Settle.AfterBurstSeconds, r.Settle.AfterLastDeadlineSeconds)
	if wl := r.Waitlist; wl != nil {
		fmt.Fprintf(&b, "waitlist: %d joins at once after SOLD_OUT %v (p50 %.2f ms, p99 %.2f ms); %d orders from the waitlist\n",
			wl.Joined.Count, wl.Answers, wl.Joined.P50, wl.Joined.P99, wl.Admitted)
		fmt.Fprintf(&b, "waitlist: deadline -> CLOSED (unit released) p50 %.1f ms, p99 %.1f ms; released unit -> next buyer's AWAITING_PAYMENT p50 %.1f ms, p99 %.1f ms\n",
			wl.DeadlineToClose.P50, wl.DeadlineToClose.P99, wl.HandOverToAwaitPayment.P50, wl.HandOverToAwaitPayment.P99)
	}
	fmt.Fprintf(&b, "units sold: %d\n", r.UnitsSold)
	if a := r.Anchors.Script; a != nil {
		fmt.Fprintf(&b, "anchor (a) admission script in redis-benchmark: %.0f calls/s (p50 %.2f ms, p99 %.2f ms)\n", a.PerSecond, a.P50, a.P99)
	}
	if a := r.Anchors.Workflow; a != nil {
		fmt.Fprintf(&b, "anchor (b) trivial workflow start+complete: %.0f/s (%d in %.1fs)\n", a.PerSecond, a.Workflows, a.Seconds)
	}
	if a := r.Anchors.Saga; a != nil {
		fmt.Fprintf(&b, "anchor (c) local activity, %.0fs timer, local activity: first step %.0f/s, settled %.0f/s (%d in %.1fs)\n",
			a.TimerSeconds, a.FirstStepPerSecond, a.SettlePerSecond, a.Workflows, a.Seconds)
	}
	if br := r.BodyRatio; br != nil {
		for _, p := range br.Paths {
			fmt.Fprintf(&b, "claims with a {sku, quantity} body vs none, %s path: median %.0f/s vs %.0f/s over %d rounds of %.0fs each way (%d unexpected answers)\n",
				p.Path, p.MedianWith, p.MedianNone, br.Rounds, br.RoundSeconds, p.Unexpected)
		}
	}
	if er := r.EntryRatio; er != nil {
		fmt.Fprintf(&b, "lobby entries (201) vs claims (409 SOLD_OUT) by the flag, by the script: median %.0f/s vs %.0f/s, %.0f/s over %d rounds of %.1fs each (unexpected answers %v)\n",
			er.Median[armEntries], er.Median[armFlag], er.Median[armScript], er.Rounds, er.RoundSeconds, er.Unexpected)
	}
	if yr := r.YardstickRatio; yr != nil {
		for _, arm := range []string{armAPI, armYardstick} {
			fmt.Fprintf(&b, "claims, %-9s at %d/s on %d units: median p50 %.2f ms, p99 %.2f ms; closed loop %.0f answers/s, each by the script %.0f/s; over %d rounds of %.0fs each way (%d admitted, %d unexpected answers)\n",
				arm, yr.Rate, yr.Units, yr.Median[arm+" p50"], yr.Median[arm+" p99"], yr.Median[arm+" per_second"], yr.Median[arm+" script"],
				yr.Rounds, yr.RoundSeconds, yr.Admitted[arm], yr.Unexpected[arm])
		}
	}
	for _, k := range sortedKeys(r.Ratios) {
		fmt.Fprintf(&b, "ratio %s: %.2f\n", k, r.Ratios[k])
	}
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	for _, k := range sortedKeys(r.Processes) {
		m := r.Processes[k]
		after := "-"
		if m.MinuteRSS > 0 {
			after = fmt.Sprintf("%.0f MB", mb(m.MinuteRSS))
		}
		fmt.Fprintf(&b, "memory %-8s RSS start %.0f MB, 1 min into the burst %s, end %.0f MB, peak %.0f MB\n",
			k, mb(m.StartRSS), after, mb(m.EndRSS), mb(m.PeakRSS))
	}
	for _, a := range r.Audits {
		verdict := "PASSED"
		if !a.OK() {
			verdict = "FAILED"
		}
		fmt.Fprintf(&b, "audit of sale %d: %s\n", a.SaleID, verdict)
	}
	return b.String()
}
