// Package delivery hands recorded payment events to their order's saga:
// the webhook does it when an event arrives, and reconciliation again for
// events that could not be delivered then.
package delivery

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/saga"
)

// PendingWindow is Deliverer.Hold's default (SECKILL_PAYMENT_HOLD): how
// long after its admission an order Redis no longer knows (it lost its
// keys) may still have neither a row nor a saga. A payment for it is kept
// undelivered, to be delivered later, rather than refunded as for an
// unknown order. An order Redis knows as admitted is waited for however
// long its saga takes to start.
//
// Once Redis has lost the admission, only a relay that had already read
// its outbox entry can still start its saga: the window must cover the
// relay's backlog (at SECKILL_RELAY_RATE 60/s, 15 minutes is 54,000
// admissions). A saga started after its payment was refunded this way
// finds the payment handled and its order unpaid (docs/OPERATIONS.md).
const PendingWindow = 15 * time.Minute

// Sagas is what delivery asks of Temporal (saga.Client).
type Sagas interface {
	// Pay signals the payment to the order's saga; saga.ErrNoSaga when
	// none is running.
	Pay(ctx context.Context, orderID int64, ev seckill.PaymentEvent) error
	// StartRefund starts the refund of a payment that cannot be honoured.
	StartRefund(ctx context.Context, in seckill.RefundInput) error
}

// Store is what delivery reads and writes in the database (store.Store).
type Store interface {
	Order(ctx context.Context, id int64) (*seckill.Order, error)
	PaymentEvent(ctx context.Context, id string) (*seckill.PaymentRecord, error)
	MarkDelivered(ctx context.Context, id string) error
	SetPaymentOutcome(ctx context.Context, id string, outcome seckill.PaymentOutcome, delivered bool) error
}

// Admissions is what delivery asks Redis (redisstore.Store): whether an
// order without a row is still admitted.
type Admissions interface {
	ActiveSales(ctx context.Context) ([]int64, error)
	Admission(ctx context.Context, orderID int64, saleIDs []int64) (a seckill.Admission, ok bool, err error)
}

// Deliverer delivers payment events.
type Deliverer struct {
	Store Store
	Redis Admissions
	Sagas Sagas
	Log   *slog.Logger
	// Hold is how long a payment for an order never written is held after
	// its admission [PendingWindow].
	Hold time.Duration
}

func (d *Deliverer) hold() time.Duration {
	if d.Hold > 0 {
		return d.Hold
	}
	return PendingWindow
}

