//go:build !slim

package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// TestRedisLoss_FailsClosedThenRewarmsFromPostgres wipes every Redis key of
// the system, as a Redis restarted without persistence would: claims get
// 503 until the worker re-warms the sale from Postgres (within 30 s), the
// buyers' active orders still count, and nothing is sold twice.
func TestRedisLoss_FailsClosedThenRewarmsFromPostgres(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(10, 600*time.Second)
	a := s.awaiting(sale, "anna")
	b := s.awaiting(sale, "bert")

	// Redis restarts empty.
	ctx := context.Background()
	keys, err := s.redis.Keys(ctx, s.cfg.RedisPrefix+":*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	require.NoError(t, s.redis.Del(ctx, keys...).Err())
	wiped := time.Now()

	r := s.claim(sale, "carl")
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	require.Equal(t, "UNAVAILABLE", r.json(t)["code"])
	require.NotEmpty(t, r.header.Get("Retry-After"))

	// Re-warmed within 30 s: carl is admitted, anna still holds her order.
	var carl string
	require.Eventually(t, func() bool {
		r := s.claim(sale, "carl")
		if r.status == http.StatusAccepted {
			carl = r.json(t)["order_id"].(string)
			return true
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "claims admitted again")
	t.Logf("claims admitted again %s after the wipe", time.Since(wiped).Round(time.Millisecond))
	// By then the API and the worker had each leased its id node again:
	// no process started since the wipe could share one while claims are
	// admitted.
	nodes, err := s.redis.Keys(ctx, s.cfg.RedisPrefix+":idnode:*").Result()
	require.NoError(t, err)
	require.Len(t, nodes, 2, "the API's and the worker's id nodes are leased again before claims are admitted")
	r = s.claim(sale, "anna")
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "ALREADY_CLAIMED", r.json(t)["code"])
	require.Equal(t, a.OrderID, r.json(t)["order_id"])

	s.waitOrder(carl, "carl", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, seckill.Stock{Total: 10, Remaining: 7, Available: 7, Locked: 3}, s.dbStock(sale))

	// The restored claims still drive compensation: bert cancels, his unit
	// returns once; anna pays.
	r = s.mustDo("POST", "/api/v1/orders/"+b.OrderID+"/cancel", s.token("bert", false), nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, http.StatusOK, s.webhook("evt_anna", seckill.PaymentSucceeded, a.OrderID, 990).status)
	s.waitOrder(a.OrderID, "anna", seckill.StatusPaid, 20*time.Second)
	s.waitOrder(b.OrderID, "bert", seckill.StatusClosed, 20*time.Second)
	require.Eventually(t, func() bool {
		return s.dbStock(sale) == seckill.Stock{Total: 10, Remaining: 8, Available: 8, Locked: 1, Sold: 1}
	}, 20*time.Second, 100*time.Millisecond)
	s.requireAudit(sale)
}
