// Package workflows holds seckill's Temporal workflows. No I/O and no
// clocks here: only workflow.* APIs, so every history replays.
package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/saga"
)

// OrderSaga is the life of one admitted claim, as a saga. The buyer may
// pay from the 202 on, until the pay_by fixed at admission; the saga
// settles the order by then, however late it starts:
//
//  1. start the order, one transaction: write the order row with its
//     pay_by and lock one unit in the database (conditional UPDATE, never
//     below zero). Refused -> CLOSED with SOLD_OUT, the claim forgotten
//     and no unit returned to Redis (the database never had it). The same
//     step hands back the payments that arrived before the saga ran.
//  2. wait for a payment received by pay_by, a failed payment or a cancel,
//     until pay_by (plus DeliveryGrace, for payments still on their way).
//  3. settle: paid -> confirm (locked-1, sold+1, PAID, in one
//     transaction); failed, cancelled or timed out -> release: close the
//     order and give its unit back in the database, then forget the claim
//     and give the unit back in Redis.
//
// The short database and Redis steps are local activities: each runs in
// the workflow task that asks for it and costs one history event, so a
// paid or timed-out order costs two workflow tasks (BENCHMARKS.md has the
// counts). Every step is idempotent by order id, and the first one reads
// the order as it stands, so a second run of the same order (after a run
// failed or was terminated) resumes instead of doing anything twice.
//
// Nothing interrupts a step. The steps run on a disconnected context: an
// operator's "Request Cancellation" is one more way for the wait to end
// (the order closes as CANCELLED) and never cuts a confirm, a release or a
// refund short; once the outcome is decided the saga settles it to the
// end. Impossible transitions (confirming a closed order, closing a paid
// one) come back as typed errors and settle the order as it stands.
//
// A payment counts when seckill received it by pay_by, whenever the saga
// gets to it: no buyer loses payment time to a backlog of sagas, and none
// gains any. Payment signals that arrive after the decision are drained
// before the workflow returns and refunded as DUPLICATE or LATE.
func OrderSaga(ctx workflow.Context, in seckill.SagaInput) (seckill.SagaResult, error) {
	status := seckill.StatusQueued
	if err := workflow.SetQueryHandler(ctx, seckill.StatusQuery, func() (seckill.OrderStatus, error) {
		return status, nil
	}); err != nil {
		return seckill.SagaResult{}, err
	}
	// Runs started before localActivitiesChange are no longer supported:
	// their replay stops here with Temporal's TMPRL1100 error.
	workflow.GetVersion(ctx, localActivitiesChange, 1, 1)
	s := &orderSaga{
		in:       in,
		status:   &status,
		payments: workflow.GetSignalChannel(ctx, seckill.PaymentSignal),
		cancels:  workflow.GetSignalChannel(ctx, seckill.CancelSignal),
		seen:     map[string]bool{},
		log:      log.With(workflow.GetLogger(ctx), "orderID", in.OrderID, "saleID", in.SaleID, "userID", in.UserID),
	}
	return s.run(ctx)
}

// localActivitiesChange is the workflow.GetVersion change id of the saga
// above: payable at admission, local activities, a settle phase on a
// disconnected context. Its DefaultVersion, the saga of releases before
// it, is retired (docs/OPERATIONS.md, "Upgrading": `seckill sagas versions` shows
// whether any run of it is still open); its minimum supported version is
// 1. The call stays, so every run records the version it started on and a
// retired run fails clearly.
const localActivitiesChange = seckill.SagaBaseChange

// DeliveryGrace is how long past pay_by the saga still waits, for payment
// events received by pay_by whose signal is still on its way. A payment
// received after pay_by never counts, however early the saga sees it.
const DeliveryGrace = 2 * time.Second

// a is only used for its method names; the worker registers the real one.
var a *activities.Activities

// Timeouts and retries of the saga's activities. No attempt limit: a step
// that cannot finish must be fixed and will then finish; giving up half way
// would leave stock or a claim behind.
const (
	activityTimeout = 10 * time.Second
	maxRetryDelay   = 10 * time.Second
	untilDone       = 10 * 365 * 24 * time.Hour
)

var retryPolicy = &temporal.RetryPolicy{
	InitialInterval:    100 * time.Millisecond,
	BackoffCoefficient: 2,
	MaximumInterval:    maxRetryDelay,
	NonRetryableErrorTypes: []string{seckill.ErrTypeSoldOut, seckill.ErrTypeSaleNotFound,
		seckill.ErrTypeOrderClosed, seckill.ErrTypeOrderPaid, seckill.ErrTypePaidInTime},
}

