//go:build !slim

package app_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/store"
)

// oldOrderID mints an order id as if admitted age ago.
func oldOrderID(age time.Duration, seq int64) int64 {
	ms := time.Now().Add(-age).UnixMilli() - snowflake.Epoch
	return ms<<22 | 1023<<12 | seq
}

// TestReconcile_FixesWhatIsSafeOnSchedule breaks the three stores apart the
// ways faults do and lets the scheduled reconciliation put them back.
func TestReconcile_FixesWhatIsSafeOnSchedule(t *testing.T) {
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.ReconcileEvery = 2 * time.Second
		c.ReconcileGrace = time.Second
	}})
	ctx := context.Background()
	sale := s.createSale(10, 600*time.Second)
	saleID := mustInt(t, sale)
	keys := s.rstore.SaleKeys(saleID)

	// The schedule is there for operators to see (the worker creates it as
	// it starts, beside the API that answered ready).
	require.Eventually(t, func() bool {
		desc, err := s.temporal.ScheduleClient().GetHandle(ctx, seckill.ReconcileScheduleID).Describe(ctx)
		return err == nil && desc != nil
	}, 20*time.Second, 100*time.Millisecond, "the reconcile schedule exists")

	// Redis above the database (impossible in normal operation): lowered.
	require.NoError(t, s.redis.IncrBy(ctx, keys.Stock, 3).Err())
	require.Eventually(t, func() bool { return s.dbStock(sale).Remaining == 10 }, 20*time.Second, 100*time.Millisecond,
		"Redis lowered back to the database")

	// A claim admitted whose outbox entry was lost: it gets its saga.
	lost := oldOrderID(10*time.Second, 1)
	// (A claim and the units it holds are written together, as claim.lua does.)
	require.NoError(t, s.redis.HSet(ctx, keys.Claims, "lost", lost).Err())
	require.NoError(t, s.redis.HIncrBy(ctx, keys.Units, seckill.DefaultSKU, 1).Err())
	require.NoError(t, s.redis.Decr(ctx, keys.Stock).Err())

	// An order whose saga Temporal lost: its saga is started again and
	// resumes it.
	orphan := oldOrderID(10*time.Second, 2)
	_, _, err := s.store.StartOrder(ctx, store.NewOrder{ID: orphan, SaleID: saleID, UserID: "orphan", CreatedAt: time.Now(),
		PayBy: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, s.redis.HSet(ctx, keys.Claims, "orphan", orphan).Err())
	require.NoError(t, s.redis.HIncrBy(ctx, keys.Units, seckill.DefaultSKU, 1).Err())
	require.NoError(t, s.redis.Decr(ctx, keys.Stock).Err())

	s.waitOrder(itoa(lost), "lost", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Eventually(t, func() bool {
		d, err := s.temporal.DescribeWorkflowExecution(ctx, seckill.OrderWorkflowID(orphan), "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() == nil
	}, 30*time.Second, 100*time.Millisecond, "the orphan's saga runs again")

	// The resumed sagas work: one pays, the other is cancelled.
	require.Equal(t, 200, s.webhook("evt_orphan", seckill.PaymentSucceeded, itoa(orphan), 990).status)
	s.waitOrder(itoa(orphan), "orphan", seckill.StatusPaid, 20*time.Second)
	r := s.mustDo("POST", "/api/v1/orders/"+itoa(lost)+"/cancel", s.token("lost", false), nil)
	require.Equal(t, 202, r.status, "%s", r.body)
	s.waitOrder(itoa(lost), "lost", seckill.StatusClosed, 20*time.Second)

	// A claim that outlived its CLOSED order, its unit never returned
	// (a release lost to a re-warm from an older snapshot): released.
	require.NoError(t, s.redis.HSet(ctx, keys.Claims, "lost", lost).Err())
	require.NoError(t, s.redis.HIncrBy(ctx, keys.Units, seckill.DefaultSKU, 1).Err())
	require.NoError(t, s.redis.Decr(ctx, keys.Stock).Err())
	// An active order whose claim Redis lost (with its units): written back.
	missing := s.awaiting(sale, "missing")
	require.NoError(t, s.redis.HDel(ctx, keys.Claims, "missing").Err())
	require.NoError(t, s.redis.HIncrBy(ctx, keys.Units, seckill.DefaultSKU, -1).Err())
	require.Eventually(t, func() bool {
		claims, err := s.rstore.Claims(ctx, saleID)
		st := s.dbStock(sale)
		_, stale := claims["lost"]
		return err == nil && !stale && claims["missing"] == mustInt(t, missing.OrderID) && st.Remaining == st.Available
	}, 30*time.Second, 100*time.Millisecond, "stale claim released, missing claim restored")
	r = s.claim(sale, "missing")
	require.Equal(t, 409, r.status)
	require.Equal(t, "ALREADY_CLAIMED", r.json(t)["code"])

	// Every drift was counted.
	metrics := string(s.mustDo("GET", "/metrics", "", nil).body)
	for _, kind := range []string{seckill.DriftRedisAboveDB, seckill.DriftClaimWithoutSaga, seckill.DriftOrderWithoutSaga,
		seckill.DriftStaleClaim, seckill.DriftClaimMissing} {
		require.True(t, strings.Contains(metrics, `seckill_reconcile_drift_total{fixed="true",kind="`+kind+`"}`), "metric for %s", kind)
	}
	s.requireAudit(sale)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
