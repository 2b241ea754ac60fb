// Command seckill is the flash-sale system's one binary: `seckill dev` runs
// everything in one process; `api`, `worker`, `devserver` and `migrate` are
// the production pieces; `token` mints JWTs. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/tracing"
)

const usage = `seckill: a flash-sale system on Redis, Postgres and Temporal.

Usage:
  seckill dev [--temporal-store postgres|memory] [--db-file F] [--no-demo]
                                    everything in one process (embedded Temporal
                                    + UI; Temporal's state in PostgreSQL unless
                                    memory is asked for)
  seckill devserver [--temporal-store postgres|memory] [--db-file F]
                                    only the embedded Temporal dev server and UI
  seckill api                       the HTTP API
  seckill worker                    the Temporal worker and the outbox relay
  seckill migrate                   create the database if missing and migrate it
  seckill sale create|list|show|stats|restock ...
                                    manage sales through the API as an admin
                                    (seckill sale --help)
  seckill token --user ID [--admin] [--claim /groups=vip ...] [--ttl 1h]
                                    print a signed JWT (uses SECKILL_JWT_SECRET,
                                    or the dev secret when unset, with
                                    SECKILL_JWT_AUDIENCE and SECKILL_ADMIN_CLAIM;
                                    --claim: a presale's claim)
  seckill audit --sale ID [--wait 1m] [--json]
                                    check the invariants of a sale, once
                                    it is at rest (waits up to --wait for that;
                                    --wait 0 checks at once); exits non-zero on
                                    any violation
  seckill order wait --order ID [--status S] [--timeout 3m]
                                    wait until the order has status S (default:
                                    PAID or CLOSED, its saga ended) and print it
                                    (seckill order --help)
  seckill draw verify --sale ID [--api URL] [--json]
                                    recompute a sale's draw from its published
                                    seed and entries, as anyone can, and check
                                    the admitted orders are the entries that
                                    fit each variant's stock; exits
                                    non-zero when a check fails (seckill draw --help)
  seckill sagas versions [--json]   open order sagas by the saga version they
                                    started on; exits non-zero while a run of a
                                    retired version is open (docs/OPERATIONS.md, Upgrading)
  seckill events failed|redeliver --id ID
                                    order events to the shop that gave up after
                                    days of retries, and sending them again
                                    (seckill events --help)
  seckill bench [--rate 30000] [--buyers 1000000] [--units 10000] ...
                                    flash-sale benchmark with its anchors
                                    (launches its own system; see BENCHMARKS.md);
                                    --lobby: a sale with a lobby and its draw
  seckill yardstick [--payment-timeout 30s]
                                    the claim yardstick seckill bench compares
                                    the API with: fasthttp, the token and the
                                    admission script, nothing else
  seckill pay --order ID [--fail] [--wait] [--timeout 3m]
                                    dev payment provider: send a signed webhook
                                    for the order (uses SECKILL_WEBHOOK_SECRET,
                                    or the dev secret when unset); --wait then
                                    waits as seckill order wait does

Every command reads its settings from the environment and checks them all
at start: seckill COMMAND --help says what the command does, its flags and
the settings it uses, with their defaults; docs/OPERATIONS.md#configuration
says what each setting means.
`

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is seckill's command line, with the environment read through
// getenv. It returns the exit status (cli.Exit): 0 when the command
// succeeded or its help was asked for, 1 when it failed, 2 when the
// command line is wrong.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return cli.Exit(dispatch(args, getenv, stdout, stderr), stdout, stderr)
}

// call is one run of a command: what any command may use.
type call struct {
	ctx            context.Context // done at SIGINT or SIGTERM
	cfg            app.Config
	getenv         func(string) string
	args           []string // after the command's name
	stdout, stderr io.Writer
}

// dispatch runs the command args name, its help or the top-level one.
func dispatch(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Wrong(errors.New("a command is required"), usage)
	}
	if cli.IsHelp(args[0]) {
		return cli.ShowHelp(usage)
	}
	name := args[0]
	cmd := command(name)
	if cmd == nil {
		return cli.Wrong(fmt.Errorf("unknown command %q", name), usage)
	}
	cfg, err := app.FromEnv(getenv)
	if err != nil {
		return err
	}
	cfg.Log = newLogger(stderr, getenv, name == "dev" || name == "devserver")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cmd(call{ctx: ctx, cfg: cfg, getenv: getenv, args: args[1:], stdout: stdout, stderr: stderr})
}