func withActivityOptions(ctx workflow.Context) workflow.Context {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Retried past any outage: a refund given up is money kept.
		ScheduleToCloseTimeout: untilDone,
		StartToCloseTimeout:    activityTimeout,
		RetryPolicy:            retryPolicy,
	})
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// A local activity's retries stop at its schedule-to-close timeout,
		// which defaults to one attempt's: set it past any outage.
		ScheduleToCloseTimeout: untilDone,
		StartToCloseTimeout:    activityTimeout,
		RetryPolicy:            retryPolicy,
	})
}

type orderSaga struct {
	in       seckill.SagaInput
	status   *seckill.OrderStatus // what the status query answers
	order    seckill.StartOrderResult
	payments workflow.ReceiveChannel
	cancels  workflow.ReceiveChannel
	// backlog holds the payments that came before the saga ran and were
	// not looked at before the decision; finish handles them.
	backlog []seckill.PaymentEvent
	seen    map[string]bool // payment event ids already handled
	// intent is the order's payment object at the provider (Stripe's
	// PaymentIntent id); "" when the provider makes none (dev).
	intent string
	// paidWith is the PaymentIntent of the payment that made the order
	// PAID: another event of it is the same payment, not a second one.
	paidWith string
	// refunds are the refunds started and not yet known done: the wait
	// for payment goes on while they run, and finish waits for them.
	refunds []workflow.Future
	// settleVersion is the saga's settleChange version, once asked.
	settleVersion *workflow.Version
	log           log.Logger
}

// settleChange is the workflow.GetVersion change id of three changes made
// together (version 1): a refund started while the saga waits for payment
// runs beside the wait instead of holding the deadline until it is done;
// a PaymentIntent found succeeded at the deadline is waited on for at
// most seckill.OwnPaymentWait before the order is paid from the provider's
// answer; another event of the payment that paid the order is recorded
// APPLIED, not refunded as a duplicate.
const settleChange = "settle-from-recorded-payments"

// changed reports whether the saga runs with settleChange.
func (s *orderSaga) changed(ctx workflow.Context) bool {
	if s.settleVersion == nil {
		v := workflow.GetVersion(ctx, settleChange, workflow.DefaultVersion, 1)
		s.settleVersion = &v
	}
	return *s.settleVersion >= 1
}

// decision is how the wait for payment ended.
type decision struct {
	paid    *seckill.PaymentEvent
	closeAs seckill.CloseReason
	event   string // the failed payment that decided, if any
	// intentDone: the payment object needs no cancelling (the order was
	// closed by someone else after its payment was taken).
	intentDone bool
}

