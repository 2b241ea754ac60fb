// Package workflows holds seckill's Temporal workflows. No I/O and no
// clocks here: only workflow.* APIs, so every history replays.
package workflows

import (
	"errors"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
)

// OrderSaga is the life of one admitted claim, as a saga:
//
//  1. create the order row (QUEUED);
//  2. lock one unit in the database (conditional UPDATE, never below zero);
//     refused -> CLOSED with SOLD_OUT, the claim forgotten, no unit returned
//     to Redis (the database never had it);
//  3. wait for a payment signal, a cancel signal or the payment deadline;
//  4. paid -> confirm (locked-1, sold+1, order PAID); failed, cancelled or
//     timed out -> compensate in a disconnected context, retried until
//     done: close the order and release its database unit, then forget the
//     claim and return the unit in Redis.
//
// Every step is an activity idempotent by order id, and the saga starts by
// reading the order as it stands, so a second run of the same order (a
// re-relayed claim after the first run's history is gone) resumes instead of
// doing anything twice.
//
// A payment that reaches the saga in the same workflow task as the deadline
// wins: the buyer paid in time as far as anyone can tell. Payment signals
// that arrive after the decision are drained before the workflow returns and
// recorded as DUPLICATE or LATE, never applied.
func OrderSaga(ctx workflow.Context, in seckill.SagaInput) (seckill.SagaResult, error) {
	s := &saga{
		in:       in,
		status:   seckill.StatusQueued,
		payments: workflow.GetSignalChannel(ctx, seckill.PaymentSignal),
		cancels:  workflow.GetSignalChannel(ctx, seckill.CancelSignal),
		seen:     map[string]bool{},
		log:      log.With(workflow.GetLogger(ctx), "orderID", in.OrderID, "saleID", in.SaleID, "userID", in.UserID),
	}
	if err := workflow.SetQueryHandler(ctx, seckill.StatusQuery, func() (seckill.OrderStatus, error) {
		return s.status, nil
	}); err != nil {
		return seckill.SagaResult{}, err
	}
	return s.run(ctx)
}

// a is only used for its method names; the worker registers the real one.
var a *activities.Activities

// Timeouts and retries of the saga's activities. No attempt limit: a step
// that cannot finish must be fixed and will then finish; giving up half way
// would leave stock or a claim behind.
const (
	activityTimeout = 10 * time.Second
	maxRetryDelay   = 10 * time.Second
)

type saga struct {
	in       seckill.SagaInput
	status   seckill.OrderStatus
	order    seckill.CreateOrderResult
	payments workflow.ReceiveChannel
	cancels  workflow.ReceiveChannel
	seen     map[string]bool // payment event ids already handled
	log      log.Logger
}

// decision is how the wait for payment ended.
type decision struct {
	paid    *seckill.PaymentEvent
	closeAs seckill.CloseReason
	event   string // the event that decided, if any
}

