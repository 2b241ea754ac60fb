//go:build !slim

package main

// The embedded Temporal server and its Web UI: the full build only. The
// slim build (go build -tags slim) leaves them out, and so most of the
// binary's resident memory.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/cli"
)

func devServerHelp() cli.Help {
	return cli.Help{
		Usage: "seckill devserver [--temporal-store postgres|memory] [--db-file F]",
		About: `Runs only the embedded Temporal dev server and its Web UI, with seckill's
search attributes, until interrupted; its state in PostgreSQL, beside
DATABASE_URL's database, unless asked otherwise.`,
		Env: app.Env(append([]string{"DATABASE_URL", "TEMPORAL_NAMESPACE"}, append(app.DevServerEnv(), "SECKILL_LOG_LEVEL", "SECKILL_LOG_FORMAT")...)...),
	}
}

func runDevServer(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devserver", flag.ContinueOnError)
	store := fs.String("temporal-store", app.StorePostgres, "where Temporal keeps its state: postgres (databases of its own beside DATABASE_URL's) or memory")
	dbFile := fs.String("db-file", "", "keep Temporal's state in this SQLite file instead")
	if err := devServerHelp().Parse(fs, args); err != nil {
		return err
	}
	ts, err := app.StartDevServer(cfg, app.DevOptions{TemporalStore: *store, DBFile: *dbFile})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Temporal server: %s\nTemporal UI:     %s\n", ts.Address(), ts.UIURL())
	<-ctx.Done()
	return ts.Stop()
}

func devHelp() cli.Help {
	return cli.Help{
		Usage: "seckill dev [--temporal-store postgres|memory] [--db-file F] [--no-demo]",
		About: `Runs everything in one process: the embedded Temporal server and its Web
UI, the worker, the outbox relay and the API with the shop's pages and the
dev tools (SECKILL_DEV_TOOLS is always on). It creates and migrates the
database, opens a demo sale when none is open, and prints the URLs and
tokens. Unset secrets are the fixed dev ones. Its Temporal server is its
own, on loopback: TEMPORAL_ADDRESS, TEMPORAL_TLS_* and TEMPORAL_API_KEY
are not read. Ctrl-C (SIGINT) or SIGTERM stops it cleanly, exit status 0.`,
		Env: serverEnv(append(devIgnores(), "SECKILL_DEV_TOOLS"), "SECKILL_LOG_FORMAT"),
	}
}

// devIgnores are the settings of a Temporal beyond loopback, which dev's
// own server is not (app.Dev).
func devIgnores() []string {
	return slices.DeleteFunc(app.TemporalEnv(), func(name string) bool {
		return name == "TEMPORAL_NAMESPACE" || name == "TEMPORAL_TASK_QUEUE"
	})
}

func runDev(c call) error {
	ctx, cfg, stdout := c.ctx, c.cfg, c.stdout
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	store := fs.String("temporal-store", app.StorePostgres, "where Temporal keeps its state: postgres (databases of its own beside DATABASE_URL's, so orders in flight survive a restart) or memory")
	dbFile := fs.String("db-file", "", "keep Temporal's state in this SQLite file instead")
	noDemo := fs.Bool("no-demo", false, "do not open a demo sale when no sale is open")
	if err := devHelp().Parse(fs, c.args); err != nil {
		return err
	}
	stop, err := observe(ctx, &cfg, "dev", c.getenv)
	if err != nil {
		return err
	}
	defer stop()
	cfg.WithDevSecrets()
	opts := app.DevOptions{TemporalStore: *store, DBFile: *dbFile, Progress: stdout, DemoSale: !*noDemo}
	// The embedded server's own logs (JSON, errors only, with stack
	// traces: dozens of lines at a failed start; a clean start and stop
	// write none) go to a file unless asked for with
	// SECKILL_LOG_LEVEL=debug.
	if strings.ToLower(c.getenv("SECKILL_LOG_LEVEL")) == "debug" {
		opts.TemporalLogLevel = "debug"
	} else {
		opts.TemporalLogFile = devTemporalLog(cfg.DatabaseURL)
		fmt.Fprintf(stdout, "(the embedded Temporal server logs to %s; SECKILL_LOG_LEVEL=debug shows it here)\n", opts.TemporalLogFile)
	}
	err = app.Dev(ctx, cfg, opts, func(info app.DevInfo) {
		user, _ := cfg.Secret().Sign("alice", false, 24*time.Hour)
		fmt.Fprintf(stdout, `
seckill dev is running. Ctrl-C stops everything.

  Shop         %[1]s/
               sign in with any name, buy a unit, pay on the dev checkout
  Temporal UI  %[2]s
               find the order: SaleId="1" AND OrderStatus="PAID"
  Metrics      %[1]s/metrics
  API          %[1]s/api/v1   (docs/API.md)
  Temporal     %[3]s
  Webhook key  %[4]s
  Redis keys   %[7]s:*   (SECKILL_REDIS_PREFIX; this database's own)

Operators (make build && export PATH="$PWD/bin:$PATH" puts seckill on the PATH):
  seckill sale list             seckill sale stats 1 --watch 2s
  seckill sale create --name "Flash coupon" --price 9.90 --stock 100 --timeout 60s

Tokens for curl (dev secret):
  export ADMIN=%[5]s
  export ALICE=%[6]s
  curl -si -X POST %[1]s/api/v1/sales/1/claims -H "Authorization: Bearer $ALICE"
  seckill pay --order ORDER_ID        (a signed payment webhook)
`, info.APIURL, info.UIURL, info.TemporalAddress, info.WebhookSecret, info.AdminToken, user, info.RedisPrefix)
	})
	if err == nil && ctx.Err() != nil {
		if *store == app.StoreMemory && *dbFile == "" {
			fmt.Fprintln(stdout, "seckill dev stopped cleanly (Temporal's state was in memory: its workflows are gone)")
		} else {
			fmt.Fprintln(stdout, "seckill dev stopped cleanly: orders in flight continue at the next start")
		}
	}
	return err
}

// devTemporalLog is where `seckill dev` writes the embedded server's logs:
// one file per installation (its database), bounded by
// devserver.MaxLogBytes.
func devTemporalLog(databaseURL string) string {
	name := "seckill"
	if u, err := url.Parse(databaseURL); err == nil && strings.Trim(u.Path, "/") != "" {
		name = strings.Trim(u.Path, "/")
	}
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
	return filepath.Join(os.TempDir(), "seckill-dev-temporal-"+name+".log")
}