func (s *orderSaga) run(ctx workflow.Context) (seckill.SagaResult, error) {
	// An operator's cancel ends the wait; nothing else looks at it.
	cancelled := ctx.Done()
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	ctx = withActivityOptions(ctx)

	if err := workflow.ExecuteLocalActivity(ctx, a.StartOrder, seckill.StartOrderInput{
		OrderID: s.in.OrderID, SaleID: s.in.SaleID, UserID: s.in.UserID, AdmittedAt: s.in.AdmittedAt, PayBy: s.in.PayBy,
		Drawn: s.in.Drawn, Item: s.in.Item,
	}).Get(ctx, &s.order); err != nil {
		return seckill.SagaResult{}, err
	}
	// Events an earlier attempt already acted on (this workflow task
	// retried after a signal came in, or an earlier run) are done: a signal
	// carrying one again is not a second payment.
	for _, id := range s.order.Handled {
		s.seen[id] = true
	}
	s.paidWith = s.order.PaidWith
	if s.order.Status.Terminal() {
		// Payments still pending for a decided order: finish refunds them.
		s.backlog = s.order.Payments
	}
	switch s.order.Status {
	case seckill.StatusPaid:
		return s.finish(ctx, seckill.StatusPaid, "")
	case seckill.StatusClosed:
		// Refused by the database (SOLD_OUT: only the units it had go back,
		// GiveBack), refused as a second active order, or closed by an
		// earlier run: make sure the Redis half is done too.
		if err := s.releaseClaim(ctx, s.order.CloseReason != seckill.CloseSoldOut); err != nil {
			return seckill.SagaResult{}, err
		}
		return s.finish(ctx, seckill.StatusClosed, s.order.CloseReason)
	}

	if s.order.Intents {
		// The provider's checkout needs the order's payment object: make
		// it now (the buyer may have asked for it already; one key, one
		// object).
		// Tried until pay_by at most: a provider that keeps failing must
		// not keep the order from its deadline. Without its payment object
		// the buyer could not pay through the provider, and the order
		// closes at pay_by like any unpaid one.
		var in seckill.Intent
		mctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: max(s.order.PayBy.Sub(workflow.Now(ctx)), activityTimeout),
			StartToCloseTimeout:    activityTimeout,
			RetryPolicy:            retryPolicy,
		})
		if err := workflow.ExecuteLocalActivity(mctx, a.MakePaymentIntent, seckill.IntentInput{
			OrderID: s.in.OrderID, AmountCents: s.order.AmountCents, Currency: s.order.Currency,
		}).Get(ctx, &in); err != nil {
			s.log.Error("the payment intent could not be made by pay_by: the order closes at its deadline", "error", err)
		} else {
			s.intent = in.ID
			s.log.Info("payment intent ready", "provider", in.Provider, "paymentIntentID", in.ID)
		}
	}

	var d *decision
	for i, ev := range s.order.Payments {
		if d = s.onPayment(ctx, ev); d != nil {
			s.backlog = s.order.Payments[i+1:]
			break
		}
	}
	if d == nil {
		if err := s.setStatus(ctx, seckill.StatusAwaitingPayment); err != nil {
			return seckill.SagaResult{}, err
		}
		s.log.Info("order awaiting payment", "amountCents", s.order.AmountCents, "currency", s.order.Currency, "payBy", s.order.PayBy)
		d = s.awaitPayment(ctx, cancelled)
	}
	if d.paid != nil {
		return s.confirm(ctx, *d)
	}
	return s.release(ctx, *d)
}

// awaitPayment waits for the first deciding event: a matching payment
// received by pay_by, a failed payment, a cancel (the buyer's, or the
// operator's cancellation of the workflow) or the deadline.
func (s *orderSaga) awaitPayment(ctx workflow.Context, cancelled workflow.Channel) *decision {
	// The timer is not cancelled when something else decides: a workflow
	// that completes drops its timers, and a cancel would cost an event.
	timer := workflow.NewTimer(ctx, max(0, s.order.PayBy.Add(DeliveryGrace).Sub(workflow.Now(ctx))))
	var d *decision
	for d == nil {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(s.payments, func(c workflow.ReceiveChannel, _ bool) {
			var ev seckill.PaymentEvent
			c.Receive(ctx, &ev)
			d = s.onPayment(ctx, ev)
		})
		sel.AddReceive(s.cancels, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			d = s.cancel(ctx)
		})
		sel.AddReceive(cancelled, func(workflow.ReceiveChannel, bool) {
			s.log.Info("workflow cancellation requested: closing the order as cancelled")
			d = s.cancel(ctx)
		})
		sel.AddFuture(timer, func(workflow.Future) {
			// Payments that arrived in this same task are judged by when
			// they were received, like any other.
			for d == nil {
				var ev seckill.PaymentEvent
				if !s.payments.ReceiveAsync(&ev) {
					break
				}
				d = s.onPayment(ctx, ev)
			}
			if d == nil {
				d = &decision{closeAs: seckill.ClosePaymentTimeout}
			}
		})
		sel.Select(ctx)
	}
	return d
}

// cancel is the decision of a cancel request: CANCELLED while the buyer
// may still pay, PAYMENT_TIMEOUT once pay_by has passed.
func (s *orderSaga) cancel(ctx workflow.Context) *decision {
	if workflow.Now(ctx).After(s.order.PayBy) {
		return &decision{closeAs: seckill.ClosePaymentTimeout}
	}
	return &decision{closeAs: seckill.CloseCancelled}
}