func (s *saga) run(ctx workflow.Context) (seckill.SagaResult, error) {
	ctx = withActivityOptions(ctx)
	// The steps before the wait run to their end even if an operator cancels
	// the workflow: stopping half way would leave a claim, or a locked unit,
	// with no saga to give it back. The wait then sees the cancel and
	// compensates.
	sctx, _ := workflow.NewDisconnectedContext(ctx)

	if err := workflow.ExecuteActivity(sctx, a.CreateOrder, seckill.CreateOrderInput{
		OrderID: s.in.OrderID, SaleID: s.in.SaleID, UserID: s.in.UserID, AdmittedAt: s.in.AdmittedAt,
	}).Get(sctx, &s.order); err != nil {
		return seckill.SagaResult{}, err
	}

	switch s.order.Status {
	case seckill.StatusPaid:
		return s.finish(ctx, seckill.StatusPaid, "")
	case seckill.StatusClosed:
		// Closed before this run (or refused as a second active order):
		// make sure the Redis half is done too. For an order that never held
		// a database unit the release gives no unit back.
		if err := s.releaseClaim(sctx, s.order.CloseReason != seckill.CloseSoldOut); err != nil {
			return seckill.SagaResult{}, err
		}
		return s.finish(ctx, seckill.StatusClosed, s.order.CloseReason)
	case seckill.StatusQueued:
		soldOut, err := s.lockStock(sctx)
		if err != nil {
			return seckill.SagaResult{}, err
		}
		if soldOut {
			return s.finish(ctx, seckill.StatusClosed, seckill.CloseSoldOut)
		}
	}

	if err := s.setMemo(ctx); err != nil {
		return seckill.SagaResult{}, err
	}
	if err := s.setStatus(ctx, seckill.StatusAwaitingPayment); err != nil {
		return seckill.SagaResult{}, err
	}
	s.log.Info("order awaiting payment", "amountCents", s.order.AmountCents, "currency", s.order.Currency, "payBy", s.order.PayBy)
	d := s.awaitPayment(ctx)
	if d.paid != nil {
		return s.confirm(ctx, d)
	}
	return s.compensate(ctx, d)
}

// lockStock takes the unit in the database. soldOut reports that the
// database refused, closed the order, and the claim has been forgotten.
func (s *saga) lockStock(ctx workflow.Context) (soldOut bool, err error) {
	payBy := workflow.Now(ctx).Add(s.order.PaymentTimeout).UTC().Truncate(time.Millisecond)
	err = workflow.ExecuteActivity(ctx, a.LockStock, seckill.LockStockInput{OrderID: s.in.OrderID, PayBy: payBy}).Get(ctx, nil)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == seckill.ErrTypeSoldOut {
		s.log.Info("database refused the unit: closing as sold out")
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		return true, s.releaseClaim(dctx, false)
	}
	if err != nil {
		return false, err
	}
	s.order.PayBy = &payBy
	return false, nil
}

