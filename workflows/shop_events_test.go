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

// shopTest runs one order's ShopEvents against mocked activities.
type shopTest struct {
	env  *testsuite.TestWorkflowEnvironment
	mu   sync.Mutex
	sent []string // ids, in the order sent successfully
	// tries counts send attempts per id.
	tries map[string]int
	kept  []seckill.KeepShopEventsInput
	// send answers a send attempt.
	send func(ev seckill.ShopEvent, try int) error
}

func newShopTest(t *testing.T) *shopTest {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	s := &shopTest{env: suite.NewTestWorkflowEnvironment(), tries: map[string]int{},
		send: func(seckill.ShopEvent, int) error { return nil }}
	s.env.SetStartTime(start)
	s.env.RegisterWorkflow(workflows.ShopEvents)
	acts := &activities.Activities{}
	s.env.RegisterActivity(acts)
	s.env.OnActivity(acts.SendShopEvent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, ev seckill.ShopEvent) error {
			s.mu.Lock()
			s.tries[ev.ID]++
			try := s.tries[ev.ID]
			s.mu.Unlock()
			if err := s.send(ev, try); err != nil {
				return err
			}
			s.mu.Lock()
			s.sent = append(s.sent, ev.ID)
			s.mu.Unlock()
			return nil
		}).Maybe()
	s.env.OnActivity(acts.KeepShopEvents, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in seckill.KeepShopEventsInput) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.kept = append(s.kept, in)
			return nil
		}).Maybe()
	return s
}

func shopEvent(typ seckill.ShopEventType) seckill.ShopEvent {
	o := &seckill.Order{ID: 42, SaleID: 7, UserID: "u-1", Status: seckill.StatusAwaitingPayment, CreatedAt: start}
	return seckill.NewShopEvent(o, typ, start)
}

// signalAt signals ev after d of workflow time.
func (s *shopTest) signalAt(d time.Duration, ev seckill.ShopEvent) {
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(seckill.ShopEventSignal, ev) }, d)
}

func TestShopEvents_InOrderOnceEachThenIdleEnds(t *testing.T) {
	s := newShopTest(t)
	awaiting, paid, refunded := shopEvent(seckill.ShopOrderAwaitingPayment), shopEvent(seckill.ShopOrderPaid), shopEvent(seckill.ShopOrderRefunded)
	s.signalAt(0, awaiting)
	s.signalAt(time.Millisecond, awaiting) // a step retried after telling
	s.signalAt(5*time.Second, paid)
	s.signalAt(20*time.Second, refunded)
	s.env.ExecuteWorkflow(workflows.ShopEvents, seckill.ShopEventsInput{OrderID: 42})
	require.True(t, s.env.IsWorkflowCompleted())
	require.NoError(t, s.env.GetWorkflowError())
	require.Equal(t, []string{awaiting.ID, paid.ID, refunded.ID}, s.sent)
	require.Empty(t, s.kept)
}

// The SDK's test environment stops retrying after 10 attempts (a server
// retries for the whole ScheduleToClose), so the outages here are minutes.
func TestShopEvents_AReceiverDownGetsEverythingInOrderWhenBack(t *testing.T) {
	s := newShopTest(t)
	down := start.Add(5 * time.Minute)
	s.send = func(seckill.ShopEvent, int) error {
		if s.env.Now().Before(down) {
			return errors.New("connection refused")
		}
		return nil
	}
	awaiting, paid := shopEvent(seckill.ShopOrderAwaitingPayment), shopEvent(seckill.ShopOrderPaid)
	s.signalAt(0, awaiting)
	s.signalAt(time.Minute, paid)
	s.env.ExecuteWorkflow(workflows.ShopEvents, seckill.ShopEventsInput{OrderID: 42})
	require.NoError(t, s.env.GetWorkflowError())
	require.Equal(t, []string{awaiting.ID, paid.ID}, s.sent)
	require.Greater(t, s.tries[awaiting.ID], 5, "retried with backoff")
	require.Equal(t, 1, s.tries[paid.ID], "sent after the first, at once")
	require.Empty(t, s.kept)
}

