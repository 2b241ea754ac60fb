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
	"github.com/seckill/seckill/workflows"
)

// The sale's payment window. The start time is whole milliseconds because
// the saga truncates its deadline to the millisecond: with a ragged start
// the timer would be a fraction of a millisecond short of 15 minutes.
const paymentTimeout = 15 * time.Minute

var (
	start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	input = seckill.SagaInput{OrderID: 42, SaleID: 7, UserID: "u-1", AdmittedAt: start}
)

// sagaTest runs one OrderSaga against mocked activities and records every
// activity call in the order it was made.
type sagaTest struct {
	env *testsuite.TestWorkflowEnvironment

	// Behaviour of the mocked activities; set before run.
	createOrder func() (seckill.CreateOrderResult, error)
	lockStock   func(attempt int) error
	createDelay time.Duration // workflow time CreateOrder takes
	lockDelay   time.Duration // workflow time LockStock takes
	closeDelay  time.Duration // workflow time CloseOrder takes

	// The mocks run on their own goroutines.
	mu       sync.Mutex
	calls    []string
	locks    []seckill.LockStockInput
	confirms []seckill.ConfirmPaymentInput
	closes   []seckill.CloseOrderInput
	releases []seckill.ReleaseClaimInput
	outcomes []seckill.PaymentOutcomeInput
	refunds  []seckill.RefundInput
	statuses []seckill.OrderStatus // OrderStatus search attribute, as upserted
	timers   []time.Duration
}

func newSagaTest(t *testing.T) *sagaTest {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	s := &sagaTest{
		env: suite.NewTestWorkflowEnvironment(),
		createOrder: func() (seckill.CreateOrderResult, error) {
			return seckill.CreateOrderResult{
				Status: seckill.StatusQueued, AmountCents: 990, Currency: "usd", PaymentTimeout: paymentTimeout,
			}, nil
		},
		lockStock: func(int) error { return nil },
	}
	s.env.SetStartTime(start)
	// The relay starts every saga with these attributes; the test server
	// needs no namespace registration, so this is only for realism.
	require.NoError(t, s.env.SetTypedSearchAttributesOnStart(workflows.StartOptions(input, "test").TypedSearchAttributes))
	s.env.RegisterWorkflow(workflows.OrderSaga)

	acts := &activities.Activities{}
	s.env.RegisterActivity(acts)
	s.env.OnActivity(acts.CreateOrder, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		return s.createDelay
	}).Return(
		func(context.Context, seckill.CreateOrderInput) (seckill.CreateOrderResult, error) {
			s.record("CreateOrder")
			return s.createOrder()
		}).Maybe()
	s.env.OnActivity(acts.LockStock, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		return s.lockDelay
	}).Return(
		func(_ context.Context, in seckill.LockStockInput) error {
			s.mu.Lock()
			s.calls = append(s.calls, "LockStock")
			s.locks = append(s.locks, in)
			attempt := len(s.locks)
			s.mu.Unlock()
			return s.lockStock(attempt)
		}).Maybe()
	s.env.OnActivity(acts.ConfirmPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.ConfirmPaymentInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, "ConfirmPayment")
			s.confirms = append(s.confirms, in)
			return nil
		}).Maybe()
	s.env.OnActivity(acts.CloseOrder, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		return s.closeDelay
	}).Return(
		func(_ context.Context, in seckill.CloseOrderInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, "CloseOrder")
			s.closes = append(s.closes, in)
			return nil
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
			defer s.mu.Unlock()
			s.calls = append(s.calls, "RefundPayment")
			s.refunds = append(s.refunds, in)
			return nil
		}).Maybe()
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		// Runs on the workflow's goroutine, where require must not stop
		// the test: an upsert without OrderStatus shows up as "".
		status, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(seckill.OrderStatusAttr)
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

func (s *sagaTest) record(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

// signal sends a signal at workflow time start+at.
func (s *sagaTest) signal(at time.Duration, name string, arg any) {
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(name, arg) }, at)
}