// Deliver signals ev to the saga of orderID and records the outcome. A saga
// that has ended means the order is decided: a successful payment is then
// LATE (order CLOSED) or a DUPLICATE (order PAID by another payment) and
// is refunded by a PaymentRefund workflow of its own. It returns seckill.ErrPaymentNotYet
// when the order may still be on its way, and UNKNOWN_ORDER when it never
// existed or can no longer come (no row, no admission, admitted longer
// than Hold ago): a successful payment is refunded then too, as
// one for an order that can never be honoured (an event that names no
// order, or a number that is not a recent seckill order id, is not
// seckill's payment: it is kept for operators). A repeat of
// the payment that paid the order (same PaymentIntent) is APPLIED, and
// kept.
func (d *Deliverer) Deliver(ctx context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error) {
	err := d.Sagas.Pay(ctx, orderID, ev)
	switch {
	case err == nil:
		return seckill.OutcomeDelivered, d.Store.MarkDelivered(ctx, ev.EventID)
	case !errors.Is(err, saga.ErrNoSaga):
		return "", temporalError{err}
	}
	o, err := d.Store.Order(ctx, orderID)
	if err == nil && o.Status.Terminal() {
		// The saga may have taken this very event before it ended (it reads
		// the payments that came before it ran): what it decided is final,
		// written in the same transaction as the order's status.
		e, err := d.Store.PaymentEvent(ctx, ev.EventID)
		if err != nil {
			return "", err
		}
		if !e.Pending() {
			return e.Outcome, d.Store.MarkDelivered(ctx, ev.EventID)
		}
	}
	var outcome seckill.PaymentOutcome
	switch {
	case err == nil && o.Status == seckill.StatusPaid && ev.PaymentIntentID != "" && ev.PaymentIntentID == o.PaidWith:
		// The payment that paid the order, reported again.
		outcome = seckill.OutcomeApplied
	case err == nil && o.Status == seckill.StatusClosed:
		outcome = seckill.OutcomeLate
	case err == nil && o.Status == seckill.StatusPaid:
		outcome = seckill.OutcomeDuplicate
	case err == nil:
		return "", seckill.ErrPaymentNotYet // unsettled, saga lost: reconciliation restarts it
	case !errors.Is(err, seckill.ErrNotFound):
		return "", err
	default:
		// No row. An admission whose saga has not started yet (a backlog
		// of sagas, or moments ago) waits for it, its payment recorded:
		// the saga's first step reads it.
		waiting, err := d.admitted(ctx, orderID)
		if err != nil {
			return "", err
		}
		if waiting {
			return "", seckill.ErrPaymentNotYet
		}
		// Never written, and no admission left: it can never be honoured
		// (an admission lost in a failover after its buyer paid).
		outcome = seckill.OutcomeUnknownOrder
	}
	if ev.Type == seckill.PaymentFailed && outcome != seckill.OutcomeUnknownOrder {
		outcome = seckill.OutcomeIgnored // a failure for a decided order changes nothing
	}
	if ev.Type == seckill.PaymentSucceeded && outcome != seckill.OutcomeApplied && (o != nil || ours(orderID)) {
		// The money was taken for an order that cannot be honoured: give it
		// back, whether or not the order has a row. The refund is a
		// workflow of its own, one per event.
		in := seckill.RefundInput{
			EventID: ev.EventID, OrderID: orderID,
			PaymentIntentID: ev.PaymentIntentID, AmountCents: ev.AmountCents, Currency: ev.Currency, Reason: outcome,
		}
		if o != nil {
			in.SaleID, in.UserID = o.SaleID, o.UserID
		}
		if err := d.Sagas.StartRefund(ctx, in); err != nil {
			return "", temporalError{err}
		}
	}
	d.Log.Warn("payment event for an order whose saga has ended", "eventID", ev.EventID,
		"orderID", strconv.FormatInt(orderID, 10), "outcome", outcome)
	return outcome, d.Store.SetPaymentOutcome(ctx, ev.EventID, outcome, true)
}

// temporalError is an error of Temporal's: it is seckill.ErrTemporal
// too (the webhook counts those), with its own message.
type temporalError struct{ error }

func (e temporalError) Unwrap() []error { return []error{e.error, seckill.ErrTemporal} }

// OrdersAge is how old an order id may be and still be taken for one
// seckill minted, when no row of it exists: a sale's orders are admitted
// and paid within days (Stripe retries a webhook for three).
const OrdersAge = 30 * 24 * time.Hour

// ours reports whether orderID, which has no row, looks like an order id
// seckill minted (a snowflake of the last OrdersAge): a payment naming it
// is a buyer's, to refund if the order can never be honoured. Any other
// number in an event's metadata.order_id (another checkout on the same
// Stripe account) is not seckill's to refund: kept for operators.
func ours(orderID int64) bool {
	at := idgen.Time(orderID)
	return orderID > 0 && at.After(time.Now().Add(-OrdersAge)) && at.Before(time.Now().Add(time.Minute))
}

// admitted reports whether orderID may still get its saga: Redis holds its
// admission, or it was admitted within Hold (Redis may have lost
// its keys).
func (d *Deliverer) admitted(ctx context.Context, orderID int64) (bool, error) {
	at := idgen.Time(orderID)
	if time.Since(at) < d.hold() && at.Before(time.Now().Add(time.Minute)) {
		return true, nil
	}
	sales, err := d.Redis.ActiveSales(ctx)
	if err != nil {
		return false, err
	}
	_, ok, err := d.Redis.Admission(ctx, orderID, sales)
	return ok, err
}
