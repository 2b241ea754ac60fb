// Package saga is the one small client of seckill's Temporal workflows:
// it starts, signals, cancels and describes an order's OrderSaga, and
// starts the PaymentRefund of a payment that came too late. Workflow IDs,
// start options, search attributes, memo and signal names live here and in
// the domain package, so the API, the relay, reconciliation and payment
// delivery agree on them without importing the workflow or activity code
// (only the worker does).
package saga

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
)

// Search attributes (Keyword) set on every OrderSaga and kept current at each
// transition, so operators can filter orders in the Temporal UI.
var (
	SaleIDAttr      = temporal.NewSearchAttributeKeyKeyword("SaleId")
	UserIDAttr      = temporal.NewSearchAttributeKeyKeyword("UserId")
	OrderStatusAttr = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	// CloseReasonAttr is set when the order closes (PAYMENT_TIMEOUT,
	// CANCELLED, PAYMENT_FAILED, SOLD_OUT).
	CloseReasonAttr = temporal.NewSearchAttributeKeyKeyword("CloseReason")
)

// SearchAttributeNames lists the custom search attributes seckill needs
// registered on its namespace.
var SearchAttributeNames = []string{SaleIDAttr.GetName(), UserIDAttr.GetName(), OrderStatusAttr.GetName(), CloseReasonAttr.GetName()}

// Errors of the client.
var (
	// ErrNoSaga: the order has no saga in Temporal (not started yet, or
	// its history is gone).
	ErrNoSaga = errors.New("the order has no saga")
)

// Client starts and talks to order sagas on one task queue, and starts
// the sale draws on another.
type Client struct {
	tc            client.Client
	taskQueue     string
	drawTaskQueue string
	eager         bool
}

// Options tune a Client.
type Options struct {
	// TaskQueue of the sagas [seckill.DefaultTaskQueue].
	TaskQueue string
	// DrawTaskQueue of the sale draws StartDraw starts
	// [seckill.DefaultDrawTaskQueue].
	DrawTaskQueue string
	// EagerStart asks the server to hand a new saga's first workflow task
	// straight back to this process's worker with the start answer,
	// skipping the matching service. Only useful when tc is the client a
	// worker on TaskQueue polls with, in this process (seckill worker and
	// seckill dev); elsewhere the server ignores it.
	EagerStart bool
}

// New returns a client over tc.
func New(tc client.Client, opts Options) *Client {
	if opts.TaskQueue == "" {
		opts.TaskQueue = seckill.DefaultTaskQueue
	}
	if opts.DrawTaskQueue == "" {
		opts.DrawTaskQueue = seckill.DefaultDrawTaskQueue
	}
	return &Client{tc: tc, taskQueue: opts.TaskQueue, drawTaskQueue: opts.DrawTaskQueue, eager: opts.EagerStart}
}

// StartOptions are the options every start of the saga of in uses,
// whoever starts it (the relay, the API's cancel of an order not yet
// relayed, reconciliation), so its ID, policies, search attributes and
// memo are the same.
//
// ID reuse: a saga that completed decided its order, and is never started
// again for it; one that failed, was cancelled without deciding, was
// terminated or timed out may be started again (a new run of the same
// ID), and resumes the order from the database.
func (c *Client) StartOptions(in seckill.SagaInput) client.StartWorkflowOptions {
	opts := client.StartWorkflowOptions{
		ID:                    seckill.OrderWorkflowID(in.OrderID),
		TaskQueue:             c.taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SaleIDAttr.ValueSet(strconv.FormatInt(in.SaleID, 10)),
			UserIDAttr.ValueSet(in.UserID),
			OrderStatusAttr.ValueSet(string(seckill.StatusQueued)),
		),
		EnableEagerStart: c.eager,
	}
	if !in.PayBy.IsZero() {
		// What the buyer owes and until when, in the Temporal UI, from the
		// first event on: it was fixed at admission.
		opts.Memo = map[string]any{
			seckill.MemoAmountCents: in.AmountCents,
			seckill.MemoCurrency:    in.Currency,
			seckill.MemoPayBy:       in.PayBy.UTC().Format(time.RFC3339Nano),
		}
	}
	return opts
}

// Start starts the saga of in. Idempotent by order id: a saga that
// exists already, running or finished, is success. An error is
// ambiguous (the start may have happened): retry with the same input.
func (c *Client) Start(ctx context.Context, in seckill.SagaInput) error {
	_, err := c.tc.ExecuteWorkflow(ctx, c.StartOptions(in), seckill.OrderSagaWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err == nil || errors.As(err, &started) {
		return nil
	}
	return fmt.Errorf("start saga of order %d: %w", in.OrderID, err)
}

// Pay signals payment event ev to the saga of orderID. ErrNoSaga: the
// saga is not running (not started yet, or finished).
func (c *Client) Pay(ctx context.Context, orderID int64, ev seckill.PaymentEvent) error {
	err := c.tc.SignalWorkflow(ctx, seckill.OrderWorkflowID(orderID), "", seckill.PaymentSignal, ev)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNoSaga
	}
	return err
}

