//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// TestSaga_PayFailAndTimeoutEndToEnd drives seckill dev over HTTP through
// the three endings of an order and checks the sale's split after each.
func TestSaga_PayFailAndTimeoutEndToEnd(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(3, 5*time.Second)
	s.requireSplit(sale, 3, 3, 0, 0)

	// Paid.
	r := s.claim(sale, "payer")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, "/api/v1/orders/"+r.json(t)["order_id"].(string), r.header.Get("Location"))
	paid := r.json(t)["order_id"].(string)
	o := s.waitOrder(paid, "payer", seckill.StatusAwaitingPayment, 20*time.Second)
	require.NotNil(t, o.PayBy)
	s.requireSplit(sale, 2, 2, 1, 0)
	r = s.webhook("evt_paid_1", seckill.PaymentSucceeded, paid, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	o = s.waitOrder(paid, "payer", seckill.StatusPaid, 20*time.Second)
	require.NotNil(t, o.PaidAt)
	s.requireMemo(paid, 990, "usd", *o.PayBy)
	s.requireSplit(sale, 2, 2, 0, 1)
	// The same event again: recorded once, nothing changes.
	r = s.webhook("evt_paid_1", seckill.PaymentSucceeded, paid, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	s.requireSplit(sale, 2, 2, 0, 1)
	// A paid buyer still holds their one active order.
	r = s.claim(sale, "payer")
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "ALREADY_CLAIMED", r.json(t)["code"])
	require.Equal(t, paid, r.json(t)["order_id"])

	// Payment failed.
	r = s.claim(sale, "failer")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	failed := r.json(t)["order_id"].(string)
	s.waitOrder(failed, "failer", seckill.StatusAwaitingPayment, 20*time.Second)
	s.requireSplit(sale, 1, 1, 1, 1)
	r = s.webhook("evt_failed_1", seckill.PaymentFailed, failed, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	o = s.waitOrder(failed, "failer", seckill.StatusClosed, 20*time.Second)
	require.Equal(t, seckill.ClosePaymentFailed, *o.CloseReason)
	require.Eventually(t, func() bool { return s.stock(sale) == seckill.Stock{Total: 3, Remaining: 2, Available: 2, Sold: 1} },
		10*time.Second, 50*time.Millisecond)

	// Timed out: nobody pays, and the unit comes back.
	r = s.claim(sale, "sleeper")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	slept := r.json(t)["order_id"].(string)
	s.waitOrder(slept, "sleeper", seckill.StatusAwaitingPayment, 20*time.Second)
	s.requireSplit(sale, 1, 1, 1, 1)
	o = s.waitOrder(slept, "sleeper", seckill.StatusClosed, 30*time.Second)
	require.Equal(t, seckill.ClosePaymentTimeout, *o.CloseReason)
	require.Eventually(t, func() bool { return s.stock(sale) == seckill.Stock{Total: 3, Remaining: 2, Available: 2, Sold: 1} },
		10*time.Second, 50*time.Millisecond)

	// A payment after the timeout is recorded as late, never applied, and
	// refunded.
	r = s.webhook("evt_late_1", seckill.PaymentSucceeded, slept, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Contains(t, []any{string(seckill.OutcomeLate), string(seckill.OutcomeDelivered)}, r.json(t)["outcome"])
	s.waitRefund(slept, "sleeper", 990)
	require.Equal(t, seckill.StatusClosed, s.order(slept, "sleeper").Status)
	s.requireSplit(sale, 2, 2, 0, 1)

	// The failed and timed-out buyers may claim again.
	r = s.claim(sale, "sleeper")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	s.requireAudit(sale)

	// Every order is findable by SaleId in Temporal, with its status.
	require.Eventually(t, func() bool {
		resp, err := s.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("SaleId = %q AND OrderStatus = 'CLOSED'", sale),
		})
		return err == nil && len(resp.GetExecutions()) == 2
	}, 20*time.Second, 200*time.Millisecond, "two CLOSED orders visible by SaleId")
	resp, err := s.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("SaleId = %q AND OrderStatus = 'PAID' AND UserId = 'payer'", sale),
	})
	require.NoError(t, err)
	require.Len(t, resp.GetExecutions(), 1)
	require.Equal(t, seckill.OrderWorkflowID(mustInt(t, paid)), resp.GetExecutions()[0].GetExecution().GetWorkflowId())

	// The operator queries of docs/OPERATIONS.md ("In the Temporal UI"), as written there.
	today := time.Now().UTC().Truncate(24 * time.Hour).Format(time.RFC3339)
	for query, want := range map[string]int{
		fmt.Sprintf(`SaleId=%q AND OrderStatus="AWAITING_PAYMENT"`, sale):      1, // sleeper's new claim
		`WorkflowType="OrderSaga" AND UserId="sleeper"`:                        2,
		fmt.Sprintf(`CloseReason="PAYMENT_TIMEOUT" AND CloseTime > %q`, today): 1,
		fmt.Sprintf(`SaleId=%q AND CloseReason="PAYMENT_FAILED"`, sale):        1,
	} {
		require.Eventually(t, func() bool {
			resp, err := s.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
			return err == nil && len(resp.GetExecutions()) == want
		}, 20*time.Second, 200*time.Millisecond, "%d orders for %s", want, query)
	}

	s.recordHistory(seckill.OrderWorkflowID(mustInt(t, paid)), "v4-paid")
	s.recordHistory(seckill.OrderWorkflowID(mustInt(t, failed)), "v4-payment_failed")
	s.recordHistory(seckill.OrderWorkflowID(mustInt(t, slept)), "v4-timeout_then_late_payment")

	// The Temporal Web UI finds the sale's orders by SaleId too.
	ui, err := http.Get(s.info.UIURL + "/api/v1/namespaces/" + s.cfg.Namespace + "/workflows?query=" + url.QueryEscape(fmt.Sprintf("SaleId=%q", sale)))
	require.NoError(t, err)
	defer func() { _ = ui.Body.Close() }()
	require.Equal(t, http.StatusOK, ui.StatusCode)
	var list struct {
		Executions []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		} `json:"executions"`
	}
	require.NoError(t, json.NewDecoder(ui.Body).Decode(&list))
	orders := 0
	for _, e := range list.Executions {
		if strings.HasPrefix(e.Execution.WorkflowID, "order-") {
			orders++
		}
	}
	// Paid, failed, timed out and the new claim. (The late payment's refund
	// is there too when the webhook, not the saga, started it.)
	require.Equal(t, 4, orders)
}

