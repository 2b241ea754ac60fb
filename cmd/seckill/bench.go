package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/cli"
)

// errBenchFailed makes `seckill bench` exit non-zero when an audit fails
// or a claim got a server error.
var errBenchFailed = errors.New("bench: an audit failed or claims got server errors")

func benchHelp() cli.Help {
	return cli.Help{
		Usage: "seckill bench [--rate 30000] [--buyers 1000000] [--units 10000] [--pay 0] [--fail 0] ...\nseckill bench --lobby [--lobby-window D] [--lobby-margin D] ...\nseckill bench --api URL ...",
		About: `The flash-sale benchmark with its two anchors (BENCHMARKS.md). Without
--api it launches a fresh system of child processes (Temporal dev server,
worker, API) on a new database beside DATABASE_URL's and a new Redis key
prefix, and removes them afterwards; the children inherit the environment,
so they read the other settings as seckill api and worker do. With --api
it benchmarks that running API, with the environment's database, Redis,
Temporal and secrets. --lobby benchmarks a sale with a lobby and its draw
instead of a burst. Exits non-zero when an audit fails or a claim got a
server error.`,
		Env: app.Env(append([]string{"DATABASE_URL", "SECKILL_DB_MAX_CONNS", "REDIS_URL", "SECKILL_REDIS_PREFIX", "SECKILL_REDIS_POOL_SIZE",
			"SECKILL_REDIS_MIN_REPLICAS", "SECKILL_REDIS_REPLICA_TIMEOUT", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET",
			"SECKILL_CLAIM_RATE", "SECKILL_WORKER_ACTIVITIES"}, app.TemporalEnv()...)...),
	}
}

