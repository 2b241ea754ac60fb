//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/pow"
)

// The shop page's proof of work in a real browser: a buyer of a sale with
// proof_of_work claims and joins its waitlist as on any sale, the page
// solving the challenges in its workers.
func TestShopper_ProofOfWorkInBrowser(t *testing.T) {
	s := startSystem(t, systemOptions{})
	shop := pages(t, s) // the page's requests checked against the contract
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Guarded sale", "price_cents": 990, "currency": "usd", "stock": 1, "payment_timeout_seconds": 600,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
		"proof_of_work": map[string]any{"difficulty": 20000},
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	sale := r.json(t)["id"].(string)
	plain := s.createSale(1, 10*time.Minute)

	r = s.mustDo("POST", "/api/v1/sales/"+sale+"/claims", s.token("script", false), nil)
	require.Equal(t, http.StatusForbidden, r.status, "a claim without a proof: %s", r.body)

	ctx := browser(t)
	do(t, ctx, "open the sale and sign in",
		chromedp.Navigate(shop+"/sales/"+sale),
		chromedp.WaitVisible("#signin-button"),
		chromedp.SetValue("#signin-name", "pow-shopper"),
		chromedp.Click("#signin-button"),
		chromedp.WaitVisible("#who-user"),
	)
	do(t, ctx, "claim: the page solves the challenge and sends it",
		chromedp.WaitEnabled("#claim"),
		chromedp.Click("#claim"),
		chromedp.WaitVisible(`#order-status[data-status="AWAITING_PAYMENT"]`),
	)
	screenshot(t, ctx, "shopper-pow-claimed.png")

	// Another buyer meets it sold out and joins the waitlist, with a
	// proof of their own.
	do(t, ctx, "sign in as another buyer",
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
		chromedp.Navigate(shop+"/sales/"+sale),
		chromedp.WaitVisible("#signin-button"),
		chromedp.SetValue("#signin-name", "pow-waiter"),
		chromedp.Click("#signin-button"),
		chromedp.WaitVisible("#who-user"),
	)
	do(t, ctx, "join the waitlist", chromedp.WaitVisible("#join"), chromedp.Click("#join"), chromedp.WaitVisible("#leave"))
	require.Contains(t, text(t, ctx, "#wait-status"), "You are next in line.")

	// What the lead's lobby button reuses: a header value per call, null
	// for a sale that needs none.
	type proofs struct {
		Plain any    `json:"plain"`
		Proof string `json:"proof"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[proofs](
		`(async () => ({plain: await seckillProof(`+strconv.Quote(plain)+`), proof: await seckillProof(`+strconv.Quote(sale)+`)}))()`,
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Nil(t, got.Plain)
	require.NotEmpty(t, got.Proof)
	r, err = s.do("POST", "/api/v1/sales/"+sale+"/claims", s.token("pow-waiter", false), nil, map[string]string{"X-Seckill-Proof": got.Proof})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, r.status, "the browser's proof is accepted; the sale is sold out: %s", r.body)
}

// SECKILL_POW_KEY, when set, is the proof-of-work key, and a short one is
// refused at start; unset, the API derives one from the webhook secret.
func TestConfig_ProofOfWorkKey(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	_, err := app.FromEnv(env(map[string]string{"SECKILL_POW_KEY": "short"}))
	require.ErrorContains(t, err, "SECKILL_POW_KEY must be at least 32 characters")
	key := strings.Repeat("p", 32)
	cfg, err := app.FromEnv(env(map[string]string{"SECKILL_POW_KEY": key}))
	require.NoError(t, err)
	require.Equal(t, []byte(key), cfg.ProofKey)
	cfg, err = app.FromEnv(env(nil))
	require.NoError(t, err)
	require.Empty(t, cfg.ProofKey)
}

// benchPage runs the shop's own solver (api/web/pow.js and its worker) on
// the challenges it is given.
const benchPage = `<!doctype html><meta charset="utf-8"><title>pow bench</title>
<script src="/assets/pow.js"></script>
<script>
async function runBench(challenges, opts) {
  const out = [];
  for (const c of challenges) {
    const s = await seckillProof.solve(c, opts || {});
    out.push({number: s.number, took: s.took, header: seckillProof.header(c, s)});
  }
  return {workers: (opts && opts.workers) || Math.max(1, Math.min(navigator.hardwareConcurrency || 1, 4)), results: out};
}
</script>`

type benchRun struct {
	Workers int `json:"workers"`
	Results []struct {
		Number int64  `json:"number"`
		Took   int64  `json:"took"`
		Header string `json:"header"`
	} `json:"results"`
}

// TestProofOfWork_SolveTimeInChromium measures how long headless Chromium
// takes to solve challenges with the shop's worker script, and checks
// every solution with pow.Verify. By default two small difficulties (a
// few seconds); SECKILL_POW_BENCH=1 measures 10,000 to 10,000,000 (a few
// minutes; SECKILL_POW_BENCH=10000,100000 names the difficulties) and
// writes test-artifacts/pow-solve.txt (docs/FAIR-START.md "Proof of work").
func TestProofOfWork_SolveTimeInChromium(t *testing.T) {
	type level struct {
		difficulty int64
		runs       int
		engine     string // pow-worker.js's: "auto" (what the shop uses) or "subtle"
	}
	levels := []level{{1000, 3, "auto"}, {10_000, 5, "auto"}, {10_000, 3, "subtle"}}
	bench := os.Getenv("SECKILL_POW_BENCH") // "1", or the difficulties: "10000,100000"
	full := bench != ""
	switch {
	case bench == "1":
		levels = []level{{10_000, 15, "auto"}, {100_000, 15, "auto"}, {1_000_000, 15, "auto"}, {10_000_000, 9, "auto"},
			{10_000, 15, "subtle"}, {100_000, 9, "subtle"}, {1_000_000, 5, "subtle"}}
	case full:
		levels = nil
		for _, f := range strings.Split(bench, ",") {
			d, err := strconv.ParseInt(f, 10, 64)
			require.NoError(t, err, "SECKILL_POW_BENCH")
			levels = append(levels, level{d, 9, "auto"})
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/assets/", http.StripPrefix("/assets/", http.FileServer(http.Dir("../api/web"))))
	mux.HandleFunc("/bench", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(benchPage))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	// Chromium as browser() starts it, for as long as the measurement takes.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true))...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(cancelCtx)
	limit := 2 * time.Minute
	if full {
		limit = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	t.Cleanup(cancel)
	do(t, ctx, "open the bench page", chromedp.Navigate(srv.URL+"/bench"), chromedp.WaitReady("body"))
	ua, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent + " / " + navigator.hardwareConcurrency + " cores"`))
	require.NoError(t, err)

	key := pow.NewKey([]byte(strings.Repeat("b", 32)))
	var report strings.Builder
	fmt.Fprintf(&report, "Proof-of-work solve time, headless Chromium (%s), api/web/pow.js + pow-worker.js\n", ua)
	fmt.Fprintf(&report, "%12s %7s %5s %8s %10s %10s %10s %16s\n", "difficulty", "engine", "runs", "workers", "median", "p90", "max", "hashes/s/worker")
	for _, lv := range levels {
		now := time.Now()
		challenges := make([]pow.Challenge, lv.runs)
		for i := range challenges {
			c, err := key.Issue(int64(i+1), "bench", lv.difficulty, now.Add(time.Hour))
			require.NoError(t, err)
			challenges[i] = c
		}
		arg, _ := json.Marshal(challenges)
		opts := `{"engine": "` + lv.engine + `"`
		if b := os.Getenv("SECKILL_POW_BATCH"); b != "" { // the subtle engine's batch, to tune it
			opts += `, "batch": ` + b
		}
		opts += "}"
		run, err := chromedp.Run(ctx, chromedp.Evaluate[benchRun](`runBench(`+string(arg)+`, `+opts+`)`, chromedp.EvalAwaitPromise))
		require.NoError(t, err, "difficulty %d", lv.difficulty)
		require.Len(t, run.Results, lv.runs)
		took := make([]float64, 0, lv.runs)
		rates := make([]float64, 0, lv.runs)
		step := (lv.difficulty + int64(run.Workers)) / int64(run.Workers) // ceil((max+1)/workers), as pow.js splits
		for i, res := range run.Results {
			_, err := key.Verify(res.Header, int64(i+1), "bench", now)
			require.NoError(t, err, "the browser's solution %d of difficulty %d", i, lv.difficulty)
			took = append(took, float64(res.Took))
			// The worker that found it tried number-start+1 numbers.
			if res.Took > 0 {
				rates = append(rates, float64(res.Number%step+1)/(float64(res.Took)/1000))
			}
		}
		slices.Sort(took)
		slices.Sort(rates)
		line := fmt.Sprintf("%12d %7s %5d %8d %8.0fms %8.0fms %8.0fms %16.0f", lv.difficulty, lv.engine, lv.runs, run.Workers,
			quantile(took, 0.5), quantile(took, 0.9), took[len(took)-1], quantile(rates, 0.5))
		t.Log(line)
		report.WriteString(line + "\n")
	}
	if full {
		p := artifact(t, "pow-solve.txt")
		require.NoError(t, os.WriteFile(p, []byte(report.String()), 0o644))
		t.Logf("report: %s\n%s", p, report.String())
	}
}

// quantile is the q-quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
