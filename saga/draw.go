package saga

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
)

// StartDraw starts the SaleDraw of a sale with a lobby (docs/API.md "Fair
// start") on the draw task queue, so its steps do not queue behind the
// sagas its admissions start. Idempotent by sale: a draw that is running
// or completed is success, and a completed draw is never run again. A
// draw an earlier release started on the sagas' queue is running, so it
// stays there, where the worker runs draws too. An error is ambiguous:
// retry with the same input.
func (c *Client) StartDraw(ctx context.Context, in seckill.DrawInput) error {
	// Only workers of this release poll the draws' queue.
	in.RanksWhenReached = true
	_, err := c.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        seckill.DrawWorkflowID(in.SaleID),
		TaskQueue: c.drawTaskQueue,
		// A completed draw never runs again; one that failed, was cancelled
		// or terminated (by an operator) is started afresh by the next
		// reconciliation pass, and goes on from the rank it recorded.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		TypedSearchAttributes: temporal.NewSearchAttributes(SaleIDAttr.ValueSet(strconv.FormatInt(in.SaleID, 10))),
	}, seckill.SaleDrawWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err == nil || errors.As(err, &started) {
		return nil
	}
	return fmt.Errorf("start the draw of sale %d: %w", in.SaleID, err)
}
