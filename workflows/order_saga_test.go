package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/workflows"
)

// The sale's payment window, and how long past pay_by the saga waits for
// payments on their way (workflows.deliveryGrace).
const (
	paymentTimeout = 15 * time.Minute
	deliveryGrace  = 2 * time.Second
)

var (
	start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	payBy = start.Add(paymentTimeout)
	input = seckill.SagaInput{OrderID: 42, SaleID: 7, UserID: "u-1", AdmittedAt: start, PayBy: payBy, AmountCents: 990, Currency: "usd"}
)

// sagaTest runs one OrderSaga against mocked activities and records every
// activity call in the order it was made.
type sagaTest struct {
	env *testsuite.TestWorkflowEnvironment

	// Behaviour of the mocked activities; set before run.
	startOrder   func(attempt int) (seckill.StartOrderResult, error)
	confirm      func(attempt int) error
	releaseOrder func() (seckill.CloseReason, error)
	refundFn     func() error
	cancelIntent func(attempt int) (seckill.Intent, error)
	// makeIntentFails makes every MakePaymentIntent fail.
	makeIntentFails bool

	// The mocks run on their own goroutines.
	mu       sync.Mutex
	calls    []string
	starts   []seckill.StartOrderInput
	confirms []seckill.ConfirmPaymentInput
	closes   []seckill.ReleaseOrderInput
	releases []seckill.ReleaseClaimInput
	outcomes []seckill.PaymentOutcomeInput
	refunds  []seckill.RefundInput
	cancels  []seckill.IntentInput
	statuses []seckill.OrderStatus // OrderStatus search attribute, as upserted
	timers   []time.Duration
}

// awaiting is StartOrder's answer for a fresh order: its unit locked.
func awaiting(payments ...seckill.PaymentEvent) seckill.StartOrderResult {
	return seckill.StartOrderResult{Status: seckill.StatusAwaitingPayment, AmountCents: 990, Currency: "usd", PayBy: payBy, Payments: payments}
}

func newSagaTest(t *testing.T) *sagaTest {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	s := &sagaTest{
		env:          suite.NewTestWorkflowEnvironment(),
		startOrder:   func(int) (seckill.StartOrderResult, error) { return awaiting(), nil },
		confirm:      func(int) error { return nil },
		releaseOrder: func() (seckill.CloseReason, error) { return "", nil },
		refundFn:     func() error { return nil },
		cancelIntent: func(int) (seckill.Intent, error) {
			return seckill.Intent{Provider: "stripe", ID: orderIntent, Status: seckill.IntentCanceled}, nil
		},
	}
	s.env.SetStartTime(start)
	// The relay starts every saga with these attributes; the test server
	// needs no namespace registration, so this is only for realism.
	require.NoError(t, s.env.SetTypedSearchAttributesOnStart(saga.New(nil, saga.Options{}).StartOptions(input).TypedSearchAttributes))
	s.env.RegisterWorkflow(workflows.OrderSaga)

	acts := &activities.Activities{}
	s.env.RegisterActivity(acts)
	s.env.OnActivity(acts.StartOrder, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.StartOrderInput) (seckill.StartOrderResult, error) {
			s.mu.Lock()
			s.calls = append(s.calls, "StartOrder")
			s.starts = append(s.starts, in)
			attempt := len(s.starts)
			s.mu.Unlock()
			return s.startOrder(attempt)
		}).Maybe()
	s.env.OnActivity(acts.ConfirmPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.ConfirmPaymentInput) error {
			s.mu.Lock()
			s.calls = append(s.calls, "ConfirmPayment")
			s.confirms = append(s.confirms, in)
			attempt := len(s.confirms)
			s.mu.Unlock()
			return s.confirm(attempt)
		}).Maybe()
	s.env.OnActivity(acts.ReleaseOrder, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.ReleaseOrderInput) (seckill.CloseReason, error) {
			s.mu.Lock()
			s.calls = append(s.calls, "ReleaseOrder")
			s.closes = append(s.closes, in)
			s.mu.Unlock()
			reason, err := s.releaseOrder()
			if reason == "" {
				reason = in.Reason
			}
			return reason, err
		}).Maybe()
	s.env.OnActivity(acts.ReleaseClaim, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.ReleaseClaimInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, "ReleaseClaim")
			s.releases = append(s.releases, in)
			return nil
		}).Maybe()
	s.env.OnActivity(acts.RecordPaymentOutcome, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.PaymentOutcomeInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, "RecordPaymentOutcome")
			s.outcomes = append(s.outcomes, in)
			return nil
		}).Maybe()
	s.env.OnActivity(acts.RefundPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.RefundInput) error {
			s.mu.Lock()
			s.calls = append(s.calls, "RefundPayment")
			s.refunds = append(s.refunds, in)
			s.mu.Unlock()
			return s.refundFn()
		}).Maybe()
	s.env.OnActivity(acts.MakePaymentIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.IntentInput) (seckill.Intent, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, "MakePaymentIntent")
			if s.makeIntentFails {
				return seckill.Intent{}, errors.New("stripe: 500 (replayed for its idempotency key)")
			}
			return seckill.Intent{Provider: "stripe", ID: orderIntent, ClientSecret: orderIntent + "_secret", Status: seckill.IntentOpen}, nil
		}).Maybe()
	s.env.OnActivity(acts.CancelPaymentIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.IntentInput) (seckill.Intent, error) {
			s.mu.Lock()
			s.calls = append(s.calls, "CancelPaymentIntent")
			s.cancels = append(s.cancels, in)
			attempt := len(s.cancels)
			s.mu.Unlock()
			return s.cancelIntent(attempt)
		}).Maybe()
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		// Runs on the workflow's goroutine, where require must not stop
		// the test.
		status, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(saga.OrderStatusAttr)
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.statuses = append(s.statuses, seckill.OrderStatus(status))
	})
	s.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.timers = append(s.timers, d)
	})
	return s
}