// Cancel asks the saga of in to close its unpaid order as CANCELLED. An
// order not yet relayed gets its saga started with the cancel already in
// it (signal-with-start, the same options as every start), so the cancel
// is never lost nor starts a second saga. seckill.ErrOrderDecided: the saga finished.
func (c *Client) Cancel(ctx context.Context, in seckill.SagaInput) error {
	_, err := c.tc.SignalWithStartWorkflow(ctx, seckill.OrderWorkflowID(in.OrderID), seckill.CancelSignal, nil,
		c.StartOptions(in), seckill.OrderSagaWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return seckill.ErrOrderDecided
	}
	return err
}

// Run is what Temporal knows of one order's saga.
type Run struct {
	// Found: the workflow ID has a run (its latest is described).
	Found bool
	// Running: that run has not closed.
	Running bool
	// Status of the latest run.
	Status RunStatus
	// SaleID and UserID from its search attributes.
	SaleID int64
	UserID string
}

// RunStatus is what became of a saga's run, in words of its own so that
// consumers need no Temporal type.
type RunStatus string

// The statuses of a run: Temporal's execution statuses.
const (
	RunRunning        RunStatus = "running"
	RunCompleted      RunStatus = "completed"
	RunFailed         RunStatus = "failed"
	RunCanceled       RunStatus = "canceled"
	RunTerminated     RunStatus = "terminated"
	RunContinuedAsNew RunStatus = "continued_as_new"
	RunTimedOut       RunStatus = "timed_out"
	RunPaused         RunStatus = "paused"
	RunUnknown        RunStatus = "unknown"
)

var runStatuses = map[enumspb.WorkflowExecutionStatus]RunStatus{
	enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:          RunRunning,
	enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:        RunCompleted,
	enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:           RunFailed,
	enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:         RunCanceled,
	enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:       RunTerminated,
	enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: RunContinuedAsNew,
	enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:        RunTimedOut,
	enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED:           RunPaused,
}

// runStatus names s; a status this release does not know is RunUnknown,
// which no consumer takes for completed.
func runStatus(s enumspb.WorkflowExecutionStatus) RunStatus {
	if r, ok := runStatuses[s]; ok {
		return r
	}
	return RunUnknown
}

// State names what became of the run, for operators' messages: its
// Status, or "none in Temporal".
func (r Run) State() string {
	if !r.Found {
		return "none in Temporal"
	}
	return string(r.Status)
}

// Describe returns what Temporal knows of the saga of orderID.
func (c *Client) Describe(ctx context.Context, orderID int64) (Run, error) {
	desc, err := c.tc.DescribeWorkflowExecution(ctx, seckill.OrderWorkflowID(orderID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return Run{}, nil
	}
	if err != nil {
		return Run{}, fmt.Errorf("describe saga of order %d: %w", orderID, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	r := Run{Found: true, Running: info.GetCloseTime() == nil, Status: runStatus(info.GetStatus())}
	attrs := info.GetSearchAttributes().GetIndexedFields()
	var sale string
	dc := converter.GetDefaultDataConverter()
	if p := attrs[SaleIDAttr.GetName()]; p != nil && dc.FromPayload(p, &sale) == nil {
		r.SaleID, _ = strconv.ParseInt(sale, 10, 64)
	}
	if p := attrs[UserIDAttr.GetName()]; p != nil {
		_ = dc.FromPayload(p, &r.UserID)
	}
	return r, nil
}

// StartRefund starts the PaymentRefund of one provider event whose order
// was already decided (LATE or DUPLICATE). Idempotent by event id: one
// refund per event however often it is delivered.
func (c *Client) StartRefund(ctx context.Context, in seckill.RefundInput) error {
	opts := client.StartWorkflowOptions{
		ID:                    seckill.RefundWorkflowID(in.EventID),
		TaskQueue:             c.taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}
	if in.SaleID != 0 {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(
			SaleIDAttr.ValueSet(strconv.FormatInt(in.SaleID, 10)),
			UserIDAttr.ValueSet(in.UserID),
		)
	}
	_, err := c.tc.ExecuteWorkflow(ctx, opts, seckill.RefundWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err == nil || errors.As(err, &started) {
		return nil
	}
	return fmt.Errorf("start refund of event %s: %w", in.EventID, err)
}

// CheckHealth reports whether the Temporal frontend answers.
func (c *Client) CheckHealth(ctx context.Context) error {
	_, err := c.tc.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}
