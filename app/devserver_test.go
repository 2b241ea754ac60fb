//go:build !slim

package app_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/saga"
)

// startChild runs this test binary as a child process with env added
// (TestMain turns it into the process env asks for), waits up to within
// for its line "READY <fields...>" and returns the child and the fields.
func startChild(t *testing.T, env []string, within time.Duration) (*exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") || strings.HasPrefix(sc.Text(), "ERROR ") {
				lines <- sc.Text()
				return
			}
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		require.True(t, strings.HasPrefix(line, "READY "), "child process: %q", line)
		return cmd, strings.Fields(line)[1:]
	case <-time.After(within):
		t.Fatalf("child process not ready after %s", within)
	}
	return nil, nil
}

// startDevServerChild runs `devserver --db-file` in a child process (see
// runDevServerChild) and returns it with its address.
func startDevServerChild(t *testing.T, dbFile string, port int) (*exec.Cmd, string) {
	t.Helper()
	cmd, fields := startChild(t, []string{helperEnv + "=" + dbFile, "SECKILL_DEV_TEMPORAL_PORT=" + strconv.Itoa(port)}, 60*time.Second)
	return cmd, fields[0]
}

// TestDevServer_DBFileSurvivesSIGKILL: `seckill devserver --db-file` keeps
// workflows and search attributes when killed with SIGKILL and restarted.
func TestDevServer_DBFileSurvivesSIGKILL(t *testing.T) {
	dbFile := filepath.Join(t.TempDir(), "temporal", "dev.db")
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	ctx := context.Background()

	child, addr := startDevServerChild(t, dbFile, port)
	c, err := sdkclient.Dial(sdkclient.Options{HostPort: addr, Logger: nopLogger{}})
	require.NoError(t, err)
	// A saga start with nobody to run it: it stays open across the restart.
	_, err = c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: "order-1", TaskQueue: "nobody"}, seckill.OrderSagaWorkflow, seckill.SagaInput{OrderID: 1})
	require.NoError(t, err)
	c.Close()
	require.NoError(t, child.Process.Kill()) // SIGKILL
	_ = child.Wait()

	_, addr = startDevServerChild(t, dbFile, port)
	c, err = sdkclient.Dial(sdkclient.Options{HostPort: addr, Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	desc, err := c.DescribeWorkflowExecution(cctx, "order-1", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
	attrs, err := c.OperatorService().ListSearchAttributes(cctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	for _, name := range saga.SearchAttributeNames {
		require.Contains(t, attrs.GetCustomAttributes(), name)
	}
}