// signal sends a signal at workflow time start+at.
func (s *sagaTest) signal(at time.Duration, name string, arg any) {
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(name, arg) }, at)
}

// pay delivers ev at start+at, received by seckill at that moment.
func (s *sagaTest) pay(at time.Duration, ev seckill.PaymentEvent) {
	ev.ReceivedAt = start.Add(at)
	s.signal(at, seckill.PaymentSignal, ev)
}

// run executes the saga to its end and returns its result.
func (s *sagaTest) run(t *testing.T) seckill.SagaResult {
	t.Helper()
	s.env.ExecuteWorkflow(workflows.OrderSaga, input)
	require.True(t, s.env.IsWorkflowCompleted())
	require.NoError(t, s.env.GetWorkflowError())
	var res seckill.SagaResult
	require.NoError(t, s.env.GetWorkflowResult(&res))
	s.env.AssertExpectations(t)
	return res
}

// succeeded is a payment of the order's exact price.
func succeeded(eventID string) seckill.PaymentEvent {
	return seckill.PaymentEvent{
		EventID: eventID, Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_" + eventID,
		AmountCents: 990, Currency: "usd",
	}
}

func failed(eventID string) seckill.PaymentEvent {
	return seckill.PaymentEvent{EventID: eventID, Type: seckill.PaymentFailed, PaymentIntentID: "pi_" + eventID, AmountCents: 990, Currency: "usd"}
}

// receivedAt is ev as recorded at start+at.
func receivedAt(ev seckill.PaymentEvent, at time.Duration) seckill.PaymentEvent {
	ev.ReceivedAt = start.Add(at)
	return ev
}

func outcome(eventID string, o seckill.PaymentOutcome) seckill.PaymentOutcomeInput {
	return seckill.PaymentOutcomeInput{EventID: eventID, Outcome: o}
}

func paid() seckill.SagaResult { return seckill.SagaResult{Status: seckill.StatusPaid} }

func closed(reason seckill.CloseReason) seckill.SagaResult {
	return seckill.SagaResult{Status: seckill.StatusClosed, CloseReason: reason}
}

func release(returnUnit bool) seckill.ReleaseClaimInput {
	return seckill.ReleaseClaimInput{SaleID: input.SaleID, OrderID: input.OrderID, UserID: input.UserID, ReturnUnit: returnUnit}
}

func closeAs(reason seckill.CloseReason, at time.Duration, eventID string) seckill.ReleaseOrderInput {
	return seckill.ReleaseOrderInput{OrderID: input.OrderID, SaleID: input.SaleID, UserID: input.UserID,
		Reason: reason, ClosedAt: start.Add(at), EventID: eventID}
}

func confirmed(ev seckill.PaymentEvent, at time.Duration) seckill.ConfirmPaymentInput {
	return seckill.ConfirmPaymentInput{OrderID: input.OrderID, EventID: ev.EventID, PaymentIntentID: ev.PaymentIntentID, PaidAt: start.Add(at)}
}

func TestOrderSaga_PaidConfirmsOrder(t *testing.T) {
	s := newSagaTest(t)
	s.pay(5*time.Minute, succeeded("evt_1"))

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "ConfirmPayment"}, s.calls, "the outcome is recorded in the confirm's transaction")
	require.Equal(t, []seckill.StartOrderInput{{OrderID: input.OrderID, SaleID: input.SaleID, UserID: input.UserID, AdmittedAt: start, PayBy: payBy}}, s.starts)
	require.Equal(t, []seckill.ConfirmPaymentInput{confirmed(succeeded("evt_1"), 5*time.Minute)}, s.confirms)
	require.Empty(t, s.closes)
	require.Empty(t, s.releases)
	require.Empty(t, s.outcomes)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusPaid}, s.statuses)
}

