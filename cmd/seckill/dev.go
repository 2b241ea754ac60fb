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
	"strings"
	"time"

	"github.com/seckill/seckill/app"
)

func runDevServer(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devserver", flag.ContinueOnError)
	store := fs.String("temporal-store", app.StorePostgres, "where Temporal keeps its state: postgres (databases of its own beside DATABASE_URL's) or memory")
	dbFile := fs.String("db-file", "", "keep Temporal's state in this SQLite file instead")
	if err := fs.Parse(args); err != nil {
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

func runDev(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	store := fs.String("temporal-store", app.StorePostgres, "where Temporal keeps its state: postgres (databases of its own beside DATABASE_URL's, so orders in flight survive a restart) or memory")
	dbFile := fs.String("db-file", "", "keep Temporal's state in this SQLite file instead")
	noDemo := fs.Bool("no-demo", false, "do not open a demo sale when no sale is open")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.WithDevSecrets()
	opts := app.DevOptions{TemporalStore: *store, DBFile: *dbFile, Progress: stdout, DemoSale: !*noDemo}
	// The embedded server's own logs (JSON, errors only, with stack
	// traces: dozens of lines at a failed start; a clean start and stop
	// write none) go to a file unless asked for with
	// SECKILL_LOG_LEVEL=debug.
	if strings.ToLower(os.Getenv("SECKILL_LOG_LEVEL")) == "debug" {
		opts.TemporalLogLevel = "debug"
	} else {
		opts.TemporalLogFile = devTemporalLog(cfg.DatabaseURL)
		fmt.Fprintf(stdout, "(the embedded Temporal server logs to %s; SECKILL_LOG_LEVEL=debug shows it here)\n", opts.TemporalLogFile)
	}
	err := app.Dev(ctx, cfg, opts, func(info app.DevInfo) {
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