func TestShopEvents_GivenUpAfterRetryForKeepsTheEventAndThoseBehindIt(t *testing.T) {
	s := newShopTest(t)
	var lastTry time.Time
	s.send = func(seckill.ShopEvent, int) error {
		lastTry = s.env.Now()
		return errors.New("the shop answered 500")
	}
	awaiting, closed := shopEvent(seckill.ShopOrderAwaitingPayment), shopEvent(seckill.ShopOrderClosed)
	s.signalAt(0, awaiting)
	s.signalAt(5*time.Second, closed)
	// 20 s of retries, the backoff capped at RetryFor/8 = 2.5 s: tries at
	// 0, 1, 3, 5.5, ... 18 s; the next would be past the 20 s.
	s.env.ExecuteWorkflow(workflows.ShopEvents, seckill.ShopEventsInput{OrderID: 42, RetryFor: 20 * time.Second})
	require.NoError(t, s.env.GetWorkflowError())
	require.Empty(t, s.sent)
	require.Len(t, s.kept, 1)
	require.Equal(t, []string{awaiting.ID, closed.ID}, ids(s.kept[0].Events), "in order, the later one behind the first")
	require.Contains(t, s.kept[0].Error, "500")
	require.Equal(t, 9, s.tries[awaiting.ID], "retried for the whole window")
	require.True(t, start.Add(18*time.Second).Equal(lastTry), "last try at %s", lastTry)
}

func TestShopEvents_AHeldEventIsKeptAtOnceAndARedeliveryGoesOut(t *testing.T) {
	s := newShopTest(t)
	s.send = func(ev seckill.ShopEvent, _ int) error {
		if ev.Redelivery {
			return nil
		}
		return temporal.NewNonRetryableApplicationError("held", seckill.ErrTypeShopEventHeld, nil)
	}
	refunded := shopEvent(seckill.ShopOrderRefunded)
	s.signalAt(0, refunded)
	again := shopEvent(seckill.ShopOrderClosed)
	again.Redelivery = true
	s.signalAt(time.Second, again)
	s.env.ExecuteWorkflow(workflows.ShopEvents, seckill.ShopEventsInput{OrderID: 42})
	require.NoError(t, s.env.GetWorkflowError())
	require.Equal(t, 1, s.tries[refunded.ID], "held: not retried")
	require.Len(t, s.kept, 1)
	require.Equal(t, []string{again.ID}, s.sent)
}

func ids(evs []seckill.ShopEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// An operator's "Request Cancellation" while an event is retried keeps it
// and the events behind it: cancelling never drops an event.
func TestShopEvents_CancelledKeepsWhatItHadNotSent(t *testing.T) {
	s := newShopTest(t)
	s.send = func(seckill.ShopEvent, int) error { return errors.New("connection refused") }
	awaiting, paid := shopEvent(seckill.ShopOrderAwaitingPayment), shopEvent(seckill.ShopOrderPaid)
	s.signalAt(0, awaiting)
	s.signalAt(time.Second, paid)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, time.Minute)
	s.env.ExecuteWorkflow(workflows.ShopEvents, seckill.ShopEventsInput{OrderID: 42})
	require.True(t, s.env.IsWorkflowCompleted())
	require.Empty(t, s.sent)
	require.Len(t, s.kept, 1)
	require.Equal(t, []string{awaiting.ID, paid.ID}, ids(s.kept[0].Events))
}

// Cancelled while idle, with an event just signalled: kept too.
func TestShopEvents_CancelledWhileIdleKeepsWhatCame(t *testing.T) {
	s := newShopTest(t)
	awaiting, paid := shopEvent(seckill.ShopOrderAwaitingPayment), shopEvent(seckill.ShopOrderPaid)
	s.signalAt(0, awaiting)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(seckill.ShopEventSignal, paid)
		s.env.CancelWorkflow()
	}, 10*time.Second)
	s.env.ExecuteWorkflow(workflows.ShopEvents, seckill.ShopEventsInput{OrderID: 42})
	require.True(t, s.env.IsWorkflowCompleted())
	require.Equal(t, []string{awaiting.ID}, s.sent)
	require.Len(t, s.kept, 1)
	require.Equal(t, []string{paid.ID}, ids(s.kept[0].Events))
}
