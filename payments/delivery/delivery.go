// Package delivery hands recorded payment events to their order's saga:
// the webhook does it when an event arrives, and reconciliation again for
// events that could not be delivered then.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/workflows"
)

// PendingWindow is how long after its admission an order may still have
// neither a row nor a saga (its claim is on its way through the outbox):
// a payment for it is kept undelivered, to be delivered later, rather than
// filed as for an unknown order.
const PendingWindow = 15 * time.Minute

// ErrNotYet means the order's saga cannot take the event now (not started
// yet, or lost and about to be restarted by reconciliation): the event
// stays recorded and undelivered, and is delivered again later.
var ErrNotYet = errors.New("the order's saga is not running yet")

// Deliverer delivers payment events.
type Deliverer struct {
	Store     *store.Store
	Temporal  client.Client
	TaskQueue string
	Log       *slog.Logger
}

// Deliver signals ev to the saga of orderID and records the outcome. A saga
// that has ended means the order is decided: a successful payment is then
// LATE (order CLOSED) or a DUPLICATE (order PAID) and is refunded by a
// PaymentRefund workflow of its own. It returns ErrNotYet when the order
// may still be on its way, and UNKNOWN_ORDER when it never existed.
func (d *Deliverer) Deliver(ctx context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error) {
	err := d.Temporal.SignalWorkflow(ctx, seckill.OrderWorkflowID(orderID), "", seckill.PaymentSignal, ev)
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return seckill.OutcomeDelivered, d.Store.MarkDelivered(ctx, ev.EventID)
	case !errors.As(err, &nf):
		return "", err
	}
	o, err := d.Store.Order(ctx, orderID)
	var outcome seckill.PaymentOutcome
	switch {
	case err == nil && o.Status == seckill.StatusClosed:
		outcome = seckill.OutcomeLate
	case err == nil && o.Status == seckill.StatusPaid:
		outcome = seckill.OutcomeDuplicate
	case err == nil:
		return "", ErrNotYet // unsettled, saga lost: reconciliation restarts it
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	case time.Since(idgen.Time(orderID)) < PendingWindow && idgen.Time(orderID).Before(time.Now().Add(time.Minute)):
		return "", ErrNotYet // admitted moments ago: the saga has not started
	default:
		outcome = seckill.OutcomeUnknownOrder
	}
	if ev.Type == seckill.PaymentFailed && outcome != seckill.OutcomeUnknownOrder {
		outcome = seckill.OutcomeIgnored // a failure for a decided order changes nothing
	}
	if ev.Type == seckill.PaymentSucceeded && (outcome == seckill.OutcomeLate || outcome == seckill.OutcomeDuplicate) {
		// The money was taken for an order that cannot be honoured: give it
		// back. The refund is a workflow of its own, one per event.
		in := seckill.RefundInput{
			EventID: ev.EventID, OrderID: orderID, SaleID: o.SaleID, UserID: o.UserID,
			PaymentIntentID: ev.PaymentIntentID, AmountCents: ev.AmountCents, Currency: ev.Currency, Reason: outcome,
		}
		_, err := d.Temporal.ExecuteWorkflow(ctx, workflows.RefundStartOptions(in, d.TaskQueue), seckill.RefundWorkflow, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if err != nil && !errors.As(err, &started) {
			return "", fmt.Errorf("start refund: %w", err)
		}
	}
	d.Log.Warn("payment event for an order whose saga has ended", "eventID", ev.EventID,
		"orderID", strconv.FormatInt(orderID, 10), "outcome", outcome)
	return outcome, d.Store.SetPaymentOutcome(ctx, ev.EventID, outcome, true)
}
