package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/worker"
)

// ScriptAnchor is redis-benchmark calling the admission script itself.
type ScriptAnchor struct {
	Calls     int     `json:"calls"`
	Conns     int     `json:"conns"`
	PerSecond float64 `json:"per_second"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	Command   string  `json:"command"`
}

// WorkflowAnchor is trivial workflows started and completed on the same
// Temporal server, by a worker with seckill's worker settings, started
// with the relay's parallelism.
type WorkflowAnchor struct {
	Workflows int     `json:"workflows"`
	Parallel  int     `json:"parallel"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
}

// scriptAnchor runs the admission script in redis-benchmark at the burst's
// concurrency, on a sale of the same size warmed under a prefix of its
// own, with a random buyer per call: the claim path without HTTP, auth or
// Go. The anchor's keys are removed afterwards (rate-limit logs expire).
func scriptAnchor(ctx context.Context, o Options, runID string) (*ScriptAnchor, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark not found (Debian: apt-get install redis-tools): %w", err)
	}
	u, err := url.Parse(o.Config.RedisURL)
	if err != nil || u.Scheme != "redis" {
		return nil, fmt.Errorf("the script anchor runs redis-benchmark against one server: REDIS_URL must be redis://host:port/db, got %q", o.Config.RedisURL)
	}
	cfg := o.Config
	cfg.RedisPrefix += "-anchor-" + runID
	rs, err := app.OpenRedis(cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rs.Close() }()
	rs = rs.WithRateLimit(o.Config.ClaimRate)
	const sale = 1
	now := time.Now()
	if _, err := rs.Warm(ctx, seckill.WarmSpec{SaleID: sale, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: int64(o.Units)}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
		return nil, err
	}
	defer func() { _ = rs.DropAll(context.Background()) }()
	if err := rs.Preload(ctx); err != nil {
		return nil, err
	}
	// Every __rand_int__ is a fresh random number from 0..buyers-1: the
	// buyer, their rate-limit log and the order id.
	cmd := rs.ClaimCommand(sale, "u__rand_int__", "__rand_int__", seckill.Terms{PaymentTimeout: o.PaymentTimeout, UnitPriceCents: 990, Currency: "usd"}, seckill.DefaultItem)
	args := []string{"-h", u.Hostname(), "-p", u.Port(),
		"-n", strconv.Itoa(o.AnchorScriptCalls), "-c", strconv.Itoa(o.Conns), "-r", strconv.Itoa(o.Buyers), "--csv"}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		args = append(args, "--dbnum", db)
	}
	if pw, ok := u.User.Password(); ok {
		args = append(args, "-a", pw)
	}
	run := exec.CommandContext(ctx, bin, append(args, cmd...)...)
	var out, errOut bytes.Buffer
	run.Stdout, run.Stderr = &out, &errOut
	if err := run.Run(); err != nil {
		return nil, fmt.Errorf("redis-benchmark: %w: %s", err, errOut.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[1]) < 7 {
		return nil, fmt.Errorf("redis-benchmark: unexpected output %q", out.String())
	}
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(name string) float64 {
		i, ok := col[name]
		if !ok || i >= len(rows[1]) {
			return 0
		}
		f, _ := strconv.ParseFloat(rows[1][i], 64)
		return f
	}
	a := &ScriptAnchor{Calls: o.AnchorScriptCalls, Conns: o.Conns, PerSecond: num("rps"),
		P50: num("p50_latency_ms"), P99: num("p99_latency_ms"),
		Command: "redis-benchmark " + strings.Join(args, " ") + " EVALSHA <claim.lua> ..."}
	if a.PerSecond == 0 {
		return nil, fmt.Errorf("redis-benchmark: no rate in %q", out.String())
	}
	return a, nil
}

// anchorWorkflow does nothing: start and completion are all it costs.
func anchorWorkflow(workflow.Context) error { return nil }

// workflowAnchor starts and completes o.AnchorWorkflows trivial workflows
// on a task queue of its own, with a worker built from seckill's worker
// options and as many starts in flight as one relay allows per sale.
func workflowAnchor(ctx context.Context, c client.Client, o Options) (*WorkflowAnchor, error) {
	queue := "bench-anchor-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	w := sdkworker.New(c, queue, worker.SDKOptions(worker.Options{MaxConcurrentActivities: o.Config.WorkerActivities}))
	w.RegisterWorkflowWithOptions(anchorWorkflow, workflow.RegisterOptions{Name: "BenchAnchor"})
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()

	parallel := relay.DefaultParallel
	start := time.Now()
	if err := runWorkflows(ctx, c, queue, o.AnchorWorkflows, parallel, true, "BenchAnchor"); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	return &WorkflowAnchor{Workflows: o.AnchorWorkflows, Parallel: parallel, Seconds: elapsed.Seconds(),
		PerSecond: float64(o.AnchorWorkflows) / elapsed.Seconds()}, nil
}

// runWorkflows starts n workflows of type name (with args) on queue, with
// parallel starts in flight, as the relay starts sagas; with wait, each
// starter also waits for its workflow's end before its next start. It
// returns the first error.
func runWorkflows(ctx context.Context, c client.Client, queue string, n, parallel int, wait bool, name string, args ...any) error {
	work := make(chan int)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID: queue + "-" + strconv.Itoa(i), TaskQueue: queue,
				}, name, args...)
				if err == nil && wait {
					err = run.Get(ctx, nil)
				}
				if err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}