// requireMemo checks the memo operators see in the Temporal UI.
func (s *system) requireMemo(orderID string, amount int64, currency string, payBy time.Time) {
	s.t.Helper()
	desc, err := s.temporal.DescribeWorkflowExecution(context.Background(), seckill.OrderWorkflowID(mustInt(s.t, orderID)), "")
	require.NoError(s.t, err)
	fields := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()
	var gotAmount int64
	var gotCurrency, gotPayBy string
	dc := converter.GetDefaultDataConverter()
	require.NoError(s.t, dc.FromPayload(fields[seckill.MemoAmountCents], &gotAmount))
	require.NoError(s.t, dc.FromPayload(fields[seckill.MemoCurrency], &gotCurrency))
	require.NoError(s.t, dc.FromPayload(fields[seckill.MemoPayBy], &gotPayBy))
	require.Equal(s.t, amount, gotAmount)
	require.Equal(s.t, currency, gotCurrency)
	got, err := time.Parse(time.RFC3339Nano, gotPayBy)
	require.NoError(s.t, err)
	require.True(s.t, payBy.Equal(got), "memo pay_by %s, order pay_by %s", got, payBy)
}

// `seckill sagas versions` counts the open sagas by the saga versions they
// recorded, and exits non-zero while a run of a retired saga is open: here
// an OrderSaga run by a stand-in worker of the old kind (a workflow task
// done, no version recorded). A run no worker has picked up yet is
// "starting", never a false alarm.
func TestSagas_VersionsOfTheOpenRuns(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(2, time.Hour)
	for _, user := range []string{"ann", "bob"} {
		r := s.claim(sale, user)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		s.waitOrder(r.json(t)["order_id"].(string), user, seckill.StatusAwaitingPayment, 30*time.Second)
	}
	versions := func() (string, error) {
		var out bytes.Buffer
		err := app.SagasCommand(context.Background(), s.cfg, []string{"versions", "--json"}, &out)
		return out.String(), err
	}
	until := func(want string, wantErr error) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, err := versions()
			if errors.Is(err, wantErr) && got == want {
				return
			}
			if time.Now().After(deadline) {
				require.Equal(t, want, got, "versions (error %v)", err)
				require.ErrorIs(t, err, wantErr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	until(`{"open_runs":[{"versions":["payable-at-admission-1"],"runs":2,"retired":false}],"retired_runs":0}`+"\n", nil)

	start := func(id, queue string) {
		run, err := s.temporal.ExecuteWorkflow(context.Background(), sdkclient.StartWorkflowOptions{ID: id, TaskQueue: queue},
			seckill.OrderSagaWorkflow, seckill.SagaInput{OrderID: 1, SaleID: 1, UserID: "old"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.temporal.TerminateWorkflow(context.Background(), run.GetID(), "", "test over") })
	}
	start("order-not-picked-up", "no-worker-polls-this")
	until(`{"open_runs":[{"versions":["payable-at-admission-1"],"runs":2,"retired":false},`+
		`{"versions":["(starting: no workflow task done yet)"],"runs":1,"retired":false}],"retired_runs":0}`+"\n", nil)

	old := worker.New(s.temporal, "old-sagas", worker.Options{})
	old.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ seckill.SagaInput) error {
		return workflow.Sleep(ctx, time.Hour) // an old saga waiting, no version recorded
	}, workflow.RegisterOptions{Name: seckill.OrderSagaWorkflow})
	require.NoError(t, old.Start())
	t.Cleanup(old.Stop)
	start("order-of-the-old-saga", "old-sagas")
	until(`{"open_runs":[{"versions":["payable-at-admission-1"],"runs":2,"retired":false},`+
		`{"versions":null,"runs":1,"retired":true},`+
		`{"versions":["(starting: no workflow task done yet)"],"runs":1,"retired":false}],"retired_runs":1}`+"\n", app.ErrRetiredSagas)

	var text bytes.Buffer
	require.ErrorIs(t, app.SagasCommand(context.Background(), s.cfg, []string{"versions"}, &text), app.ErrRetiredSagas)
	require.Equal(t, `  RUNS  SAGA VERSIONS (TemporalChangeVersion)
     2  payable-at-admission-1
     1  retired: started before payable-at-admission-1
     1  (starting: no workflow task done yet)
1 open runs of a retired saga version
`, text.String())
}
