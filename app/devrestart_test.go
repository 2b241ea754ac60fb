//go:build !slim

package app_test

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// devChildEnv makes the test binary run `seckill dev` (Temporal's state in
// PostgreSQL, no UI, no demo sale) with the configuration in its
// environment, printing READY <api url> <temporal address>.
const devChildEnv = "SECKILL_TEST_DEV_CHILD"

func runDevChild() {
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		panic(err)
	}
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err = app.Dev(context.Background(), cfg, app.DevOptions{NoUI: true, TemporalLogLevel: "fatal"}, func(info app.DevInfo) {
		w := bufio.NewWriter(os.Stdout)
		_, _ = w.WriteString("READY " + info.APIURL + " " + info.TemporalAddress + "\n")
		_ = w.Flush()
	})
	if err != nil {
		os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		os.Exit(1)
	}
}

// startDevChild starts `seckill dev` as a child process with env and
// returns it with its API URL and Temporal address.
func startDevChild(t *testing.T, env []string) (*exec.Cmd, string, string) {
	t.Helper()
	cmd, fields := startChild(t, append([]string{devChildEnv + "=1"}, env...), 120*time.Second)
	require.Len(t, fields, 2)
	return cmd, fields[0], fields[1]
}

// TestDev_PostgresStoreSurvivesSIGKILL kills `seckill dev` with SIGKILL
// while orders await payment and one is still queued, and starts it
// again on the same databases: the same workflow runs continue, and every
// order pays or times out exactly once.
func TestDev_PostgresStoreSurvivesSIGKILL(t *testing.T) {
	cfg := testConfig(t)
	history, visibility, err := store.TemporalDatabaseURLs(cfg.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = store.DropDatabase(context.Background(), history)
		_ = store.DropDatabase(context.Background(), visibility)
	})
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	httpPort, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	env := []string{
		"DATABASE_URL=" + cfg.DatabaseURL, "REDIS_URL=" + cfg.RedisURL, "SECKILL_REDIS_PREFIX=" + cfg.RedisPrefix,
		"SECKILL_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(httpPort), "SECKILL_DEV_TEMPORAL_PORT=" + strconv.Itoa(port),
		"TEMPORAL_NAMESPACE=" + cfg.Namespace, "SECKILL_RECONCILE_EVERY=2s", "SECKILL_RECONCILE_GRACE=5s",
	}
	child, apiURL, temporalAddr := startDevChild(t, env)

	st, err := store.Open(context.Background(), cfg.DatabaseURL, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ropts, err := redis.ParseURL(cfg.RedisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(ropts)
	t.Cleanup(func() { _ = rdb.Close() })
	s := &system{t: t, cfg: cfg, store: st, redis: rdb, rstore: redisstore.New(rdb, cfg.RedisPrefix),
		info: app.DevInfo{APIURL: apiURL}, http: checkedClient(t, 10*time.Second, nil)}

	// Long enough to pay after the restart (the restart takes seconds).
	sale := s.createSale(5, 45*time.Second)
	orders := map[string]string{} // user -> order id
	for _, user := range []string{"payer", "sleeper", "failer"} {
		r := s.claim(sale, user)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		orders[user] = r.json(t)["order_id"].(string)
	}
	for user, id := range orders {
		s.waitOrder(id, user, seckill.StatusAwaitingPayment, 30*time.Second)
	}
	// Admitted a moment before the kill: its saga may not have run yet.
	r := s.claim(sale, "late")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	orders["late"] = r.json(t)["order_id"].(string)
	runIDs := map[string]string{}
	tc, err := sdkclient.Dial(sdkclient.Options{HostPort: temporalAddr, Namespace: cfg.Namespace, Logger: nopLogger{}})
	require.NoError(t, err)
	for _, user := range []string{"payer", "sleeper", "failer"} {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), seckill.OrderWorkflowID(mustInt(t, orders[user])), "")
		require.NoError(t, err)
		runIDs[user] = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	tc.Close()

	require.NoError(t, child.Process.Kill()) // SIGKILL: no clean shutdown
	_ = child.Wait()
	_, apiURL, temporalAddr = startDevChild(t, env)
	s.info.APIURL = apiURL

	r = s.webhook("evt_after_restart", seckill.PaymentSucceeded, orders["payer"], 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = s.webhook("evt_failed_after_restart", seckill.PaymentFailed, orders["failer"], 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	s.waitOrder(orders["payer"], "payer", seckill.StatusPaid, 30*time.Second)
	o := s.waitOrder(orders["failer"], "failer", seckill.StatusClosed, 30*time.Second)
	require.Equal(t, seckill.ClosePaymentFailed, *o.CloseReason)
	o = s.waitOrder(orders["sleeper"], "sleeper", seckill.StatusClosed, 90*time.Second)
	require.Equal(t, seckill.ClosePaymentTimeout, *o.CloseReason)
	o = s.waitOrder(orders["late"], "late", seckill.StatusClosed, 90*time.Second)
	require.Equal(t, seckill.ClosePaymentTimeout, *o.CloseReason)

	// The runs from before the kill finished the orders: one run each.
	tc, err = sdkclient.Dial(sdkclient.Options{HostPort: temporalAddr, Namespace: cfg.Namespace, Logger: nopLogger{}})
	require.NoError(t, err)
	defer tc.Close()
	for _, user := range []string{"payer", "sleeper", "failer"} {
		id := seckill.OrderWorkflowID(mustInt(t, orders[user]))
		desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		require.Equal(t, runIDs[user], desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "%s: the same run continued", user)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
		runs, err := tc.WorkflowService().ListWorkflowExecutions(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: cfg.Namespace, Query: "WorkflowId = '" + id + "'",
		})
		require.NoError(t, err)
		require.Len(t, runs.GetExecutions(), 1, "%s: exactly one run", user)
	}
	s.temporal = tc
	s.requireAudit(sale)
}