func (s *sagaTest) pay(at time.Duration, ev seckill.PaymentEvent) {
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

func TestOrderSaga_PaidConfirmsOrder(t *testing.T) {
	s := newSagaTest(t)
	s.pay(5*time.Minute, succeeded("evt_1"))

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "ConfirmPayment", "RecordPaymentOutcome"}, s.calls)
	require.Equal(t, []seckill.LockStockInput{{OrderID: input.OrderID, PayBy: start.Add(paymentTimeout)}}, s.locks)
	require.Equal(t, []seckill.ConfirmPaymentInput{{
		OrderID: input.OrderID, EventID: "evt_1", PaymentIntentID: "pi_evt_1", PaidAt: start.Add(5 * time.Minute),
	}}, s.confirms)
	require.Empty(t, s.closes)
	require.Empty(t, s.releases)
	require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_1", seckill.OutcomeApplied)}, s.outcomes)
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
	s.pay(3*time.Minute, seckill.PaymentEvent{
		EventID: "evt_f", Type: seckill.PaymentFailed, PaymentIntentID: "pi_f", AmountCents: 990, Currency: "usd",
	})

	require.Equal(t, closed(seckill.ClosePaymentFailed), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "CloseOrder", "ReleaseClaim", "RecordPaymentOutcome"}, s.calls)
	require.Empty(t, s.refunds, "a failed payment took no money")
	require.Empty(t, s.confirms)
	require.Equal(t, []seckill.CloseOrderInput{{
		OrderID: input.OrderID, Reason: seckill.ClosePaymentFailed, ClosedAt: start.Add(3 * time.Minute),
	}}, s.closes)
	require.Equal(t, []seckill.ReleaseClaimInput{release(true)}, s.releases)
	require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_f", seckill.OutcomeApplied)}, s.outcomes)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusClosed}, s.statuses)
}

func TestOrderSaga_TimeoutClosesAtDeadlineAndRecordsLatePayment(t *testing.T) {
	s := newSagaTest(t)
	// CloseOrder takes a second, so a payment half a second after the
	// deadline reaches the saga while it compensates: it must be recorded
	// LATE (the API refunds it), never applied.
	s.closeDelay = time.Second
	s.pay(paymentTimeout+500*time.Millisecond, succeeded("evt_late"))

	require.Equal(t, closed(seckill.ClosePaymentTimeout), s.run(t))
	require.Equal(t, []time.Duration{paymentTimeout}, s.timers)
	require.Equal(t, []string{"CreateOrder", "LockStock", "CloseOrder", "ReleaseClaim", "RecordPaymentOutcome", "RefundPayment"}, s.calls)
	require.Equal(t, []seckill.RefundInput{refund(succeeded("evt_late"), seckill.OutcomeLate)}, s.refunds)
	require.Empty(t, s.confirms)
	require.Equal(t, []seckill.CloseOrderInput{{
		OrderID: input.OrderID, Reason: seckill.ClosePaymentTimeout, ClosedAt: start.Add(paymentTimeout),
	}}, s.closes)
	require.Equal(t, []seckill.ReleaseClaimInput{release(true)}, s.releases)
	require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_late", seckill.OutcomeLate)}, s.outcomes)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusClosed}, s.statuses)
}

func TestOrderSaga_PaymentJustBeforeDeadlinePays(t *testing.T) {
	s := newSagaTest(t)
	s.pay(paymentTimeout-time.Millisecond, succeeded("evt_1"))

	require.Equal(t, paid(), s.run(t))
	require.Len(t, s.confirms, 1)
	require.Empty(t, s.closes)
	require.Empty(t, s.releases)
}

func TestOrderSaga_SoldOutInDatabaseForgetsClaimWithoutUnit(t *testing.T) {
	s := newSagaTest(t)
	s.lockStock = func(int) error {
		return temporal.NewNonRetryableApplicationError("no available unit in the database", seckill.ErrTypeSoldOut, nil)
	}

	// LockStock closes the order itself, so there is no CloseOrder; the
	// database never had the unit, so Redis gets none back.
	require.Equal(t, closed(seckill.CloseSoldOut), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "ReleaseClaim"}, s.calls)
	require.Equal(t, []seckill.ReleaseClaimInput{release(false)}, s.releases)
	require.Empty(t, s.closes)
	require.Empty(t, s.confirms)
	require.Empty(t, s.timers)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusClosed}, s.statuses)
}

