//go:build !slim

package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/seckill/seckill"
)

// steps is what one order's saga cost Temporal.
type steps struct {
	events, workflowTasks, activityTasks, localActivities int
}

func (s steps) String() string {
	return fmt.Sprintf("%2d history events, %d workflow tasks, %d activity tasks, %d local activities",
		s.events, s.workflowTasks, s.activityTasks, s.localActivities)
}

// sagaSteps counts the history of a finished order saga.
func (s *system) sagaSteps(orderID string) steps {
	s.t.Helper()
	iter := s.temporal.GetWorkflowHistory(context.Background(), seckill.OrderWorkflowID(mustInt(s.t, orderID)), "", false, 0)
	var n steps
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(s.t, err)
		n.events++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			n.workflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			n.activityTasks++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
				n.localActivities++
			}
		}
	}
	return n
}

// TestSaga_TemporalStepsPerOrder counts what each ending of an order costs
// Temporal (BENCHMARKS.md quotes it) and holds the saga to its budget: a
// paid and a timed-out order in at most 3 workflow tasks and 20 history
// events.
func TestSaga_TemporalStepsPerOrder(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(4, 5*time.Second)
	ids := map[string]string{}
	for _, user := range []string{"paid", "failed", "cancelled", "timed_out"} {
		r := s.claim(sale, user)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		ids[user] = r.json(t)["order_id"].(string)
	}
	for user, id := range ids {
		s.waitOrder(id, user, seckill.StatusAwaitingPayment, 20*time.Second)
	}
	require.Equal(t, http.StatusOK, s.webhook("evt_steps_paid", seckill.PaymentSucceeded, ids["paid"], 990).status)
	require.Equal(t, http.StatusOK, s.webhook("evt_steps_failed", seckill.PaymentFailed, ids["failed"], 990).status)
	r := s.mustDo("POST", "/api/v1/orders/"+ids["cancelled"]+"/cancel", s.token("cancelled", false), nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	s.waitOrder(ids["paid"], "paid", seckill.StatusPaid, 20*time.Second)
	for _, user := range []string{"failed", "cancelled", "timed_out"} {
		s.waitOrder(ids[user], user, seckill.StatusClosed, 30*time.Second)
	}
	// The saga's last step publishes the change before its workflow task
	// completes: wait for the workflows to close.
	var report []string
	got := map[string]steps{}
	for _, user := range []string{"paid", "failed", "cancelled", "timed_out"} {
		require.Eventually(t, func() bool {
			desc, err := s.temporal.DescribeWorkflowExecution(context.Background(), seckill.OrderWorkflowID(mustInt(t, ids[user])), "")
			return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, 20*time.Second, 50*time.Millisecond)
		got[user] = s.sagaSteps(ids[user])
		report = append(report, fmt.Sprintf("%-10s %s", user, got[user]))
	}
	t.Logf("Temporal steps per order:\n%s", strings.Join(report, "\n"))
	for _, user := range []string{"paid", "timed_out"} {
		require.LessOrEqual(t, got[user].workflowTasks, 3, "%s: %s", user, got[user])
		require.LessOrEqual(t, got[user].events, 20, "%s: %s", user, got[user])
		require.Zero(t, got[user].activityTasks, "%s: %s", user, got[user])
	}
	s.recordHistory(seckill.OrderWorkflowID(mustInt(t, ids["cancelled"])), "v4-cancelled")
	s.requireAudit(sale)
}
