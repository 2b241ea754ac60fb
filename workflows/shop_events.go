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
	d := newShopDelivery(ctx, in)
	for {
		d.take()
		if ctx.Err() != nil { // cancelled: keep what is left, in order
			if err := d.keepAll("the delivery was cancelled"); err != nil {
				return err
			}
			return ctx.Err()
		}
		if len(d.queue) == 0 {
			if !d.awaitMore() {
				return nil // idle
			}
			continue
		}
		ev := d.next()
		if d.sent[ev.ID] && !ev.Redelivery {
			continue
		}
		if err := d.send(ev); err != nil {
			// Given up, held behind a kept event, or cancelled: keep it and
			// everything queued behind it, in order.
			d.take()
			d.queue = append([]seckill.ShopEvent{ev}, d.queue...)
			if err := d.keepAll(err.Error()); err != nil {
				return err
			}
		}
	}
}

// shopDelivery is one ShopEvents run's state: the events signalled and
// not yet sent, in order, and the ids sent.
type shopDelivery struct {
	ctx     workflow.Context
	orderID int64
	// sendCtx retries a send for the run's RetryFor; keepCtx is
	// disconnected, so an operator's "Request Cancellation" of the run
	// keeps what it had not sent, never drops it.
	sendCtx, keepCtx workflow.Context
	events           workflow.ReceiveChannel
	queue            []seckill.ShopEvent
	sent             map[string]bool
}

func newShopDelivery(ctx workflow.Context, in seckill.ShopEventsInput) *shopDelivery {
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
	keepCtx, _ := workflow.NewDisconnectedContext(ctx)
	return &shopDelivery{ctx: ctx, orderID: in.OrderID, sendCtx: sendCtx, keepCtx: withActivityOptions(keepCtx),
		events: workflow.GetSignalChannel(ctx, seckill.ShopEventSignal), sent: map[string]bool{}}
}

// take queues every event signalled so far, in the order signalled.
func (d *shopDelivery) take() {
	var ev seckill.ShopEvent
	for d.events.ReceiveAsync(&ev) {
		d.queue = append(d.queue, ev)
		ev = seckill.ShopEvent{}
	}
}

// next takes the first queued event off the queue.
func (d *shopDelivery) next() seckill.ShopEvent {
	ev := d.queue[0]
	d.queue = d.queue[1:]
	return ev
}

// awaitMore waits up to shopEventsIdle for the next signal; false when
// the run is idle (no signal came, not even with the timer). A cancel
// ends the wait too: the loop's check keeps what came.
func (d *shopDelivery) awaitMore() bool {
	more, err := workflow.AwaitWithTimeout(d.ctx, shopEventsIdle, func() bool { return d.events.Len() > 0 })
	return err != nil || more || d.events.Len() > 0
}

// send delivers ev to the shop, retrying with backoff; once delivered its
// id is not sent again by this run.
func (d *shopDelivery) send(ev seckill.ShopEvent) error {
	if err := workflow.ExecuteActivity(d.sendCtx, a.SendShopEvent, ev).Get(d.ctx, nil); err != nil {
		return err
	}
	d.sent[ev.ID] = true
	return nil
}

// keepAll keeps every queued event in the database, in order, for an
// operator to send again, and empties the queue.
func (d *shopDelivery) keepAll(why string) error {
	if len(d.queue) == 0 {
		return nil
	}
	events := d.queue
	d.queue = nil
	workflow.GetLogger(d.ctx).Warn("order events not delivered; kept", "orderID", d.orderID, "eventID", events[0].ID, "kept", len(events), "error", why)
	in := seckill.KeepShopEventsInput{Events: events, Error: why}
	return workflow.ExecuteActivity(d.keepCtx, a.KeepShopEvents, in).Get(d.keepCtx, nil)
}