// awaitPayment waits for the first deciding event: a matching successful
// payment, a failed payment, a cancel or the deadline.
func (s *saga) awaitPayment(ctx workflow.Context) decision {
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	if s.order.PayBy == nil { // an AWAITING_PAYMENT row always has one; be safe
		payBy := workflow.Now(ctx).Add(s.order.PaymentTimeout)
		s.order.PayBy = &payBy
	}
	wait := s.order.PayBy.Sub(workflow.Now(ctx))
	if wait < 0 {
		wait = 0
	}
	timer := workflow.NewTimer(timerCtx, wait)

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
			d = &decision{closeAs: seckill.CloseCancelled}
		})
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {
			// An operator cancelled the workflow: close the order as cancelled.
			d = &decision{closeAs: seckill.CloseCancelled}
		})
		sel.AddFuture(timer, func(workflow.Future) {
			// Payments that arrived in this same task count as in time.
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
	return *d
}

// onPayment returns the decision ev makes, or nil when the saga keeps
// waiting (a repeated event, or a payment that does not match the order).
func (s *saga) onPayment(ctx workflow.Context, ev seckill.PaymentEvent) *decision {
	if s.seen[ev.EventID] {
		return nil
	}
	s.seen[ev.EventID] = true
	switch ev.Type {
	case seckill.PaymentFailed:
		return &decision{closeAs: seckill.ClosePaymentFailed, event: ev.EventID}
	case seckill.PaymentSucceeded:
		if ev.AmountCents != s.order.AmountCents || ev.Currency != s.order.Currency {
			s.log.Warn("payment does not match the order", "eventID", ev.EventID,
				"amountCents", ev.AmountCents, "currency", ev.Currency)
			s.refuse(ctx, ev, seckill.OutcomeMismatch)
			return nil
		}
		return &decision{paid: &ev, event: ev.EventID}
	}
	s.recordOutcome(ctx, ev.EventID, seckill.OutcomeIgnored)
	return nil
}

func (s *saga) confirm(ctx workflow.Context, d decision) (seckill.SagaResult, error) {
	err := workflow.ExecuteActivity(ctx, a.ConfirmPayment, seckill.ConfirmPaymentInput{
		OrderID: s.in.OrderID, EventID: d.paid.EventID, PaymentIntentID: d.paid.PaymentIntentID, PaidAt: workflow.Now(ctx).UTC(),
	}).Get(ctx, nil)
	if err != nil {
		return seckill.SagaResult{}, err
	}
	s.recordOutcome(ctx, d.event, seckill.OutcomeApplied)
	return s.finish(ctx, seckill.StatusPaid, "")
}

// compensate undoes the order in reverse: database first (close the order,
// release its unit), then Redis (forget the claim, return the unit). It runs
// in a disconnected context so a cancelled workflow still compensates.
func (s *saga) compensate(ctx workflow.Context, d decision) (seckill.SagaResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.GetMetricsHandler(dctx).WithTags(map[string]string{"reason": string(d.closeAs)}).
		Counter(seckill.MetricSagaCompensations).Inc(1)
	err := workflow.ExecuteActivity(dctx, a.CloseOrder, seckill.CloseOrderInput{
		OrderID: s.in.OrderID, Reason: d.closeAs, ClosedAt: workflow.Now(dctx).UTC(),
	}).Get(dctx, nil)
	if err != nil {
		return seckill.SagaResult{}, err
	}
	if err := s.releaseClaim(dctx, true); err != nil {
		return seckill.SagaResult{}, err
	}
	if d.event != "" {
		s.recordOutcome(dctx, d.event, seckill.OutcomeApplied)
	}
	return s.finish(dctx, seckill.StatusClosed, d.closeAs)
}

func (s *saga) releaseClaim(ctx workflow.Context, returnUnit bool) error {
	return workflow.ExecuteActivity(ctx, a.ReleaseClaim, seckill.ReleaseClaimInput{
		SaleID: s.in.SaleID, OrderID: s.in.OrderID, UserID: s.in.UserID, ReturnUnit: returnUnit,
	}).Get(ctx, nil)
}

// finish records the terminal status and drains payment signals that will
// never decide anything now, so none is lost unrecorded.
func (s *saga) finish(ctx workflow.Context, status seckill.OrderStatus, reason seckill.CloseReason) (seckill.SagaResult, error) {
	if ctx.Err() != nil {
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	if err := s.setFinalStatus(ctx, status, reason); err != nil {
		return seckill.SagaResult{}, err
	}
	for {
		var ev seckill.PaymentEvent
		if !s.payments.ReceiveAsync(&ev) {
			break
		}
		if s.seen[ev.EventID] {
			continue
		}
		s.seen[ev.EventID] = true
		outcome := seckill.OutcomeDuplicate
		if status == seckill.StatusClosed && ev.Type == seckill.PaymentSucceeded {
			outcome = seckill.OutcomeLate
		}
		s.log.Warn("payment after the order was decided", "eventID", ev.EventID, "outcome", outcome)
		if ev.Type == seckill.PaymentSucceeded {
			s.refuse(ctx, ev, outcome)
		} else {
			s.recordOutcome(ctx, ev.EventID, outcome)
		}
	}
	// Cancel requests after the decision have nothing left to cancel.
	for s.cancels.ReceiveAsync(nil) {
	}
	s.log.Info("order settled", "status", status, "closeReason", reason)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"status": string(status), "reason": string(reason)}).
		Counter(seckill.MetricSagaOutcomes).Inc(1)
	return seckill.SagaResult{Status: status, CloseReason: reason}, nil
}

// setMemo shows operators what the buyer owes and until when, in the
// Temporal UI's memo of the workflow. Added after the first histories were
// recorded, hence the version.
func (s *saga) setMemo(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, memoChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	memo := map[string]any{
		seckill.MemoAmountCents: s.order.AmountCents,
		seckill.MemoCurrency:    s.order.Currency,
	}
	if s.order.PayBy != nil {
		memo[seckill.MemoPayBy] = s.order.PayBy.UTC().Format(time.RFC3339)
	}
	return workflow.UpsertMemo(ctx, memo)
}