func TestOrderSaga_StatusQueryDuringWaitIsAwaitingPayment(t *testing.T) {
	s := newSagaTest(t)
	var (
		status seckill.OrderStatus
		qerr   error
	)
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(seckill.StatusQuery)
		if err == nil {
			err = v.Get(&status)
		}
		qerr = err
	}, time.Minute)
	s.pay(2*time.Minute, succeeded("evt_1"))

	require.Equal(t, paid(), s.run(t))
	require.NoError(t, qerr)
	require.Equal(t, seckill.StatusAwaitingPayment, status)

	v, err := s.env.QueryWorkflow(seckill.StatusQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(&status))
	require.Equal(t, seckill.StatusPaid, status)
}

func TestOrderSaga_PaymentFailedClosesAndReturnsUnit(t *testing.T) {
	s := newSagaTest(t)
	s.pay(3*time.Minute, failed("evt_f"))

	require.Equal(t, closed(seckill.ClosePaymentFailed), s.run(t))
	require.Equal(t, []string{"StartOrder", "ReleaseOrder"}, s.calls, "close, unit back and outcome in one step")
	require.Empty(t, s.refunds, "a failed payment took no money")
	require.Empty(t, s.confirms)
	require.Equal(t, []seckill.ReleaseOrderInput{closeAs(seckill.ClosePaymentFailed, 3*time.Minute, "evt_f")}, s.closes)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusClosed}, s.statuses)
}

func TestOrderSaga_TimeoutClosesAfterPayByAndRefundsLatePayment(t *testing.T) {
	s := newSagaTest(t)
	// Received a second after pay_by, inside the grace the saga gives
	// payments on their way: too late all the same, and refunded.
	s.pay(paymentTimeout+time.Second, succeeded("evt_late"))

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Equal(t, []time.Duration{paymentTimeout + deliveryGrace}, s.timers)
	require.Equal(t, []string{"StartOrder", "RefundPayment", "ReleaseOrder"}, s.calls)
	require.Equal(t, []seckill.RefundInput{refund(receivedAt(succeeded("evt_late"), paymentTimeout+time.Second), seckill.OutcomeLate)}, s.refunds)
	require.Empty(t, s.confirms)
	require.Equal(t, []seckill.ReleaseOrderInput{closeAs(seckill.ClosePaymentTimeout, paymentTimeout+deliveryGrace, "")}, s.closes)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusClosed}, s.statuses)
}

func TestOrderSaga_PaymentReceivedByPayByButDeliveredLatePays(t *testing.T) {
	s := newSagaTest(t)
	// Received a millisecond before pay_by, signalled a second after it.
	ev := receivedAt(succeeded("evt_1"), paymentTimeout-time.Millisecond)
	s.signal(paymentTimeout+time.Second, seckill.PaymentSignal, ev)

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []seckill.ConfirmPaymentInput{confirmed(ev, paymentTimeout+time.Second)}, s.confirms)
	require.Empty(t, s.closes)
	require.Empty(t, s.refunds)
}

func TestOrderSaga_PaymentBeforeTheSagaRanIsHonoured(t *testing.T) {
	s := newSagaTest(t)
	// The buyer paid a second after the 202; the saga starts an hour later,
	// long after pay_by, and still confirms at once.
	ev := receivedAt(succeeded("evt_early"), time.Second)
	s.env.SetStartTime(start.Add(time.Hour))
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return awaiting(ev), nil }

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "ConfirmPayment"}, s.calls)
	require.Equal(t, ev.EventID, s.confirms[0].EventID)
	require.Empty(t, s.timers, "decided before any wait")
	require.Equal(t, []seckill.OrderStatus{seckill.StatusPaid}, s.statuses)
}

func TestOrderSaga_LateStartWaitsOnlyUntilPayBy(t *testing.T) {
	s := newSagaTest(t)
	// Started ten minutes after admission: five minutes of the fifteen are
	// left, and the saga waits for those only.
	s.env.SetStartTime(start.Add(10 * time.Minute))

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Equal(t, []time.Duration{5*time.Minute + deliveryGrace}, s.timers)
	require.Equal(t, []seckill.ReleaseOrderInput{closeAs(seckill.ClosePaymentTimeout, paymentTimeout+deliveryGrace, "")}, s.closes)
}

