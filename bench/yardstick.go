package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// YardstickTerms are the terms the yardstick admits every buyer on: the
// bench's sales' (990 cents in USD), with the run's payment timeout.
func YardstickTerms(paymentTimeout time.Duration) seckill.Terms {
	return seckill.Terms{PaymentTimeout: paymentTimeout, UnitPriceCents: benchPriceCents, Currency: "usd"}
}

// benchPriceCents is the price of every sale the bench creates.
const benchPriceCents = 990

// ServeYardstick serves the claim yardstick on ln until ctx is done: the
// least a claim needs (issue 34, item 4). fasthttp reads
// POST /api/v1/sales/{id}/claims, the bearer token is verified as the API
// verifies a shared-secret token (auth.Secret: HS256, audience, expiry),
// the admission script decides on cfg's Redis under cfg's prefix, and the
// answer is a 202 with the order id or a 409 with the refusal's code. An
// Idempotency-Key goes to the script, unchecked.
// Nothing else: no sale read from PostgreSQL or a cache, no sold-out
// flag, no order-id leases, no metrics, logs, tracing or proof of work.
// Order ids count up from the time it started, in nanoseconds: unique in
// its own Redis prefix, which nothing else reads. `seckill bench` runs it
// as a child process (`seckill yardstick`) beside the API, so that both
// answer the same claims under the same load.
func ServeYardstick(ctx context.Context, cfg app.Config, ln net.Listener, terms seckill.Terms) error {
	rs, err := app.OpenRedis(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = rs.Close() }()
	if err := rs.Preload(ctx); err != nil {
		return err
	}
	// Every claim of a buyer counts against the same limit as in the API.
	rs = rs.WithRateLimit(cfg.ClaimRate)
	verifier := cfg.Secret()
	var nextID atomic.Int64
	nextID.Store(time.Now().UnixNano())
	srv := &fasthttp.Server{
		Name: "seckill-yardstick",
		Handler: func(c *fasthttp.RequestCtx) {
			if string(c.Path()) == "/readyz" {
				c.SetStatusCode(fasthttp.StatusOK)
				return
			}
			sale, ok := yardstickSale(c.Path())
			if !ok || !c.IsPost() {
				yardstickProblem(c, fasthttp.StatusNotFound, seckill.CodeSaleNotFound)
				return
			}
			token, ok := bytes.CutPrefix(c.Request.Header.Peek(fasthttp.HeaderAuthorization), []byte("Bearer "))
			if !ok {
				yardstickProblem(c, fasthttp.StatusUnauthorized, seckill.CodeUnauthenticated)
				return
			}
			p, err := verifier.Verify(c, string(token))
			if err != nil {
				yardstickProblem(c, fasthttp.StatusUnauthorized, seckill.CodeUnauthenticated)
				return
			}
			// An Idempotency-Key is passed on, as the API passes it: the
			// script then records its answer for the key.
			key := string(c.Request.Header.Peek("Idempotency-Key"))
			res, err := rs.Claim(c, sale, p.UserID, nextID.Add(1), key, terms, seckill.DefaultItem)
			if err != nil {
				yardstickProblem(c, fasthttp.StatusServiceUnavailable, seckill.CodeUnavailable)
				return
			}
			switch res.Outcome {
			case seckill.Admitted:
				c.SetStatusCode(fasthttp.StatusAccepted)
				c.SetContentType("application/json")
				b := append(c.Response.Body()[:0], `{"order_id":"`...)
				b = strconv.AppendInt(b, res.OrderID, 10)
				b = append(b, `","status":"QUEUED"}`...)
				c.Response.SetBodyRaw(b)
			case seckill.SoldOut:
				yardstickProblem(c, fasthttp.StatusConflict, seckill.CodeSoldOut)
			case seckill.AlreadyClaimed:
				yardstickProblem(c, fasthttp.StatusConflict, seckill.CodeAlreadyClaimed)
			case seckill.RateLimited:
				yardstickProblem(c, fasthttp.StatusTooManyRequests, seckill.CodeRateLimited)
			case seckill.Unavailable:
				yardstickProblem(c, fasthttp.StatusServiceUnavailable, seckill.CodeUnavailable)
			default:
				yardstickProblem(c, fasthttp.StatusConflict, seckill.Code(res.Outcome))
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if err := srv.ShutdownWithContext(context.Background()); err != nil {
			return err
		}
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}
}

var yardstickPrefix, yardstickSuffix = []byte("/api/v1/sales/"), []byte("/claims")

// yardstickSale is the sale of a claim's path.
func yardstickSale(path []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(path, yardstickPrefix)
	if !ok {
		return 0, false
	}
	id, ok := bytes.CutSuffix(rest, yardstickSuffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return n, err == nil && n > 0
}

// yardstickProblem answers status with a problem body naming code, as the
// API's problems do (the bench classifies answers by status and code).
func yardstickProblem(c *fasthttp.RequestCtx, status int, code seckill.Code) {
	c.SetStatusCode(status)
	c.SetContentType("application/problem+json")
	c.Response.SetBodyString(fmt.Sprintf(`{"status":%d,"code":%q}`, status, code))
}