// TestOrderSaga_PaymentAtDeadlineInstantHasOneOutcome sends the payment at
// exactly the deadline. The assertion is the weak one, "exactly one
// outcome", because the test environment cannot put both events in one
// workflow task: it fires every timer due at an instant before it handles
// anything those timers' callbacks post, so the saga's timer runs its own
// workflow task and the signal, posted by the callback's timer, arrives in
// the next one. That outcome is CLOSED with the payment recorded LATE; the
// rule "a payment in the deadline's task wins" is asserted by
// TestOrderSaga_PaymentInDeadlineTaskWins instead.
func TestOrderSaga_PaymentAtDeadlineInstantHasOneOutcome(t *testing.T) {
	s := newSagaTest(t)
	s.pay(paymentTimeout, succeeded("evt_1"))

	res := s.run(t)
	switch res {
	case paid():
		require.Len(t, s.confirms, 1)
		require.Empty(t, s.closes)
		require.Empty(t, s.releases)
		require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_1", seckill.OutcomeApplied)}, s.outcomes)
	case closed(seckill.ClosePaymentTimeout):
		require.Empty(t, s.confirms)
		require.Len(t, s.closes, 1)
		require.Equal(t, []seckill.ReleaseClaimInput{release(true)}, s.releases)
		// Not lost: recorded for a refund.
		require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_1", seckill.OutcomeLate)}, s.outcomes)
	default:
		t.Fatalf("unexpected result %+v", res)
	}
	require.False(t, len(s.confirms) > 0 && len(s.closes) > 0, "both confirmed and closed")
}

// TestOrderSaga_PaymentInDeadlineTaskWins delivers the payment without a
// workflow task of its own just before the deadline, so the saga first sees
// it in the same workflow task as the fired timer: the case the saga's doc
// comment decides in the buyer's favour. The signal reaches the channel
// before the timer fires, so the selector takes the payment branch; the
// drain in the timer's branch (timer event first in the task) cannot be
// produced by this test environment.
func TestOrderSaga_PaymentInDeadlineTaskWins(t *testing.T) {
	s := newSagaTest(t)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflowSkippingWorkflowTask(seckill.PaymentSignal, succeeded("evt_1"))
	}, paymentTimeout-time.Millisecond)

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "ConfirmPayment", "RecordPaymentOutcome"}, s.calls)
	require.Equal(t, start.Add(paymentTimeout), s.confirms[0].PaidAt, "decided in the deadline's task")
	require.Empty(t, s.closes)
	require.Empty(t, s.releases)
	require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_1", seckill.OutcomeApplied)}, s.outcomes)
}

func TestOrderSaga_FailedActivityIsRetriedUntilItSucceeds(t *testing.T) {
	s := newSagaTest(t)
	s.lockStock = func(attempt int) error {
		if attempt == 1 {
			return errors.New("connection reset by peer")
		}
		return nil
	}
	s.pay(time.Minute, succeeded("evt_1"))

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "LockStock", "ConfirmPayment", "RecordPaymentOutcome"}, s.calls)
	require.Len(t, s.locks, 2)
	require.Equal(t, s.locks[0], s.locks[1], "a retry sends the same input")
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusPaid}, s.statuses)
}

func TestOrderSaga_MismatchedPaymentIsRecordedNotApplied(t *testing.T) {
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
			require.Equal(t, []seckill.PaymentOutcomeInput{
				outcome("evt_wrong", seckill.OutcomeMismatch),
				outcome("evt_right", seckill.OutcomeApplied),
			}, s.outcomes)
			require.Equal(t, []seckill.RefundInput{refund(wrong, seckill.OutcomeMismatch)}, s.refunds, "the wrong payment is given back")
		})
	}
}

func TestOrderSaga_DuplicateEventChangesNothing(t *testing.T) {
	wrong := succeeded("evt_wrong")
	wrong.AmountCents = 1

	t.Run("while waiting", func(t *testing.T) {
		s := newSagaTest(t)
		s.pay(time.Minute, wrong)
		s.pay(2*time.Minute, wrong)
		s.pay(3*time.Minute, succeeded("evt_1"))

		require.Equal(t, paid(), s.run(t))
		require.Equal(t, []seckill.PaymentOutcomeInput{
			outcome("evt_wrong", seckill.OutcomeMismatch),
			outcome("evt_1", seckill.OutcomeApplied),
		}, s.outcomes)
	})
	t.Run("after deciding", func(t *testing.T) {
		s := newSagaTest(t)
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(seckill.PaymentSignal, succeeded("evt_1"))
			s.env.SignalWorkflow(seckill.PaymentSignal, succeeded("evt_1"))
		}, time.Minute)

		require.Equal(t, paid(), s.run(t))
		require.Len(t, s.confirms, 1)
		require.Equal(t, []seckill.PaymentOutcomeInput{outcome("evt_1", seckill.OutcomeApplied)}, s.outcomes)
		require.Empty(t, s.refunds, "the same event twice is one payment")
	})
	t.Run("a second payment for a paid order is refunded", func(t *testing.T) {
		s := newSagaTest(t)
		s.env.RegisterDelayedCallback(func() {
			s.env.SignalWorkflow(seckill.PaymentSignal, succeeded("evt_1"))
			s.env.SignalWorkflow(seckill.PaymentSignal, succeeded("evt_2"))
		}, time.Minute)

		require.Equal(t, paid(), s.run(t))
		require.Len(t, s.confirms, 1)
		require.Equal(t, []seckill.PaymentOutcomeInput{
			outcome("evt_1", seckill.OutcomeApplied),
			outcome("evt_2", seckill.OutcomeDuplicate),
		}, s.outcomes)
		require.Equal(t, []seckill.RefundInput{refund(succeeded("evt_2"), seckill.OutcomeDuplicate)}, s.refunds)
	})
}