func TestOrderSaga_PendingPaymentsAfterPayByAreRefundedAndSecondsAreDuplicates(t *testing.T) {
	s := newSagaTest(t)
	s.env.SetStartTime(start.Add(time.Hour))
	late := receivedAt(succeeded("evt_late"), paymentTimeout+time.Minute)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return awaiting(late), nil }

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Equal(t, []seckill.RefundInput{refund(late, seckill.OutcomeLate)}, s.refunds)
	require.Empty(t, s.confirms)

	s = newSagaTest(t)
	first, second := receivedAt(succeeded("evt_1"), time.Second), receivedAt(succeeded("evt_2"), 2*time.Second)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return awaiting(first, second), nil }
	require.Equal(t, paid(), s.run(t))
	require.Equal(t, "evt_1", s.confirms[0].EventID)
	require.Equal(t, []seckill.RefundInput{refund(second, seckill.OutcomeDuplicate)}, s.refunds)
}

func TestOrderSaga_SoldOutInDatabaseForgetsClaimWithoutUnit(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) {
		return seckill.StartOrderResult{Status: seckill.StatusClosed, CloseReason: seckill.CloseSoldOut, AmountCents: 990, Currency: "usd", PayBy: payBy}, nil
	}

	// StartOrder closed the order itself; the database never had the unit,
	// so Redis gets none back.
	require.Equal(t, closed(seckill.CloseSoldOut), s.run(t))
	require.Equal(t, []string{"StartOrder", "ReleaseClaim"}, s.calls)
	require.Equal(t, []seckill.ReleaseClaimInput{release(false)}, s.releases)
	require.Empty(t, s.confirms)
	require.Empty(t, s.timers)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusClosed}, s.statuses)
}

// TestOrderSaga_PaymentInDeadlineTaskWins delivers the payment without a
// workflow task of its own just before the deadline, so the saga first sees
// it in the same workflow task as the fired timer.
func TestOrderSaga_PaymentInDeadlineTaskWins(t *testing.T) {
	s := newSagaTest(t)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflowSkippingWorkflowTask(seckill.PaymentSignal, receivedAt(succeeded("evt_1"), paymentTimeout))
	}, paymentTimeout+deliveryGrace-time.Millisecond)

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "ConfirmPayment"}, s.calls)
	require.Empty(t, s.closes)
}

func TestOrderSaga_FailedActivityIsRetriedUntilItSucceeds(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(attempt int) (seckill.StartOrderResult, error) {
		if attempt == 1 {
			return seckill.StartOrderResult{}, errors.New("connection reset by peer")
		}
		return awaiting(), nil
	}
	s.confirm = func(attempt int) error {
		if attempt < 3 {
			return errors.New("deadlock detected")
		}
		return nil
	}
	s.pay(time.Minute, succeeded("evt_1"))

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "StartOrder", "ConfirmPayment", "ConfirmPayment", "ConfirmPayment"}, s.calls)
	require.Equal(t, s.starts[0], s.starts[1], "a retry sends the same input")
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusPaid}, s.statuses)
}

func TestOrderSaga_MismatchedPaymentIsRefundedNotApplied(t *testing.T) {
	tests := []struct {
		name        string
		amountCents int64
		currency    string
	}{
		{"amount", 500, "usd"},
		{"currency", 990, "eur"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSagaTest(t)
			wrong := succeeded("evt_wrong")
			wrong.AmountCents, wrong.Currency = tt.amountCents, tt.currency
			s.pay(time.Minute, wrong)
			s.pay(2*time.Minute, succeeded("evt_right"))

			require.Equal(t, paid(), s.run(t))
			require.Len(t, s.confirms, 1)
			require.Equal(t, "evt_right", s.confirms[0].EventID)
			require.Equal(t, start.Add(2*time.Minute), s.confirms[0].PaidAt)
			require.Empty(t, s.closes)
			require.Equal(t, []seckill.RefundInput{refund(receivedAt(wrong, time.Minute), seckill.OutcomeMismatch)}, s.refunds, "the wrong payment is given back")
		})
	}
}

func TestOrderSaga_DuplicateEventChangesNothing(t *testing.T) {
	t.Run("after deciding", func(t *testing.T) {
		s := newSagaTest(t)
		ev := receivedAt(succeeded("evt_1"), time.Minute)
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(seckill.PaymentSignal, ev)
			s.env.SignalWorkflow(seckill.PaymentSignal, ev)
		}, time.Minute)

		require.Equal(t, paid(), s.run(t))
		require.Len(t, s.confirms, 1)
		require.Empty(t, s.refunds, "the same event twice is one payment")
	})
	t.Run("a second payment for a paid order is refunded", func(t *testing.T) {
		s := newSagaTest(t)
		second := receivedAt(succeeded("evt_2"), time.Minute)
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(seckill.PaymentSignal, receivedAt(succeeded("evt_1"), time.Minute))
			s.env.SignalWorkflow(seckill.PaymentSignal, second)
		}, time.Minute)

		require.Equal(t, paid(), s.run(t))
		require.Len(t, s.confirms, 1)
		require.Equal(t, []seckill.RefundInput{refund(second, seckill.OutcomeDuplicate)}, s.refunds)
	})
	t.Run("a failed payment after the decision is recorded", func(t *testing.T) {
		s := newSagaTest(t)
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(seckill.PaymentSignal, receivedAt(succeeded("evt_1"), time.Minute))
			s.env.SignalWorkflow(seckill.PaymentSignal, receivedAt(failed("evt_f"), time.Minute))
		}, time.Minute)

		require.Equal(t, paid(), s.run(t))
		require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_f", seckill.OutcomeDuplicate)}, s.outcomes)
		require.Empty(t, s.refunds)
	})
}