// onPayment returns the decision ev makes, or nil when the saga keeps
// waiting (a repeated event, a payment that does not match the order, or
// one received after pay_by, which is refunded).
func (s *orderSaga) onPayment(ctx workflow.Context, ev seckill.PaymentEvent) *decision {
	if s.seen[ev.EventID] {
		return nil
	}
	s.seen[ev.EventID] = true
	inTime := ev.InTime(s.order.PayBy)
	if ev.Type == seckill.PaymentSucceeded && s.intent != "" && ev.PaymentIntentID == s.intent {
		// The order's own payment object took it: it could only do so
		// before the saga cancelled it, so the buyer paid in time by the
		// provider's clock, whenever its event arrives.
		inTime = true
	}
	switch ev.Type {
	case seckill.PaymentFailed:
		if !inTime {
			s.recordOutcome(ctx, ev.EventID, seckill.OutcomeLate)
			return nil
		}
		return &decision{closeAs: seckill.ClosePaymentFailed, event: ev.EventID}
	case seckill.PaymentSucceeded:
		switch {
		case ev.AmountCents != s.order.AmountCents || ev.Currency != s.order.Currency:
			s.log.Warn("payment does not match the order", "eventID", ev.EventID,
				"amountCents", ev.AmountCents, "currency", ev.Currency)
			s.refund(ctx, ev, seckill.OutcomeMismatch)
			return nil
		case !inTime:
			s.log.Warn("payment received after pay_by", "eventID", ev.EventID, "receivedAt", ev.ReceivedAt)
			s.refund(ctx, ev, seckill.OutcomeLate)
			return nil
		}
		return &decision{paid: &ev}
	}
	s.recordOutcome(ctx, ev.EventID, seckill.OutcomeIgnored)
	return nil
}

// confirm makes the order PAID. An order that was closed meanwhile (not
// by this saga: an operator, say) cannot be paid: the payment is refunded
// and the order settles as closed.
func (s *orderSaga) confirm(ctx workflow.Context, d decision) (seckill.SagaResult, error) {
	err := workflow.ExecuteLocalActivity(ctx, a.ConfirmPayment, seckill.ConfirmPaymentInput{
		OrderID: s.in.OrderID, EventID: d.paid.EventID, PaymentIntentID: d.paid.PaymentIntentID, PaidAt: workflow.Now(ctx).UTC(),
	}).Get(ctx, nil)
	if isErrorType(err, seckill.ErrTypeOrderClosed) {
		s.log.Warn("payment for an order closed meanwhile: refunding it", "eventID", d.paid.EventID)
		s.refund(ctx, *d.paid, seckill.OutcomeLate)
		return s.release(ctx, decision{closeAs: seckill.ClosePaymentTimeout, intentDone: true})
	}
	if err != nil {
		return seckill.SagaResult{}, err
	}
	s.paidWith = d.paid.PaymentIntentID
	return s.finish(ctx, seckill.StatusPaid, "")
}

// release undoes the order in reverse, in one local activity: database
// first (close the order, release its unit), then Redis (forget the
// claim, return the unit). An order paid meanwhile stays paid, and one
// with a payment recorded in time (its signal late or lost: the close
// reads the order's payments in its transaction) is paid with it. With a
// payment object at the provider, it is cancelled first, so no payment
// can be taken for a unit given back; one that had taken the payment
// already makes the order PAID instead.
func (s *orderSaga) release(ctx workflow.Context, d decision) (seckill.SagaResult, error) {
	if s.intent != "" && !d.intentDone {
		var in seckill.Intent
		if err := workflow.ExecuteLocalActivity(ctx, a.CancelPaymentIntent, seckill.IntentInput{
			OrderID: s.in.OrderID, IntentID: s.intent,
		}).Get(ctx, &in); err != nil {
			return seckill.SagaResult{}, err
		}
		if in.Status == seckill.IntentSucceeded {
			s.log.Info("the payment intent had taken the payment before it could be cancelled: the buyer paid in time, the order is PAID",
				"paymentIntentID", s.intent, "closeAs", d.closeAs)
			ev := s.awaitOwnPayment(ctx, in)
			return s.confirm(ctx, decision{paid: &ev})
		}
		s.log.Info("payment intent cancelled before the unit is given back", "paymentIntentID", s.intent, "closeAs", d.closeAs)
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"reason": string(d.closeAs)}).
		Counter(seckill.MetricSagaCompensations).Inc(1)
	var reason seckill.CloseReason
	err := workflow.ExecuteLocalActivity(ctx, a.ReleaseOrder, seckill.ReleaseOrderInput{
		OrderID: s.in.OrderID, SaleID: s.in.SaleID, UserID: s.in.UserID, Item: s.item(),
		Reason: d.closeAs, ClosedAt: workflow.Now(ctx).UTC(), EventID: d.event, IntentID: s.intent,
	}).Get(ctx, &reason)
	if isErrorType(err, seckill.ErrTypeOrderPaid) {
		s.log.Warn("order paid meanwhile: nothing to release", "closeAs", d.closeAs)
		var paidWith string
		if details(err, &paidWith) {
			s.paidWith = paidWith
		}
		return s.finish(ctx, seckill.StatusPaid, "")
	}
	if ev, ok := paidInTime(err); ok {
		// Received by pay_by, signalled late (or not at all): it counts.
		s.log.Info("a payment recorded in time was found as the order closed: the order is PAID", "eventID", ev.EventID, "closeAs", d.closeAs)
		s.seen[ev.EventID] = true
		return s.confirm(ctx, decision{paid: &ev})
	}
	if err != nil {
		return seckill.SagaResult{}, err
	}
	return s.finish(ctx, seckill.StatusClosed, reason)
}

