package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
)

// Reconcile runs one reconciliation pass (package reconcile) and returns
// the drifts it found. The Schedule seckill-reconcile starts it every
// minute, skipping a run while the previous one is still going, so each
// pass and what it fixed is in the Temporal UI.
func Reconcile(ctx workflow.Context) ([]seckill.Drift, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 50 * time.Second,
		// The next scheduled pass retries anything left: no need to insist.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var drifts []seckill.Drift
	err := workflow.ExecuteActivity(ctx, seckill.ReconcileActivity).Get(ctx, &drifts)
	return drifts, err
}