func TestOrderSaga_CancelSignalClosesAsCancelled(t *testing.T) {
	s := newSagaTest(t)
	s.signal(4*time.Minute, seckill.CancelSignal, nil)

	require.Equal(t, closed(seckill.CloseCancelled), s.run(t))
	require.Equal(t, []string{"StartOrder", "ReleaseOrder"}, s.calls)
	require.Equal(t, []seckill.ReleaseOrderInput{closeAs(seckill.CloseCancelled, 4*time.Minute, "")}, s.closes)
	require.Empty(t, s.confirms)
}

func TestOrderSaga_CancelAfterPayByIsATimeout(t *testing.T) {
	s := newSagaTest(t)
	s.signal(paymentTimeout+time.Second, seckill.CancelSignal, nil)

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
}

func TestOrderSaga_WorkflowCancelStillCompensates(t *testing.T) {
	s := newSagaTest(t)
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, 4*time.Minute)

	require.Equal(t, closed(seckill.CloseCancelled), s.run(t))
	require.Equal(t, []string{"StartOrder", "ReleaseOrder"}, s.calls)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusClosed}, s.statuses)
}

// The settle phase runs to its end whatever happens to the workflow: an
// operator's cancellation that lands while a step of it runs changes
// nothing, and no order is left with its payment neither applied nor
// refunded, or its unit locked.
func TestOrderSaga_WorkflowCancelDuringSettleChangesNothing(t *testing.T) {
	t.Run("during the first step", func(t *testing.T) {
		s := newSagaTest(t)
		s.startOrder = func(int) (seckill.StartOrderResult, error) {
			s.env.CancelWorkflow()
			return awaiting(), nil
		}
		require.Equal(t, closed(seckill.CloseCancelled), s.run(t), "the cancel then closes the order, unit back")
		require.Equal(t, []string{"StartOrder", "ReleaseOrder"}, s.calls)
	})
	t.Run("during confirm", func(t *testing.T) {
		s := newSagaTest(t)
		s.confirm = func(int) error {
			s.env.CancelWorkflow()
			return nil
		}
		s.pay(time.Minute, succeeded("evt_1"))
		require.Equal(t, paid(), s.run(t))
		require.Equal(t, []string{"StartOrder", "ConfirmPayment"}, s.calls)
	})
	t.Run("during compensation", func(t *testing.T) {
		s := newSagaTest(t)
		s.releaseOrder = func() (seckill.CloseReason, error) {
			s.env.CancelWorkflow()
			return "", nil
		}
		require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
		require.Equal(t, []string{"StartOrder", "ReleaseOrder"}, s.calls)
	})
	t.Run("during a refund", func(t *testing.T) {
		s := newSagaTest(t)
		s.refundFn = func() error {
			s.env.CancelWorkflow()
			return nil
		}
		late := receivedAt(succeeded("evt_late"), paymentTimeout+time.Minute)
		s.signal(paymentTimeout+deliveryGrace, seckill.PaymentSignal, late)
		s.releaseOrder = func() (seckill.CloseReason, error) { return "", nil }
		require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
		require.Equal(t, []seckill.RefundInput{refund(late, seckill.OutcomeLate)}, s.refunds, "the money is given back")
	})
}

func TestOrderSaga_ImpossibleTransitionsSettleTheOrderAsItStands(t *testing.T) {
	t.Run("confirming a closed order refunds the payment", func(t *testing.T) {
		s := newSagaTest(t)
		s.confirm = func(int) error {
			return temporal.NewNonRetryableApplicationError("the order is closed", seckill.ErrTypeOrderClosed, nil)
		}
		s.releaseOrder = func() (seckill.CloseReason, error) { return seckill.CloseCancelled, nil }
		s.pay(time.Minute, succeeded("evt_1"))

		require.Equal(t, closed(seckill.CloseCancelled), s.run(t), "the order's own close reason")
		// The refund runs beside the release; the saga ends once both are done.
		require.ElementsMatch(t, []string{"StartOrder", "ConfirmPayment", "ReleaseOrder", "RefundPayment"}, s.calls)
		require.Equal(t, []seckill.RefundInput{refund(receivedAt(succeeded("evt_1"), time.Minute), seckill.OutcomeLate)}, s.refunds)
	})
	t.Run("closing a paid order leaves it paid", func(t *testing.T) {
		s := newSagaTest(t)
		s.releaseOrder = func() (seckill.CloseReason, error) {
			return "", temporal.NewNonRetryableApplicationError("the order is paid", seckill.ErrTypeOrderPaid, nil)
		}
		require.Equal(t, paid(), s.run(t))
		require.Equal(t, []string{"StartOrder", "ReleaseOrder"}, s.calls)
	})
}