// command is the command called name, nil when there is none.
func command(name string) func(call) error {
	switch name {
	case "dev":
		return runDev
	case "devserver":
		return func(c call) error { return runDevServer(c.ctx, c.cfg, c.args, c.stdout) }
	case "api":
		return runAPI
	case "worker":
		return runWorker
	case "migrate":
		return runMigrate
	case "token":
		return func(c call) error { return token(c.cfg, c.args, c.stdout) }
	case "pay":
		return func(c call) error { return pay(c.ctx, c.cfg, c.args, c.stdout) }
	case "audit":
		return func(c call) error { return runAudit(c.ctx, c.cfg, c.args, c.stdout) }
	case "bench":
		return func(c call) error { return runBench(c.ctx, c.cfg, c.args, c.stdout, c.stderr) }
	case "yardstick":
		return runYardstick
	case "sale":
		return func(c call) error { return app.SaleCommand(c.ctx, c.cfg, c.getenv, c.args, c.stdout, time.Now()) }
	case "sagas":
		return func(c call) error { return app.SagasCommand(c.ctx, c.cfg, c.args, c.stdout) }
	case "events":
		return func(c call) error { return app.EventsCommand(c.ctx, c.cfg, c.args, c.stdout) }
	case "order":
		return func(c call) error { return app.OrderCommand(c.ctx, c.cfg, c.getenv, c.args, c.stdout) }
	case "draw":
		return func(c call) error { return app.DrawCommand(c.ctx, c.cfg, c.getenv, c.args, c.stdout) }
	}
	return nil
}

// serverEnv is what the long-running processes read: every setting
// FromEnv reads but those named in except, their logs', profiler's and
// traces' settings, and extra.
func serverEnv(except []string, extra ...string) []cli.Var {
	var names []string
	for _, v := range app.ConfigEnv() {
		if !slices.Contains(except, v.Name) {
			names = append(names, v.Name)
		}
	}
	names = append(names, "SECKILL_LOG_LEVEL", "SECKILL_PPROF_ADDR", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER")
	return app.Env(append(names, extra...)...)
}

func apiHelp() cli.Help {
	return cli.Help{
		Usage: "seckill api",
		About: `Serves the HTTP API on SECKILL_HTTP_ADDR: the shop's pages, /api/v1 and the
payment webhook. It refuses to start without SECKILL_WEBHOOK_SECRET, and
without SECKILL_JWT_SECRET unless an identity provider signs the tokens
(SECKILL_OIDC_ISSUER or SECKILL_JWKS_URL). On SIGTERM it stays up, not
ready, for SECKILL_SHUTDOWN_DELAY, then waits up to SECKILL_SHUTDOWN_TIMEOUT
for the requests in flight.`,
		Env: serverEnv(app.DevServerEnv()),
	}
}

func runAPI(c call) error {
	if err := apiHelp().Parse(flag.NewFlagSet("api", flag.ContinueOnError), c.args); err != nil {
		return err
	}
	if err := c.cfg.RequireSecrets(); err != nil {
		return err
	}
	stop, err := observe(c.ctx, &c.cfg, "api", c.getenv)
	if err != nil {
		return err
	}
	defer stop()
	cfg := c.cfg
	return withDeps(c.ctx, cfg, app.Connect, func(d *app.Deps) error {
		ln, err := app.Listen(cfg.HTTPAddr, "SECKILL_HTTP_ADDR")
		if err != nil {
			return err
		}
		cfg.Log.Info("api listening", "addr", ln.Addr().String(), "shop", "http://"+ln.Addr().String()+"/", "paymentHold", cfg.PaymentHold.String())
		if cfg.DevTools {
			cfg.Log.Warn("SECKILL_DEV_TOOLS is on: anyone can sign in as any user at /dev/sign-in and pay without paying at /dev/checkout; never enable it on a public deployment")
		}
		return app.RunAPI(c.ctx, cfg, d, ln)
	})
}

func workerHelp() cli.Help {
	return cli.Help{
		Usage: "seckill worker",
		About: `Runs the Temporal worker (the order sagas and their activities; it registers
seckill's search attributes when missing), the outbox relay, which starts
a saga for each admitted claim, and the re-warmer, which loads Redis again
with every open sale it lost. It refuses to start without its secrets, as
seckill api does. With SECKILL_METRICS_ADDR it serves its metrics on
http://ADDR/metrics.`,
		Env: serverEnv(app.DevServerEnv(), "SECKILL_METRICS_ADDR"),
	}
}

func runWorker(c call) error {
	if err := workerHelp().Parse(flag.NewFlagSet("worker", flag.ContinueOnError), c.args); err != nil {
		return err
	}
	if err := c.cfg.RequireSecrets(); err != nil {
		return err
	}
	stop, err := observe(c.ctx, &c.cfg, "worker", c.getenv)
	if err != nil {
		return err
	}
	defer stop()
	cfg := c.cfg
	return withDeps(c.ctx, cfg, app.Connect, func(d *app.Deps) error {
		if addr := c.getenv("SECKILL_METRICS_ADDR"); addr != "" {
			stopMetrics, err := serveMetrics(addr, d)
			if err != nil {
				return err
			}
			defer stopMetrics()
			cfg.Log.Info("worker metrics", "url", "http://"+addr+"/metrics")
		}
		cfg.Log.Info("worker and relay running", "taskQueue", cfg.TaskQueue, "drawTaskQueue", cfg.DrawTaskQueue, "paymentHold", cfg.PaymentHold.String())
		return app.RunWorker(c.ctx, cfg, d)
	})
}

func migrateHelp() cli.Help {
	return cli.Help{
		Usage: "seckill migrate",
		About: `Creates the database DATABASE_URL names if it is missing, and applies the
migrations it lacks, showing its progress.`,
		Env: app.Env("DATABASE_URL"),
	}
}

func runMigrate(c call) error {
	if err := migrateHelp().Parse(flag.NewFlagSet("migrate", flag.ContinueOnError), c.args); err != nil {
		return err
	}
	return app.Migrate(c.ctx, c.cfg, c.stdout)
}

// observe starts what api, worker and dev serve beside their work: Go's
// profiler on SECKILL_PPROF_ADDR, and traces when the OTEL_* variables
// name a collector (docs/API.md "Tracing"), which cfg.Log's lines then
// carry. stop ends both.
func observe(ctx context.Context, cfg *app.Config, name string, getenv func(string) string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if addr := getenv("SECKILL_PPROF_ADDR"); addr != "" {
		stopPProf, err := servePProf(addr)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopPProf)
	}
	if cfg.Tracing {
		shutdown, err := tracing.Setup(ctx, getenv, "seckill-"+name)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(sctx)
		})
		cfg.Log = slog.New(tracing.LogHandler(cfg.Log.Handler()))
	}
	return stop, nil
}

