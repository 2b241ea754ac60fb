package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
)

// legacyOrderSaga is the OrderSaga as it ran before payable-at-admission
// (workflow.GetVersion change localActivitiesChange at DefaultVersion):
// regular activities, a deadline counted from when the saga locked the
// unit. It is kept unchanged so sagas started by earlier releases replay
// and finish; testdata/v0-*, v1-* and v2-* are its recorded histories. New
// sagas never run it.
func legacyOrderSaga(ctx workflow.Context, in seckill.SagaInput, status *seckill.OrderStatus) (seckill.SagaResult, error) {
	s := &legacySaga{
		in:       in,
		status:   seckill.StatusQueued,
		payments: workflow.GetSignalChannel(ctx, seckill.PaymentSignal),
		cancels:  workflow.GetSignalChannel(ctx, seckill.CancelSignal),
		seen:     map[string]bool{},
		log:      log.With(workflow.GetLogger(ctx), "orderID", in.OrderID, "saleID", in.SaleID, "userID", in.UserID),
	}
	s.statusOut = status
	return s.run(ctx)
}

type legacySaga struct {
	in       seckill.SagaInput
	status   seckill.OrderStatus
	order    seckill.CreateOrderResult
	payments workflow.ReceiveChannel
	cancels  workflow.ReceiveChannel
	seen     map[string]bool // payment event ids already handled
	log      log.Logger
	// statusOut is where the status query reads the status.
	statusOut *seckill.OrderStatus
}

// legacyDecision is how the wait for payment ended.
type legacyDecision struct {
	paid    *seckill.PaymentEvent
	closeAs seckill.CloseReason
	event   string // the event that decided, if any
}

func (s *legacySaga) run(ctx workflow.Context) (seckill.SagaResult, error) {
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
func (s *legacySaga) lockStock(ctx workflow.Context) (soldOut bool, err error) {
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
func (s *legacySaga) awaitPayment(ctx workflow.Context) legacyDecision {
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

	var d *legacyDecision
	for d == nil {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(s.payments, func(c workflow.ReceiveChannel, _ bool) {
			var ev seckill.PaymentEvent
			c.Receive(ctx, &ev)
			d = s.onPayment(ctx, ev)
		})
		sel.AddReceive(s.cancels, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			d = &legacyDecision{closeAs: seckill.CloseCancelled}
		})
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {
			// An operator cancelled the workflow: close the order as cancelled.
			d = &legacyDecision{closeAs: seckill.CloseCancelled}
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
				d = &legacyDecision{closeAs: seckill.ClosePaymentTimeout}
			}
		})
		sel.Select(ctx)
	}
	return *d
}

// onPayment returns the legacyDecision ev makes, or nil when the saga keeps
// waiting (a repeated event, or a payment that does not match the order).
func (s *legacySaga) onPayment(ctx workflow.Context, ev seckill.PaymentEvent) *legacyDecision {
	if s.seen[ev.EventID] {
		return nil
	}
	s.seen[ev.EventID] = true
	switch ev.Type {
	case seckill.PaymentFailed:
		return &legacyDecision{closeAs: seckill.ClosePaymentFailed, event: ev.EventID}
	case seckill.PaymentSucceeded:
		if ev.AmountCents != s.order.AmountCents || ev.Currency != s.order.Currency {
			s.log.Warn("payment does not match the order", "eventID", ev.EventID,
				"amountCents", ev.AmountCents, "currency", ev.Currency)
			s.refuse(ctx, ev, seckill.OutcomeMismatch)
			return nil
		}
		return &legacyDecision{paid: &ev, event: ev.EventID}
	}
	s.recordOutcome(ctx, ev.EventID, seckill.OutcomeIgnored)
	return nil
}

func (s *legacySaga) confirm(ctx workflow.Context, d legacyDecision) (seckill.SagaResult, error) {
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
func (s *legacySaga) compensate(ctx workflow.Context, d legacyDecision) (seckill.SagaResult, error) {
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

func (s *legacySaga) releaseClaim(ctx workflow.Context, returnUnit bool) error {
	return workflow.ExecuteActivity(ctx, a.ReleaseClaim, seckill.ReleaseClaimInput{
		SaleID: s.in.SaleID, OrderID: s.in.OrderID, UserID: s.in.UserID, ReturnUnit: returnUnit,
	}).Get(ctx, nil)
}

// finish records the terminal status and drains payment signals that will
// never decide anything now, so none is lost unrecorded.
func (s *legacySaga) finish(ctx workflow.Context, status seckill.OrderStatus, reason seckill.CloseReason) (seckill.SagaResult, error) {
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
	// Cancel requests after the legacyDecision have nothing left to cancel.
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
func (s *legacySaga) setMemo(ctx workflow.Context) error {
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
func (s *legacySaga) setFinalStatus(ctx workflow.Context, status seckill.OrderStatus, reason seckill.CloseReason) error {
	if status != seckill.StatusClosed ||
		workflow.GetVersion(ctx, closeReasonChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return s.setStatus(ctx, status)
	}
	s.status = status
	*s.statusOut = status
	return workflow.UpsertTypedSearchAttributes(ctx,
		seckill.OrderStatusAttr.ValueSet(string(status)), seckill.CloseReasonAttr.ValueSet(string(reason)))
}

// closeReasonChange is the workflow.GetVersion change id of setFinalStatus.
const closeReasonChange = "close-reason-attr"

func (s *legacySaga) setStatus(ctx workflow.Context, status seckill.OrderStatus) error {
	s.status = status
	*s.statusOut = status
	return workflow.UpsertTypedSearchAttributes(ctx, seckill.OrderStatusAttr.ValueSet(string(status)))
}

// refuse records that a successful payment was not applied and gives it
// back. The refund is retried until done: a payment taken must end as a
// PAID order or a refund (docs/DESIGN.md invariant 5).
func (s *legacySaga) refuse(ctx workflow.Context, ev seckill.PaymentEvent, outcome seckill.PaymentOutcome) {
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
func (s *legacySaga) recordOutcome(ctx workflow.Context, eventID string, outcome seckill.PaymentOutcome) {
	if eventID == "" {
		return
	}
	err := workflow.ExecuteActivity(ctx, a.RecordPaymentOutcome, seckill.PaymentOutcomeInput{EventID: eventID, Outcome: outcome}).Get(ctx, nil)
	if err != nil {
		s.log.Error("record payment outcome", "eventID", eventID, "error", err)
	}
}