func TestOrderSaga_ResumesPaidOrderWithoutLocking(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) {
		return seckill.StartOrderResult{Status: seckill.StatusPaid, AmountCents: 990, Currency: "usd", PayBy: payBy}, nil
	}

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder"}, s.calls)
	require.Empty(t, s.timers)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusPaid}, s.statuses)
}

func TestOrderSaga_ResumesClosedOrderReleasesClaim(t *testing.T) {
	tests := []struct {
		reason     seckill.CloseReason
		returnUnit bool
	}{
		{seckill.ClosePaymentTimeout, true},
		{seckill.CloseCancelled, true},
		{seckill.CloseSoldOut, false}, // the database never had the unit
	}
	for _, tt := range tests {
		t.Run(string(tt.reason), func(t *testing.T) {
			s := newSagaTest(t)
			s.startOrder = func(int) (seckill.StartOrderResult, error) {
				return seckill.StartOrderResult{Status: seckill.StatusClosed, CloseReason: tt.reason, AmountCents: 990, Currency: "usd", PayBy: payBy}, nil
			}

			require.Equal(t, closed(tt.reason), s.run(t))
			require.Equal(t, []string{"StartOrder", "ReleaseClaim"}, s.calls)
			require.Equal(t, []seckill.ReleaseClaimInput{release(tt.returnUnit)}, s.releases)
		})
	}
}

// refund is the refund the saga must start for ev.
func refund(ev seckill.PaymentEvent, reason seckill.PaymentOutcome) seckill.RefundInput {
	return seckill.RefundInput{
		EventID: ev.EventID, OrderID: input.OrderID, SaleID: input.SaleID, UserID: input.UserID,
		PaymentIntentID: ev.PaymentIntentID, AmountCents: ev.AmountCents, Currency: ev.Currency, Reason: reason,
	}
}

func TestOrderSaga_SignalOfAnEventAlreadyActedOnChangesNothing(t *testing.T) {
	// The first attempt of the first workflow task paid the order from a
	// pending payment and failed to complete (the same event's signal came
	// in); the retry finds the order PAID and the event handled.
	s := newSagaTest(t)
	ev := receivedAt(succeeded("evt_1"), time.Second)
	s.startOrder = func(int) (seckill.StartOrderResult, error) {
		return seckill.StartOrderResult{Status: seckill.StatusPaid, AmountCents: 990, Currency: "usd", PayBy: payBy, Handled: []string{"evt_1"}}, nil
	}
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(seckill.PaymentSignal, ev) }, 0)

	require.Equal(t, paid(), s.run(t))
	require.Empty(t, s.refunds, "not refunded as a duplicate of itself")
}

func TestOrderSaga_PaymentPendingForADecidedOrderIsRefunded(t *testing.T) {
	s := newSagaTest(t)
	ev := receivedAt(succeeded("evt_late"), paymentTimeout+time.Second)
	s.startOrder = func(int) (seckill.StartOrderResult, error) {
		return seckill.StartOrderResult{Status: seckill.StatusClosed, CloseReason: seckill.ClosePaymentTimeout,
			AmountCents: 990, Currency: "usd", PayBy: payBy, Payments: []seckill.PaymentEvent{ev}}, nil
	}

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Equal(t, []seckill.RefundInput{refund(ev, seckill.OutcomeLate)}, s.refunds)
}

// orderIntent is the order's PaymentIntent with a provider that makes one
// per order (Stripe).
const orderIntent = "pi_order_42"

// withIntents is StartOrder's answer for a fresh order whose provider
// makes a payment object per order.
func withIntents(payments ...seckill.PaymentEvent) seckill.StartOrderResult {
	r := awaiting(payments...)
	r.Intents = true
	return r
}

// ownPayment is a successful payment taken by the order's own PaymentIntent.
func ownPayment(eventID string) seckill.PaymentEvent {
	ev := succeeded(eventID)
	ev.PaymentIntentID = orderIntent
	return ev
}

// With Stripe: the PaymentIntent is made as the order awaits payment; a
// payment through it confirms the order, and nothing is cancelled.
func TestOrderSaga_IntentPaidBeforeTheDeadline(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
	s.pay(10*time.Second, ownPayment("evt_own"))

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "MakePaymentIntent", "ConfirmPayment"}, s.calls)
	require.Equal(t, []seckill.ConfirmPaymentInput{confirmed(ownPayment("evt_own"), 10*time.Second)}, s.confirms)
}