func newLogger(w io.Writer, getenv func(string) string, dev bool) *slog.Logger {
	level := slog.LevelInfo
	if v := getenv("SECKILL_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: app.LogIDsAsStrings}
	if dev && getenv("SECKILL_LOG_FORMAT") != "json" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func withDeps(ctx context.Context, cfg app.Config, connect func(context.Context, app.Config) (*app.Deps, error), fn func(*app.Deps) error) error {
	d, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := fn(d); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func tokenHelp() cli.Help {
	return cli.Help{
		Usage: "seckill token --user ID [--admin] [--claim /groups=vip ...] [--ttl 1h]",
		About: `Prints a JWT for user ID, signed with SECKILL_JWT_SECRET (the dev secret
when unset), carrying SECKILL_JWT_AUDIENCE and, with --admin,
SECKILL_ADMIN_CLAIM. Each --claim POINTER=VALUE (written as
SECKILL_ADMIN_CLAIM is) puts VALUE at the JSON Pointer, in an array: the
token of a presale's member (a sale's presale.claim). With an identity provider (SECKILL_OIDC_ISSUER or
SECKILL_JWKS_URL) tokens come from it, and this command refuses.`,
		Env: app.Env(app.SigningEnv()...),
	}
}

func token(cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	user := fs.String("user", "", "user id (sub), 1-255 printable ASCII characters")
	admin := fs.Bool("admin", false, "an admin's token: it carries SECKILL_ADMIN_CLAIM")
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	var claims []auth.AdminClaim
	fs.Func("claim", "a claim the token carries, POINTER=VALUE as SECKILL_ADMIN_CLAIM is written, e.g. /groups=vip (repeat for more)", func(s string) error {
		c, err := auth.ParseAdminClaim(s)
		if err != nil {
			return err
		}
		claims = append(claims, c)
		return nil
	})
	if err := tokenHelp().Parse(fs, args); err != nil {
		return err
	}
	if *user == "" {
		return errors.New("token: --user is required")
	}
	if cfg.UsesProvider() {
		return errors.New("token: tokens come from your identity provider (SECKILL_OIDC_ISSUER or SECKILL_JWKS_URL is set); seckill token signs with SECKILL_JWT_SECRET, which seckill does not accept then")
	}
	cfg.WithDevSecrets()
	t, err := cfg.Secret().SignWith(*user, *admin, *ttl, claims...)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t)
	return nil
}

// serveMetrics serves the process's metrics on addr until stopped.
func serveMetrics(addr string, d *app.Deps) (func(), error) {
	ln, err := app.Listen(addr, "SECKILL_METRICS_ADDR")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.Metrics, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// servePProf serves Go's profiler on addr (keep it on loopback): how the
// benchmark's figures were explained (BENCHMARKS.md).
func servePProf(addr string) (func(), error) {
	ln, err := app.Listen(addr, "SECKILL_PPROF_ADDR")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
