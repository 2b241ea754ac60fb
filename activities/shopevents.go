package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
)

// tellShop hands the shop's delivery the event of type typ for the order
// as it stands (when TellShop was set up). A step that changed an order
// calls it after the change, and the step is retried until it succeeds,
// so every transition is told at least once. An order with no row (a
// refund of a payment for an order never written) has nothing to tell.
func (a *Activities) tellShop(ctx context.Context, orderID int64, typ seckill.ShopEventType) error {
	if a.shop == nil {
		return nil
	}
	o, err := a.store.Order(ctx, orderID)
	if errors.Is(err, seckill.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read order %d for the shop: %w", orderID, err)
	}
	if typ == seckill.ShopOrderRefunded && (o.Refund == nil || o.Refund.Status != seckill.RefundSucceeded) {
		// Another refund of the order still runs: the last one to finish
		// tells, with the sum of them all SUCCEEDED (one webhook-id per
		// order and type).
		return nil
	}
	if err := a.shop.TellShop(ctx, seckill.NewShopEvent(o, typ, shopEventTime(o, typ))); err != nil {
		return fmt.Errorf("tell the shop of order %d: %w", orderID, err)
	}
	return nil
}

// tellShopState is tellShop for the event the order's state announces
// (none while QUEUED).
func (a *Activities) tellShopState(ctx context.Context, o *seckill.Order) error {
	if typ, ok := seckill.ShopEventOf(o); ok {
		return a.tellShop(ctx, o.ID, typ)
	}
	return nil
}

// shopEventTime is when the transition happened, as the order records it,
// so an event told twice carries one timestamp: an order is payable from
// its admission on.
func shopEventTime(o *seckill.Order, typ seckill.ShopEventType) time.Time {
	switch {
	case typ == seckill.ShopOrderPaid && o.PaidAt != nil:
		return *o.PaidAt
	case typ == seckill.ShopOrderClosed && o.ClosedAt != nil:
		return *o.ClosedAt
	case typ == seckill.ShopOrderAwaitingPayment:
		return o.CreatedAt
	}
	return time.Now()
}

// SendShopEvent posts one event to the shop; an error is retried by the
// ShopEvents workflow for days. It refuses (non-retryable, ShopEventHeld)
// to send an event of an order whose earlier event is kept undelivered,
// unless the event is a redelivery: the shop gets an order's events in
// order. A redelivery sent is no longer kept.
func (a *Activities) SendShopEvent(ctx context.Context, ev seckill.ShopEvent) error {
	if a.send == nil {
		return errors.New("SECKILL_EVENTS_URL is not set on this worker: order events cannot be sent")
	}
	if !ev.Redelivery {
		held, err := a.store.HoldsShopEvents(ctx, ev.OrderID)
		if err != nil {
			return err
		}
		if held {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("an earlier event of order %d is kept undelivered", ev.OrderID), seckill.ErrTypeShopEventHeld, nil)
		}
	}
	if err := a.send.Send(ctx, ev); err != nil {
		return err
	}
	if ev.Redelivery {
		// Sent again: no longer kept, so the order's later events flow.
		return a.store.ForgetKeptShopEvents(ctx, []string{ev.ID})
	}
	return nil
}

// KeepShopEvents keeps events whose delivery gave up, in order, for
// seckill events failed and redeliver.
func (a *Activities) KeepShopEvents(ctx context.Context, in seckill.KeepShopEventsInput) error {
	return a.store.KeepShopEvents(ctx, in.Events, in.Error)
}
