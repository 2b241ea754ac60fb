package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/workflows"
)

// TestOrderSaga_ReplaysRecordedHistories replays histories recorded from
// real runs (see app/history_test.go; re-record with
// SECKILL_RECORD_HISTORIES=1 go test ./app -run
// 'TestSaga_PayFail|TestSaga_TemporalSteps|TestPayments_Every|TestStripe_PaidAsTheDeadline'). A change
// to the saga that would break running workflows fails here: guard it with
// workflow.GetVersion and keep the old histories.
func TestOrderSaga_ReplaysRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.OrderSaga, workflow.RegisterOptions{Name: seckill.OrderSagaWorkflow})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
