package main

import (
	"errors"
	"flag"
	"net"
	"time"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/cli"
)

func yardstickHelp() cli.Help {
	return cli.Help{
		Usage: "seckill yardstick [--payment-timeout 30s]",
		About: `The claim yardstick seckill bench measures the API against (BENCHMARKS.md):
a fasthttp server on SECKILL_HTTP_ADDR that verifies the bearer token as
the API does and runs the admission script on REDIS_URL under
SECKILL_REDIS_PREFIX, for POST /api/v1/sales/{id}/claims, and nothing
else. The bench starts it on a prefix of its own and warms its sales
there; it is not a way to sell anything.`,
		Env: app.Env("REDIS_URL", "SECKILL_REDIS_PREFIX", "SECKILL_HTTP_ADDR", "SECKILL_JWT_SECRET", "SECKILL_JWT_AUDIENCE", "SECKILL_CLAIM_RATE"),
	}
}

func runYardstick(c call) error {
	fs := flag.NewFlagSet("yardstick", flag.ContinueOnError)
	timeout := fs.Duration("payment-timeout", 30*time.Second, "the pay-by window of the orders it admits")
	if err := yardstickHelp().Parse(fs, c.args); err != nil {
		return err
	}
	if len(c.cfg.JWTSecret) == 0 {
		return errors.New("SECKILL_JWT_SECRET is required: the yardstick verifies the bench's tokens with it")
	}
	ln, err := net.Listen("tcp", c.cfg.HTTPAddr)
	if err != nil {
		return err
	}
	c.cfg.Log.Info("yardstick serving", "addr", ln.Addr().String())
	return bench.ServeYardstick(c.ctx, c.cfg, ln, bench.YardstickTerms(*timeout))
}