func TestOrderSaga_CancelSignalClosesAsCancelled(t *testing.T) {
	s := newSagaTest(t)
	s.signal(4*time.Minute, seckill.CancelSignal, nil)

	require.Equal(t, closed(seckill.CloseCancelled), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "CloseOrder", "ReleaseClaim"}, s.calls)
	require.Equal(t, []seckill.CloseOrderInput{{
		OrderID: input.OrderID, Reason: seckill.CloseCancelled, ClosedAt: start.Add(4 * time.Minute),
	}}, s.closes)
	require.Equal(t, []seckill.ReleaseClaimInput{release(true)}, s.releases)
	require.Empty(t, s.confirms)
	require.Empty(t, s.outcomes)
}

func TestOrderSaga_WorkflowCancelStillCompensates(t *testing.T) {
	s := newSagaTest(t)
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, 4*time.Minute)

	require.Equal(t, closed(seckill.CloseCancelled), s.run(t))
	require.Equal(t, []string{"CreateOrder", "LockStock", "CloseOrder", "ReleaseClaim"}, s.calls)
	require.Equal(t, []seckill.ReleaseClaimInput{release(true)}, s.releases)
	require.Equal(t, []seckill.OrderStatus{seckill.StatusAwaitingPayment, seckill.StatusClosed}, s.statuses)
}

// TestOrderSaga_WorkflowCancelBeforeWaitStillCompensates cancels the
// workflow while one of the steps before the wait runs: the claim and the
// unit LockStock locks must still be given back, not left behind by a saga
// that stopped half way.
func TestOrderSaga_WorkflowCancelBeforeWaitStillCompensates(t *testing.T) {
	tests := []struct {
		name                   string
		createDelay, lockDelay time.Duration
	}{
		{"during CreateOrder", 2 * time.Second, 0},
		{"during LockStock", 0, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSagaTest(t)
			s.createDelay, s.lockDelay = tt.createDelay, tt.lockDelay
			s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Second)

			require.Equal(t, closed(seckill.CloseCancelled), s.run(t))
			require.Equal(t, []string{"CreateOrder", "LockStock", "CloseOrder", "ReleaseClaim"}, s.calls)
			require.Equal(t, []seckill.CloseOrderInput{{
				OrderID: input.OrderID, Reason: seckill.CloseCancelled, ClosedAt: start.Add(2 * time.Second),
			}}, s.closes)
			require.Equal(t, []seckill.ReleaseClaimInput{release(true)}, s.releases)
		})
	}
}

func TestOrderSaga_ResumesPaidOrderWithoutLocking(t *testing.T) {
	s := newSagaTest(t)
	s.createOrder = func() (seckill.CreateOrderResult, error) {
		return seckill.CreateOrderResult{
			Status: seckill.StatusPaid, AmountCents: 990, Currency: "usd", PaymentTimeout: paymentTimeout,
		}, nil
	}

	require.Equal(t, paid(), s.run(t))
	require.Equal(t, []string{"CreateOrder"}, s.calls)
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
			s.createOrder = func() (seckill.CreateOrderResult, error) {
				return seckill.CreateOrderResult{
					Status: seckill.StatusClosed, CloseReason: tt.reason,
					AmountCents: 990, Currency: "usd", PaymentTimeout: paymentTimeout,
				}, nil
			}

			require.Equal(t, closed(tt.reason), s.run(t))
			require.Equal(t, []string{"CreateOrder", "ReleaseClaim"}, s.calls)
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
