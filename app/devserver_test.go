package app_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// TestDevServer_DBFileKeepsStateAcrossRestarts: `seckill devserver
// --db-file` keeps workflows and search attributes when restarted.
func TestDevServer_DBFileKeepsStateAcrossRestarts(t *testing.T) {
	cfg, err := app.FromEnv(func(string) string { return "" })
	require.NoError(t, err)
	cfg.DevTemporalPort = freePort(t)
	dbFile := filepath.Join(t.TempDir(), "temporal", "dev.db")
	opts := app.DevOptions{DBFile: dbFile, NoUI: true, TemporalLogLevel: "fatal"}
	ctx := context.Background()

	ts, err := app.StartDevServer(cfg, opts)
	require.NoError(t, err)
	c, err := sdkclient.Dial(sdkclient.Options{HostPort: ts.Address(), Logger: nopLogger{}})
	require.NoError(t, err)
	// A saga start with nobody to run it: it stays open across the restart.
	_, err = c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: "order-1", TaskQueue: "nobody"}, seckill.OrderSagaWorkflow, seckill.SagaInput{OrderID: 1})
	require.NoError(t, err)
	c.Close()
	require.NoError(t, ts.Stop())

	ts, err = app.StartDevServer(cfg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Stop() })
	c, err = sdkclient.Dial(sdkclient.Options{HostPort: ts.Address(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	desc, err := c.DescribeWorkflowExecution(cctx, "order-1", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
	attrs, err := c.OperatorService().ListSearchAttributes(cctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	for _, name := range seckill.SearchAttributeNames {
		require.Contains(t, attrs.GetCustomAttributes(), name)
	}
}
