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
	"time"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/app"
)

func runDevServer(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devserver", flag.ContinueOnError)
	dbFile := fs.String("db-file", "", "persist Temporal's state to this SQLite file (default: in memory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ts, err := app.StartDevServer(cfg, app.DevOptions{DBFile: *dbFile})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Temporal server: %s\nTemporal UI:     %s\n", ts.Address(), ts.UIURL())
	<-ctx.Done()
	return ts.Stop()
}

func runDev(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	dbFile := fs.String("db-file", "", "persist Temporal's state to this SQLite file (default: in memory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.WithDevSecrets()
	return app.Dev(ctx, cfg, app.DevOptions{DBFile: *dbFile}, func(info app.DevInfo) {
		user, _ := api.SignToken(cfg.JWTSecret, "alice", false, 24*time.Hour)
		now := time.Now().UTC().Truncate(time.Second)
		fmt.Fprintf(stdout, `
seckill dev is running. Ctrl-C stops everything.

  API          %[1]s
  Temporal UI  %[2]s   (filter: SaleId="1")
  Temporal     %[3]s
  Webhook key  %[4]s

Admin token (30 days):
  export ADMIN=%[5]s
A buyer token for user "alice" (24 h):
  export ALICE=%[6]s

Create a demo sale (100 units, pay within 60 s):
  curl -s -X POST %[1]s/api/v1/sales -H "Authorization: Bearer $ADMIN" \
    -H 'Content-Type: application/json' \
    -d '{"name":"Demo coupon","price_cents":990,"currency":"usd","stock":100,"starts_at":"%[7]s","ends_at":"%[8]s","payment_timeout_seconds":60}'
Claim a unit as alice (use the sale id from the answer):
  curl -si -X POST %[1]s/api/v1/sales/1/claims -H "Authorization: Bearer $ALICE"
Pay for it as the payment provider would (a signed webhook):
  go run ./cmd/seckill pay --order ORDER_ID
`, info.APIURL, info.UIURL, info.TemporalAddress, info.WebhookSecret, info.AdminToken, user,
			now.Format(time.RFC3339), now.Add(24*time.Hour).Format(time.RFC3339))
	})
}
