package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/audit"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/saga"
)

// errViolations makes `seckill audit` exit non-zero.
var errViolations = errors.New("audit: invariants violated")

func auditHelp() cli.Help {
	return cli.Help{
		Usage: "seckill audit --sale ID [--wait 1m] [--grace 1m] [--json]",
		About: `Checks the invariants of docs/DESIGN.md for one sale, from
PostgreSQL, Redis and Temporal, once the sale is at rest: it polls up to
--wait until the sale is at rest and every check passes (--wait 0 checks
at once), so a sale whose sagas are still working is not reported before
they are done. Exits non-zero on any violation.`,
		Env: app.Env(append([]string{"DATABASE_URL", "SECKILL_DB_MAX_CONNS", "REDIS_URL", "SECKILL_REDIS_PREFIX",
			"SECKILL_REDIS_POOL_SIZE", "SECKILL_REDIS_MIN_REPLICAS", "SECKILL_REDIS_REPLICA_TIMEOUT", "SECKILL_PAYMENT_HOLD"}, app.TemporalEnv()...)...),
	}
}

// runAudit checks the invariants of docs/DESIGN.md for one sale. It
// polls up to --wait (a minute by default; 0 checks once) until the sale
// is at rest and every check passes, so a sale whose sagas are still
// working is not reported before they are done; it exits non-zero on any
// violation.
func runAudit(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	saleArg := fs.String("sale", "", "sale id")
	wait := fs.Duration("wait", time.Minute, "poll up to this long for the sale to be at rest and pass (0: check once)")
	grace := fs.Duration("grace", time.Minute, "how long past its deadline an order may take to settle")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := auditHelp().Parse(fs, args); err != nil {
		return err
	}
	saleID, err := strconv.ParseInt(*saleArg, 10, 64)
	if err != nil || saleID <= 0 {
		return errors.New("audit: --sale must be a sale id")
	}
	return withDeps(ctx, cfg, app.ConnectTool, func(d *app.Deps) error {
		a := &audit.Auditor{DB: d.Store.Gorm(), Redis: d.Redis, Sagas: saga.New(d.Temporal, saga.Options{TaskQueue: cfg.TaskQueue})}
		rep, err := a.Wait(ctx, saleID, audit.Options{Grace: *grace, Hold: cfg.PaymentHold}, *wait)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(stdout, rep)
		}
		if !rep.OK() {
			return errViolations
		}
		return nil
	})
}