// awaitOwnPayment waits for the provider's event of the payment the
// order's own payment object took (the provider sends it, and retries),
// handling any other payment that comes first as usual. paid is the
// provider's answer (amount and currency taken): if no event comes within
// seckill.OwnPaymentWait, the order is paid from it, and the event, when it
// comes, finds the order PAID by its PaymentIntent.
func (s *orderSaga) awaitOwnPayment(ctx workflow.Context, paid seckill.Intent) seckill.PaymentEvent {
	var timer workflow.Future
	if s.changed(ctx) {
		timer = workflow.NewTimer(ctx, seckill.OwnPaymentWait)
	}
	for {
		var ev seckill.PaymentEvent
		timedOut := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(s.payments, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &ev) })
		if timer != nil {
			sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		}
		sel.Select(ctx)
		if timedOut {
			s.log.Warn("no event came for the payment the order's PaymentIntent took: paying the order from the provider's answer",
				"paymentIntentID", s.intent, "waited", seckill.OwnPaymentWait)
			return seckill.PaymentEvent{EventID: "intent:" + s.intent, Type: seckill.PaymentSucceeded, PaymentIntentID: s.intent,
				AmountCents: paid.AmountCents, Currency: paid.Currency, ReceivedAt: workflow.Now(ctx).UTC()}
		}
		d := s.onPayment(ctx, ev)
		switch {
		case d != nil && d.paid != nil:
			return *d.paid
		case d != nil && d.event != "":
			// A failure reported after the payment succeeded changes nothing.
			s.recordOutcome(ctx, d.event, seckill.OutcomeIgnored)
		}
	}
}

func (s *orderSaga) releaseClaim(ctx workflow.Context, returnUnit bool) error {
	return workflow.ExecuteLocalActivity(ctx, a.ReleaseClaim, seckill.ReleaseClaimInput{
		SaleID: s.in.SaleID, OrderID: s.in.OrderID, UserID: s.in.UserID, Item: s.item(), ReturnUnit: returnUnit,
		GiveBack: s.order.GiveBack,
	}).Get(ctx, nil)
}

// item is the order's item as its row says (StartOrder's result), else as
// the saga's input says: a result recorded before v4 has none, and the
// order was then one unit of "default", which the zero Item means.
func (s *orderSaga) item() seckill.Item {
	if s.order.Item != (seckill.Item{}) {
		return s.order.Item
	}
	return s.in.Item
}