// At the deadline the PaymentIntent is cancelled before the unit is given
// back; on a cancel and on a failed payment too.
func TestOrderSaga_IntentCancelledBeforeTheUnitIsGivenBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal func(s *sagaTest)
		reason seckill.CloseReason
	}{
		{"deadline", func(*sagaTest) {}, seckill.ClosePaymentTimeout},
		{"cancel", func(s *sagaTest) { s.signal(5*time.Second, seckill.CancelSignal, nil) }, seckill.CloseCancelled},
		{"failed payment", func(s *sagaTest) { s.pay(5*time.Second, failed("evt_failed")) }, seckill.ClosePaymentFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSagaTest(t)
			s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
			tc.signal(s)

			require.Equal(t, closed(tc.reason), s.run(t))
			require.Equal(t, []string{"StartOrder", "MakePaymentIntent", "CancelPaymentIntent", "ReleaseOrder"}, s.calls)
			require.Equal(t, []seckill.IntentInput{{OrderID: input.OrderID, IntentID: orderIntent}}, s.cancels)
		})
	}
}

// The cancel finds the PaymentIntent already succeeded (the buyer paid in
// time by Stripe's clock; its event is still on its way): the order is
// PAID when the event comes, however late, and no unit is given back.
func TestOrderSaga_IntentFoundSucceededAtTheDeadlineIsPaid(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
	s.cancelIntent = func(int) (seckill.Intent, error) {
		return seckill.Intent{Provider: "stripe", ID: orderIntent, Status: seckill.IntentSucceeded, AmountCents: 990, Currency: "usd"}, nil
	}
	late := paymentTimeout + time.Minute
	s.pay(late, ownPayment("evt_own"))

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "MakePaymentIntent", "CancelPaymentIntent", "ConfirmPayment"}, s.calls)
	require.Equal(t, []seckill.ConfirmPaymentInput{confirmed(ownPayment("evt_own"), late)}, s.confirms)
	require.Empty(t, s.refunds)
}

// A payment through another PaymentIntent after the deadline is refunded
// (late), as with any provider; the order's own is cancelled.
func TestOrderSaga_IntentLatePaymentElsewhereIsRefunded(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
	s.pay(paymentTimeout+time.Second, succeeded("evt_elsewhere"))

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Len(t, s.refunds, 1)
	require.Equal(t, "evt_elsewhere", s.refunds[0].EventID)
	require.Equal(t, seckill.OutcomeLate, s.refunds[0].Reason)
	require.Contains(t, s.calls, "CancelPaymentIntent")
}

// A provider that does not answer is asked again until it does; the unit
// is given back only after the cancel succeeded.
func TestOrderSaga_IntentCancelRetriedUntilTheProviderAnswers(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
	s.cancelIntent = func(attempt int) (seckill.Intent, error) {
		if attempt < 3 {
			return seckill.Intent{}, errors.New("stripe: 503 service unavailable")
		}
		return seckill.Intent{Provider: "stripe", ID: orderIntent, Status: seckill.IntentCanceled}, nil
	}

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Len(t, s.cancels, 3)
	require.Equal(t, []string{"StartOrder", "MakePaymentIntent", "CancelPaymentIntent", "CancelPaymentIntent", "CancelPaymentIntent", "ReleaseOrder"}, s.calls)
}

// A payment received by pay_by whose signal never came (the webhook's
// signal failed after recording it; redelivery comes later than the
// grace): the deadline's close finds it recorded and refuses, and the
// saga pays the order with it. No unit is given back, nothing refunded.
func TestOrderSaga_PaymentRecordedInTimeButNeverSignalledPays(t *testing.T) {
	s := newSagaTest(t)
	ev := receivedAt(succeeded("evt_unsignalled"), paymentTimeout-time.Minute)
	s.releaseOrder = func() (seckill.CloseReason, error) {
		return "", temporal.NewNonRetryableApplicationError("payment received in time", seckill.ErrTypePaidInTime, nil, ev)
	}

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "ReleaseOrder", "ConfirmPayment"}, s.calls)
	require.Equal(t, []seckill.ConfirmPaymentInput{confirmed(ev, paymentTimeout+deliveryGrace)}, s.confirms)
	require.Empty(t, s.releases)
	require.Empty(t, s.refunds)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusPaid}, s.statuses)
}

