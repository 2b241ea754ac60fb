package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
)

// shopEventsIdle is how long a ShopEvents run waits for its order's next
// event once it has sent every one; the next event after that starts a
// new run (the same workflow ID), so runs stay short and few stay open.
const shopEventsIdle = 30 * time.Second

// ShopEvents sends one order's events to the shop (docs/API.md "Order
// events to the shop"), in the order its signals bring them, each retried
// with backoff for in.RetryFor (at least 3 days). The saga's steps signal
// it (with start) after each transition, so an event is told at least
// once; an id this run has sent already is not sent again.
//
// A delivery that gives up is kept in the database with every event queued
// behind it, in order (seckill events failed), and later events of the
// order are kept behind them (the send activity refuses to overtake a kept
// event), until an operator sends them again (seckill events redeliver),
// which signals them here marked as redeliveries.
func ShopEvents(ctx workflow.Context, in seckill.ShopEventsInput) error {
	retryFor := in.RetryFor
	if retryFor <= 0 {
		retryFor = seckill.DefaultShopEventRetryFor
	}
	sendCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: retryFor,
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        min(time.Hour, max(time.Second, retryFor/8)),
			NonRetryableErrorTypes: []string{seckill.ErrTypeShopEventHeld},
		},
	})
	// Keeping runs on a context of its own: an operator's "Request
	// Cancellation" of this workflow keeps what it had not sent, never
	// drops it.
	keepCtx, _ := workflow.NewDisconnectedContext(ctx)
	keepCtx = withActivityOptions(keepCtx)
	keep := func(events []seckill.ShopEvent, why string) error {
		workflow.GetLogger(ctx).Warn("order events not delivered; kept", "orderID", in.OrderID, "eventID", events[0].ID, "kept", len(events), "error", why)
		in := seckill.KeepShopEventsInput{Events: events, Error: why}
		return workflow.ExecuteActivity(keepCtx, a.KeepShopEvents, in).Get(keepCtx, nil)
	}
	events := workflow.GetSignalChannel(ctx, seckill.ShopEventSignal)
	sent := map[string]bool{}
	var queue []seckill.ShopEvent
	take := func() {
		var ev seckill.ShopEvent
		for events.ReceiveAsync(&ev) {
			queue = append(queue, ev)
			ev = seckill.ShopEvent{}
		}
	}
	for {
		take()
		if ctx.Err() != nil { // cancelled: keep what is left, in order
			if len(queue) > 0 {
				if err := keep(queue, "the delivery was cancelled"); err != nil {
					return err
				}
			}
			return ctx.Err()
		}
		if len(queue) == 0 {
			more, err := workflow.AwaitWithTimeout(ctx, shopEventsIdle, func() bool { return events.Len() > 0 })
			if err != nil {
				continue // cancelled: the check above keeps what came
			}
			if !more && events.Len() == 0 { // idle, and no signal came with the timer
				return nil
			}
			continue
		}
		ev := queue[0]
		queue = queue[1:]
		if sent[ev.ID] && !ev.Redelivery {
			continue
		}
		err := workflow.ExecuteActivity(sendCtx, a.SendShopEvent, ev).Get(ctx, nil)
		if err == nil {
			sent[ev.ID] = true
			continue
		}
		// Given up, held behind a kept event, or cancelled: keep it and
		// everything queued behind it, in order.
		take()
		kept := append([]seckill.ShopEvent{ev}, queue...)
		queue = nil
		if err := keep(kept, err.Error()); err != nil {
			return err
		}
	}
}