// finish records the terminal status (and close reason) in one upsert,
// and handles every payment that can no longer decide anything, so none
// is lost unrecorded: a successful one is refunded.
func (s *orderSaga) finish(ctx workflow.Context, status seckill.OrderStatus, reason seckill.CloseReason) (seckill.SagaResult, error) {
	*s.status = status
	attrs := []temporal.SearchAttributeUpdate{saga.OrderStatusAttr.ValueSet(string(status))}
	if status == seckill.StatusClosed {
		attrs = append(attrs, saga.CloseReasonAttr.ValueSet(string(reason)))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
		return seckill.SagaResult{}, err
	}
	outcome := seckill.OutcomeDuplicate
	if status == seckill.StatusClosed {
		outcome = seckill.OutcomeLate
	}
	settle := func(ev seckill.PaymentEvent) {
		if s.seen[ev.EventID] {
			return
		}
		s.seen[ev.EventID] = true
		if status == seckill.StatusPaid && ev.Type == seckill.PaymentSucceeded && ev.PaymentIntentID != "" &&
			ev.PaymentIntentID == s.paidWith && s.changed(ctx) {
			// The payment that paid the order, reported again.
			s.recordOutcome(ctx, ev.EventID, seckill.OutcomeApplied)
			return
		}
		s.log.Warn("payment after the order was decided", "eventID", ev.EventID, "outcome", outcome)
		if ev.Type == seckill.PaymentSucceeded {
			s.refund(ctx, ev, outcome)
		} else {
			s.recordOutcome(ctx, ev.EventID, outcome)
		}
	}
	for _, ev := range s.backlog {
		settle(ev)
	}
	// Every payment that came is handled, and every refund started is done,
	// before the saga ends: a payment that comes while a refund runs is
	// handled too, never left unread.
	for {
		for {
			var ev seckill.PaymentEvent
			if !s.payments.ReceiveAsync(&ev) {
				break
			}
			settle(ev)
		}
		if len(s.refunds) == 0 {
			break
		}
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(s.refunds[0], func(f workflow.Future) {
			if err := f.Get(ctx, nil); err != nil {
				s.log.Error("refund payment", "error", err)
			}
			s.refunds = s.refunds[1:]
		})
		sel.AddReceive(s.payments, func(workflow.ReceiveChannel, bool) {}) // handled at the top
		sel.Select(ctx)
	}
	// Cancel requests after the decision have nothing left to cancel.
	for s.cancels.ReceiveAsync(nil) {
	}
	s.log.Info("order settled", "status", status, "closeReason", reason)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"status": string(status), "reason": string(reason)}).
		Counter(seckill.MetricSagaOutcomes).Inc(1)
	return seckill.SagaResult{Status: status, CloseReason: reason}, nil
}

func (s *orderSaga) setStatus(ctx workflow.Context, status seckill.OrderStatus) error {
	*s.status = status
	return workflow.UpsertTypedSearchAttributes(ctx, saga.OrderStatusAttr.ValueSet(string(status)))
}

// refund gives back a successful payment that was not applied, and
// records why (outcome), in one activity retried until done: a payment
// taken must end as a PAID order or a refund (docs/DESIGN.md invariant 5).
// It is a regular activity: it calls the payment provider. It runs beside
// the saga's other steps (finish waits for it): a provider that keeps
// refusing must not hold the deadline or the decision with it.
func (s *orderSaga) refund(ctx workflow.Context, ev seckill.PaymentEvent, outcome seckill.PaymentOutcome) {
	f := workflow.ExecuteActivity(ctx, a.RefundPayment, seckill.RefundInput{
		EventID: ev.EventID, OrderID: s.in.OrderID, SaleID: s.in.SaleID, UserID: s.in.UserID,
		PaymentIntentID: ev.PaymentIntentID, AmountCents: ev.AmountCents, Currency: ev.Currency, Reason: outcome,
	})
	if s.changed(ctx) {
		s.refunds = append(s.refunds, f)
		return
	}
	if err := f.Get(ctx, nil); err != nil {
		s.log.Error("refund payment", "eventID", ev.EventID, "error", err)
	}
}

// recordOutcome stores what a payment event did. It is bookkeeping for
// operators: its failure is logged, never allowed to undo the order.
func (s *orderSaga) recordOutcome(ctx workflow.Context, eventID string, outcome seckill.PaymentOutcome) {
	err := workflow.ExecuteLocalActivity(ctx, a.RecordPaymentOutcome, seckill.PaymentOutcomeInput{EventID: eventID, Outcome: outcome}).Get(ctx, nil)
	if err != nil {
		s.log.Error("record payment outcome", "eventID", eventID, "error", err)
	}
}

// paidInTime is the payment event carried by ReleaseOrder's PaidInTime
// refusal.
func paidInTime(err error) (seckill.PaymentEvent, bool) {
	var ev seckill.PaymentEvent
	if !isErrorType(err, seckill.ErrTypePaidInTime) || !details(err, &ev) {
		return seckill.PaymentEvent{}, false
	}
	return ev, true
}

// details decodes the details of err, an ApplicationError, into v; false
// when it has none (an older attempt's error).
func details(err error, v any) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.HasDetails() && appErr.Details(v) == nil
}

// isErrorType reports whether err is an ApplicationError of type typ.
func isErrorType(err error, typ string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == typ
}