// A refund the provider keeps refusing runs beside the wait: the deadline
// still closes the order on time, and the saga ends once the refund is
// done.
func TestOrderSaga_ARefundThatKeepsFailingDoesNotHoldTheDeadline(t *testing.T) {
	s := newSagaTest(t)
	// A payment of the wrong amount 5 s before pay_by: refunded, and the
	// refund's retries run on past the deadline.
	s.pay(paymentTimeout-5*time.Second, seckill.PaymentEvent{EventID: "evt_wrong", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_wrong",
		AmountCents: 1, Currency: "usd"})
	var attempts int
	s.refundFn = func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		// 8 failures, about 30 s of retries (the test suite stops an
		// activity's retries at 10 attempts; a real server never does).
		if attempts++; attempts < 9 {
			return errors.New("stripe: 500")
		}
		return nil
	}

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Equal(t, []seckill.ReleaseOrderInput{closeAs(seckill.ClosePaymentTimeout, paymentTimeout+deliveryGrace, "")}, s.closes,
		"closed at its deadline, not after the refund")
	require.Equal(t, 9, attempts)
}

// A PaymentIntent found succeeded at the deadline whose event never comes
// (an endpoint not subscribed to it, a rotated webhook secret): after
// ownPaymentWait the order is paid from the provider's answer, and the
// event, if it comes later, reports the payment that paid the order.
func TestOrderSaga_IntentSucceededWithoutItsEventIsPaidFromTheProvidersAnswer(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
	s.cancelIntent = func(int) (seckill.Intent, error) {
		return seckill.Intent{Provider: "stripe", ID: orderIntent, Status: seckill.IntentSucceeded, AmountCents: 990, Currency: "usd"}, nil
	}

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"StartOrder", "MakePaymentIntent", "CancelPaymentIntent", "ConfirmPayment"}, s.calls)
	require.Len(t, s.confirms, 1)
	require.Equal(t, orderIntent, s.confirms[0].PaymentIntentID)
	require.Equal(t, start.Add(paymentTimeout+deliveryGrace+10*time.Minute), s.confirms[0].PaidAt)
	require.Empty(t, s.refunds)
}

// A provider that keeps failing to make the order's PaymentIntent is
// asked until pay_by, not for ever: the order then closes at its deadline
// like any unpaid one (nothing to cancel), and its unit goes back.
func TestOrderSaga_IntentThatCannotBeMadeDoesNotHoldTheDeadline(t *testing.T) {
	s := newSagaTest(t)
	s.startOrder = func(int) (seckill.StartOrderResult, error) { return withIntents(), nil }
	s.makeIntentFails = true

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	// The test environment may still be retrying the abandoned
	// MakePaymentIntent on its own goroutine: read under the lock.
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotContains(t, s.calls, "CancelPaymentIntent")
	require.Len(t, s.closes, 1)
	require.False(t, s.closes[0].ClosedAt.After(start.Add(paymentTimeout+deliveryGrace+time.Minute)), "closed at %s", s.closes[0].ClosedAt)
}

// The order was PAID by an earlier attempt of the release step (a payment
// recorded in time, found as it closed; the workflow task was retried): the
// step answers OrderPaid with the paying PaymentIntent, and the signal of
// that same payment is the payment that paid it (APPLIED), not a second
// one to refund as a duplicate. Seen in the operator-cancellation race.
func TestOrderSaga_OrderPaidByAnEarlierAttemptKeepsItsPayment(t *testing.T) {
	s := newSagaTest(t)
	ev := succeeded("evt_1")
	s.releaseOrder = func() (seckill.CloseReason, error) {
		s.env.SignalWorkflow(seckill.PaymentSignal, receivedAt(ev, time.Minute-time.Second))
		return "", temporal.NewNonRetryableApplicationError("the order is paid", seckill.ErrTypeOrderPaid, nil, ev.PaymentIntentID)
	}
	s.signal(time.Minute, seckill.CancelSignal, nil)

	require.Equal(t, paid(), s.run(t))
	require.Empty(t, s.refunds, "the payment that paid the order is kept")
	require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_1", seckill.OutcomeApplied)}, s.outcomes)
}

// A payment that reaches the saga while it waits, after its decision, for
// a refund it started is handled too (refunded as late), never left
// unread when the saga ends.
func TestOrderSaga_APaymentWhileARefundRunsIsHandled(t *testing.T) {
	s := newSagaTest(t)
	s.pay(paymentTimeout-5*time.Second, seckill.PaymentEvent{EventID: "evt_wrong", Type: seckill.PaymentSucceeded, PaymentIntentID: "pi_wrong",
		AmountCents: 1, Currency: "usd"})
	var attempts int
	s.refundFn = func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if attempts++; attempts < 9 { // about 30 s of retries
			return errors.New("stripe: 500")
		}
		return nil
	}
	s.pay(paymentTimeout+10*time.Second, succeeded("evt_late"))

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	var refunded []string
	for _, r := range s.refunds {
		refunded = append(refunded, r.EventID)
	}
	require.Contains(t, refunded, "evt_late")
}
