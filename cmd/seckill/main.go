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
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill/seckill/app"
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
  seckill sale create|list|show|stats ...
                                    manage sales through the API as an admin
                                    (seckill sale --help)
  seckill token --user ID [--admin] [--ttl 1h]
                                    print a signed JWT (uses SECKILL_JWT_SECRET,
                                    or the dev secret when unset, with
                                    SECKILL_JWT_AUDIENCE and SECKILL_ADMIN_CLAIM)
  seckill audit --sale ID [--wait 1m] [--json]
                                    check the eight invariants of a sale, once
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
                                    the admitted orders are ranks 1..K; exits
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
  seckill pay --order ID [--fail] [--wait] [--timeout 3m]
                                    dev payment provider: send a signed webhook
                                    for the order (uses SECKILL_WEBHOOK_SECRET,
                                    or the dev secret when unset); --wait then
                                    waits as seckill order wait does

Configuration is read from the environment; see docs/OPERATIONS.md (Configuration).
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("a command is required")
	}
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cmd, args := args[0], args[1:]
	cfg.Log = newLogger(stderr, cmd == "dev" || cmd == "devserver")
	if addr := os.Getenv("SECKILL_PPROF_ADDR"); addr != "" && (cmd == "api" || cmd == "worker" || cmd == "dev") {
		stop, err := servePProf(addr)
		if err != nil {
			return err
		}
		defer stop()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Tracing && (cmd == "api" || cmd == "worker" || cmd == "dev") {
		// docs/API.md "Tracing": the OTEL_* variables name the collector.
		shutdown, err := tracing.Setup(ctx, os.Getenv, "seckill-"+cmd)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(sctx)
		}()
		cfg.Log = slog.New(tracing.LogHandler(cfg.Log.Handler()))
	}

	switch cmd {
	case "dev":
		return runDev(ctx, cfg, args, stdout)
	case "devserver":
		return runDevServer(ctx, cfg, args, stdout)
	case "api":
		if err := parse("api", args); err != nil {
			return err
		}
		if err := cfg.RequireSecrets(); err != nil {
			return err
		}
		return withDeps(ctx, cfg, app.Connect, func(d *app.Deps) error {
			ln, err := app.Listen(cfg.HTTPAddr, "SECKILL_HTTP_ADDR")
			if err != nil {
				return err
			}
			cfg.Log.Info("api listening", "addr", ln.Addr().String(), "shop", "http://"+ln.Addr().String()+"/", "paymentHold", cfg.PaymentHold.String())
			if cfg.DevTools {
				cfg.Log.Warn("SECKILL_DEV_TOOLS is on: anyone can sign in as any user at /dev/sign-in and pay without paying at /dev/checkout; never enable it on a public deployment")
			}
			return app.RunAPI(ctx, cfg, d, ln)
		})
	case "worker":
		if err := parse("worker", args); err != nil {
			return err
		}
		if err := cfg.RequireSecrets(); err != nil {
			return err
		}
		return withDeps(ctx, cfg, app.Connect, func(d *app.Deps) error {
			if addr := os.Getenv("SECKILL_METRICS_ADDR"); addr != "" {
				stopMetrics, err := serveMetrics(addr, d)
				if err != nil {
					return err
				}
				defer stopMetrics()
				cfg.Log.Info("worker metrics", "url", "http://"+addr+"/metrics")
			}
			cfg.Log.Info("worker and relay running", "taskQueue", cfg.TaskQueue, "paymentHold", cfg.PaymentHold.String())
			return app.RunWorker(ctx, cfg, d)
		})
	case "migrate":
		if err := parse("migrate", args); err != nil {
			return err
		}
		return migrate(ctx, cfg, stdout)
	case "token":
		return token(cfg, args, stdout)
	case "pay":
		return pay(ctx, cfg, args, stdout)
	case "audit":
		return runAudit(ctx, cfg, args, stdout)
	case "sale":
		return app.SaleCommand(ctx, cfg, os.Getenv, args, stdout, time.Now())
	case "sagas":
		return app.SagasCommand(ctx, cfg, args, stdout)
	case "events":
		return app.EventsCommand(ctx, cfg, args, stdout)
	case "order":
		return app.OrderCommand(ctx, cfg, os.Getenv, args, stdout)
	case "draw":
		return app.DrawCommand(ctx, cfg, os.Getenv, args, stdout)
	case "bench":
		return runBench(ctx, cfg, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

func parse(name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return fs.Parse(args)
}

func newLogger(w io.Writer, dev bool) *slog.Logger {
	level := slog.LevelInfo
	if v := os.Getenv("SECKILL_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: app.LogIDsAsStrings}
	if dev && os.Getenv("SECKILL_LOG_FORMAT") != "json" {
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

func migrate(ctx context.Context, cfg app.Config, stdout io.Writer) error {
	return app.Migrate(ctx, cfg, stdout)
}

func token(cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	user := fs.String("user", "", "user id (sub), 1-255 printable ASCII characters")
	admin := fs.Bool("admin", false, `add "role": "admin"`)
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" {
		return errors.New("token: --user is required")
	}
	if cfg.UsesProvider() {
		return errors.New("token: tokens come from your identity provider (SECKILL_OIDC_ISSUER or SECKILL_JWKS_URL is set); seckill token signs with SECKILL_JWT_SECRET, which seckill does not accept then")
	}
	cfg.WithDevSecrets()
	t, err := cfg.Secret().Sign(*user, *admin, *ttl)
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