// runBench runs the flash-sale benchmark. Without --api it launches a
// fresh system of child processes (Temporal dev server, worker, API) on a
// new database and Redis prefix, and removes them afterwards.
func runBench(ctx context.Context, cfg app.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o bench.Options
	apiURL := fs.String("api", "", "benchmark this running API (with the environment's DATABASE_URL, REDIS_URL, TEMPORAL_ADDRESS and secrets) instead of launching a system")
	fs.IntVar(&o.Units, "units", 10000, "units per sale")
	fs.IntVar(&o.Sales, "sales", 1, "sales; claims are spread evenly over them")
	fs.IntVar(&o.Buyers, "buyers", 1000000, "distinct buyers (tokens minted before the run)")
	fs.IntVar(&o.Requests, "requests", 0, "claims to send (default: one per buyer, or rate x duration)")
	fs.IntVar(&o.Rate, "rate", 30000, "claims offered per second (open loop)")
	fs.DurationVar(&o.Duration, "duration", 0, "with --requests 0: send for this long, buyers cycling")
	fs.IntVar(&o.Conns, "conns", 256, "connections to the API, and redis-benchmark clients")
	fs.DurationVar(&o.PaymentTimeout, "timeout", 30*time.Second, "the sales' payment timeout")
	fs.Float64Var(&o.PayShare, "pay", 0, "share of won orders that pay (0..1)")
	fs.Float64Var(&o.FailShare, "fail", 0, "share of won orders whose payment fails (0..1); the rest never pay")
	fs.IntVar(&o.Segments, "segments", 1, "segments of each sale's Redis stock (stock_segments, 1..64)")
	fs.Float64Var(&o.WaitlistShare, "waitlist", 0, "share of the buyers answered SOLD_OUT who join the waitlist at once (0..1)")
	fs.Float64Var(&o.WaitlistPayShare, "waitlist-pay", 1, "share of the waitlist's orders that pay (0..1); the rest never pay")
	fs.DurationVar(&o.SettleWithin, "settle-within", 10*time.Minute, "give up waiting for orders to settle after this long")
	fs.IntVar(&o.AnchorScriptCalls, "anchor-calls", 300000, "anchor (a): admission-script calls in redis-benchmark (0: skip)")
	fs.IntVar(&o.AnchorWorkflows, "anchor-workflows", 3000, "anchor (b): trivial workflows started and completed (0: skip)")
	fs.IntVar(&o.AnchorSagas, "anchor-sagas", -1, "anchor (c): workflows of a local activity, a timer of --timeout and a local activity (-1: as many as units x sales; 0: skip)")
	fs.IntVar(&o.BodyRounds, "body-rounds", 5, "rounds comparing claims with a {sku, quantity} body against claims without one, on a sold-out sale (0: skip)")
	fs.DurationVar(&o.BodyRoundTime, "body-round", 2*time.Second, "how long each way of each body round sends claims")
	fs.IntVar(&o.EntryRounds, "entry-rounds", 5, "rounds comparing lobby entries (fresh buyers, 201) with claims on a sold-out sale (0: skip)")
	fs.DurationVar(&o.EntryRoundTime, "entry-round", 2*time.Second, "how long each way of each entry round sends requests")
	fs.IntVar(&o.YardstickRounds, "yardstick-rounds", 5, "rounds comparing the API's claims with the yardstick's (fasthttp + JWT + the admission script: seckill yardstick), open loop then closed loop (0: skip)")
	fs.DurationVar(&o.YardstickRoundTime, "yardstick-round", 2*time.Second, "how long each way of each yardstick round sends claims, open loop and closed loop each")
	fs.IntVar(&o.YardstickRate, "yardstick-rate", 10000, "claims per second of the yardstick rounds' open loop")
	fs.IntVar(&o.YardstickUnits, "yardstick-units", 1, "units of each yardstick round's sale (each unit the API sells starts a saga on the same machine during its round; the yardstick's start none)")
	fs.StringVar(&o.OutDir, "out", "bench-out", "directory for bench.json and bench.png")
	keep := fs.Bool("keep", false, "keep the launched system's database and Redis keys")
	slim := fs.String("slim-binary", "", "run the launched API and worker from this slim build (make build writes bin/seckill-slim)")
	profile := fs.Bool("pprof", false, "serve Go's profiler from every launched process (addresses are printed)")
	store := fs.String("temporal-store", "postgres", "where the launched Temporal dev server keeps its state: postgres or memory")
	eager := fs.Bool("eager-start", true, "the launched worker's relay asks for eager workflow start")
	relayRate := fs.Int("relay-rate", 0, "the launched worker's relay starts at most this many sagas a second (SECKILL_RELAY_RATE; 0: unpaced)")
	lobby := fs.Bool("lobby", false, "the lobby and the draw instead of a burst: one sale with a lobby, every buyer entered once at --rate, then the draw at starts_at (BENCHMARKS.md, issue 23)")
	lobbyWindow := fs.Duration("lobby-window", 0, "with --lobby: how long the lobby takes entries before starts_at (default buyers/rate + --lobby-margin); entries due after it are not sent")
	lobbyMargin := fs.Duration("lobby-margin", 0, "with --lobby: added to buyers/rate for the default window (default max(15s, 10% of buyers/rate))")
	lobbyVerify := fs.Bool("lobby-verify", true, "with --lobby: verify the published draw (draw.Verify) and time it")
	drawWithin := fs.Duration("draw-within", 30*time.Minute, "with --lobby: give up waiting for the draw and its winners' orders after this long")
	var workerEnv []string
	fs.Func("worker-env", "NAME=VALUE added to the launched worker's environment only, e.g. GOMEMLIMIT=250MiB (repeatable)", func(v string) error {
		if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
			return fmt.Errorf("want NAME=VALUE, got %q", v)
		}
		workerEnv = append(workerEnv, v)
		return nil
	})
	if err := benchHelp().Parse(fs, args); err != nil {
		return err
	}
	o.Progress = stderr
	var processesNow func() map[string]int // the launched children's pids at the time of asking
	if *apiURL != "" {
		if err := cfg.RequireSecrets(); err != nil {
			return err
		}
		o.APIURL, o.Config = strings.TrimRight(*apiURL, "/"), cfg
	} else {
		logPath := filepath.Join(os.TempDir(), fmt.Sprintf("seckill-bench-%d.log", os.Getpid()))
		logf, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer func() { _ = logf.Close() }()
		fmt.Fprintf(stderr, "launching Temporal dev server, worker and API (log: %s) ...\n", logPath)
		sys, err := bench.Launch(ctx, bench.LaunchOptions{Base: cfg, Log: logf, Keep: *keep, PProf: *profile, SlimBinary: *slim,
			TemporalStore: *store, WorkerEnv: workerEnv, Env: []string{"SECKILL_EAGER_START=" + strconv.FormatBool(*eager), "SECKILL_RELAY_RATE=" + strconv.Itoa(*relayRate)}})
		if err != nil {
			return err
		}
		for name, url := range sys.PProf {
			fmt.Fprintf(stderr, "pprof %-8s %s\n", name, url)
		}
		defer sys.Stop()
		o.APIURL, o.Config, o.Processes = sys.APIURL, sys.Config, sys.Processes()
		// The yardstick runs from the API's build, beside it.
		o.YardstickBinary, o.YardstickLog = *slim, logf
		processesNow = sys.Processes
	}
	if *lobby {
		return runLobbyBench(ctx, fs, o, bench.LobbyOptions{Window: *lobbyWindow, Margin: *lobbyMargin,
			Verify: *lobbyVerify, DrawWithin: *drawWithin, ProcessesNow: processesNow}, stdout)
	}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	if o.OutDir != "" {
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(o.OutDir, "bench.json"), filepath.Join(o.OutDir, "bench.png"))
	}
	if !rep.OK() {
		return errBenchFailed
	}
	return nil
}

// runLobbyBench is `seckill bench --lobby`: one sale with a lobby, every
// buyer entered once, then the draw, measured (bench.RunLobby). Unless
// --timeout is given, the winners get an hour to pay, so that no order
// times out (and hands its unit to the waitlist) while the run measures.
func runLobbyBench(ctx context.Context, fs *flag.FlagSet, o bench.Options, lo bench.LobbyOptions, stdout io.Writer) error {
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	if !timeoutSet {
		o.PaymentTimeout = 0
	}
	lo.Options = o
	rep, err := bench.RunLobby(ctx, lo)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	if o.OutDir != "" {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(o.OutDir, "bench.json"))
	}
	if !rep.OK() {
		return errLobbyBenchFailed
	}
	return nil
}

// errLobbyBenchFailed makes `seckill bench --lobby` exit non-zero when a
// check of the draw failed or an entry got a server error.
var errLobbyBenchFailed = errors.New("bench --lobby: a check of the draw failed or entries got server errors")