// memoChange is the workflow.GetVersion change id of setMemo.
const memoChange = "memo-amount-pay-by"

// setFinalStatus records the terminal status and, for a closed order, its
// close reason as the CloseReason search attribute (in the same upsert),
// so operators can list, say, today's timed-out orders. Added after the
// first histories were recorded, hence the version.
func (s *saga) setFinalStatus(ctx workflow.Context, status seckill.OrderStatus, reason seckill.CloseReason) error {
	if status != seckill.StatusClosed ||
		workflow.GetVersion(ctx, closeReasonChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return s.setStatus(ctx, status)
	}
	s.status = status
	return workflow.UpsertTypedSearchAttributes(ctx,
		seckill.OrderStatusAttr.ValueSet(string(status)), seckill.CloseReasonAttr.ValueSet(string(reason)))
}

// closeReasonChange is the workflow.GetVersion change id of setFinalStatus.
const closeReasonChange = "close-reason-attr"

func (s *saga) setStatus(ctx workflow.Context, status seckill.OrderStatus) error {
	s.status = status
	return workflow.UpsertTypedSearchAttributes(ctx, seckill.OrderStatusAttr.ValueSet(string(status)))
}

// refuse records that a successful payment was not applied and gives it
// back. The refund is retried until done: a payment taken must end as a
// PAID order or a refund (DESIGN.md invariant 5).
func (s *saga) refuse(ctx workflow.Context, ev seckill.PaymentEvent, outcome seckill.PaymentOutcome) {
	s.recordOutcome(ctx, ev.EventID, outcome)
	err := workflow.ExecuteActivity(ctx, a.RefundPayment, seckill.RefundInput{
		EventID: ev.EventID, OrderID: s.in.OrderID, SaleID: s.in.SaleID, UserID: s.in.UserID,
		PaymentIntentID: ev.PaymentIntentID, AmountCents: ev.AmountCents, Currency: ev.Currency, Reason: outcome,
	}).Get(ctx, nil)
	if err != nil {
		s.log.Error("refund payment", "eventID", ev.EventID, "error", err)
	}
}

// recordOutcome stores what a payment event did. It is bookkeeping for
// operators: its failure is logged, never allowed to undo the order.
func (s *saga) recordOutcome(ctx workflow.Context, eventID string, outcome seckill.PaymentOutcome) {
	if eventID == "" {
		return
	}
	err := workflow.ExecuteActivity(ctx, a.RecordPaymentOutcome, seckill.PaymentOutcomeInput{EventID: eventID, Outcome: outcome}).Get(ctx, nil)
	if err != nil {
		s.log.Error("record payment outcome", "eventID", eventID, "error", err)
	}
}

func withActivityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: activityTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        100 * time.Millisecond,
			BackoffCoefficient:     2,
			MaximumInterval:        maxRetryDelay,
			NonRetryableErrorTypes: []string{seckill.ErrTypeSoldOut, seckill.ErrTypeSaleNotFound},
		},
	})
}

// StartOptions are the options every starter of an OrderSaga uses (the
// relay, and the API when it cancels an order not yet relayed), so the
// search attributes and the ID policy are the same whoever starts it.
func StartOptions(in seckill.SagaInput, taskQueue string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        seckill.OrderWorkflowID(in.OrderID),
		TaskQueue: taskQueue,
		// A closed saga must never be started again for the same order.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			seckill.SaleIDAttr.ValueSet(strconv.FormatInt(in.SaleID, 10)),
			seckill.UserIDAttr.ValueSet(in.UserID),
			seckill.OrderStatusAttr.ValueSet(string(seckill.StatusQueued)),
		),
	}
}
