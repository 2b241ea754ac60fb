package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
)

// PaymentRefund gives back one payment seckill could not honour (late,
// duplicate or not matching its order) when the order's saga has already
// ended: the webhook starts it with ID refund-<event id>, so each provider
// event is refunded once however often it is delivered. The refund itself
// is one activity, idempotent by event id, retried until done.
func PaymentRefund(ctx workflow.Context, in seckill.RefundInput) error {
	ctx = withActivityOptions(ctx)
	workflow.GetLogger(ctx).Info("refunding payment", "eventID", in.EventID, "orderID", in.OrderID, "reason", in.Reason)
	return workflow.ExecuteActivity(ctx, a.RefundPayment, in).Get(ctx, nil)
}
