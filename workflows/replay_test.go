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

// replay replays one recorded history against today's OrderSaga.
func replay(t *testing.T, file string) error {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.OrderSaga, workflow.RegisterOptions{Name: seckill.OrderSagaWorkflow})
	return r.ReplayWorkflowHistoryFromJSONFile(nil, file)
}

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
			require.NoError(t, replay(t, f))
		})
	}
}

// The saga of releases before payable-at-admission is retired: a run of it
// replayed today stops at the version check with Temporal's own error,
// naming the change, never with a wrong command or a stranded order
// mid-way (testdata/retired holds its recorded histories).
func TestOrderSaga_RetiredRunsFailWithTheVersionError(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "retired", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no retired histories in testdata/retired")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			err := replay(t, f)
			require.Error(t, err)
			require.Contains(t, err.Error(), `[TMPRL1100] Workflow code removed support of version -1. for "payable-at-admission" changeID. The oldest supported version is 1`)
		})
	}
}
