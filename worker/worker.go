// Package worker registers seckill's workflows and activities on a Temporal
// worker and makes sure the namespace has seckill's search attributes.
package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/workflows"
)

// Options tune the worker. Zero values take the SDK defaults.
type Options struct {
	// MaxConcurrentActivities bounds activities running at once.
	MaxConcurrentActivities int
	// MaxConcurrentWorkflowTasks bounds workflow tasks running at once.
	MaxConcurrentWorkflowTasks int
	// StopTimeout is how long Stop waits for the activities in flight
	// before it cancels them (their retries then run on another worker).
	StopTimeout time.Duration
}

// New returns a worker on taskQueue with the OrderSaga and acts registered.
// Start it with Run or Start.
func New(c client.Client, taskQueue string, acts *activities.Activities, opts Options) worker.Worker {
	w := worker.New(c, taskQueue, SDKOptions(opts))
	Register(w, acts)
	return w
}

// NewDraws returns a worker on the draw task queue with the SaleDraw and
// acts registered: the draws run apart from the sagas their admissions
// start, so a draw's next step never waits behind thousands of them.
// A draw runs one activity at a time, so opts should bound it modestly
// (DrawOptions). Start it with Run or Start.
func NewDraws(c client.Client, taskQueue string, acts *activities.Activities, opts Options) worker.Worker {
	w := worker.New(c, taskQueue, drawSDKOptions(opts))
	RegisterDraws(w, acts)
	return w
}

// DrawOptions are the draw worker's: 16 activities and 16 workflow tasks
// at once. A draw runs one activity at a time, so that serves a dozen
// draws at once with room for retries, and the bound keeps a burst of
// draws (RankDraw holds every entry in memory) from taking the process's
// memory and database connections from the sagas. stopTimeout is as in
// Options.
func DrawOptions(stopTimeout time.Duration) Options {
	return Options{MaxConcurrentActivities: 16, MaxConcurrentWorkflowTasks: 16, StopTimeout: stopTimeout}
}

// drawSDKOptions are the SDK's worker options of the draw worker: those
// of the sagas' worker, but with the SDK's 2 pollers of each kind, as a
// draw is a handful of tasks, not thousands a second.
func drawSDKOptions(opts Options) worker.Options {
	o := SDKOptions(opts)
	o.MaxConcurrentWorkflowTaskPollers, o.MaxConcurrentActivityTaskPollers = 0, 0
	return o
}

// SDKOptions are the SDK worker options seckill's worker runs with (the
// benchmark's workflow anchor uses the same).
func SDKOptions(opts Options) worker.Options {
	return worker.Options{
		MaxConcurrentActivityExecutionSize:     opts.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: opts.MaxConcurrentWorkflowTasks,
		// 8 pollers each instead of the SDK's 2: on the benchmark's 3,000-unit
		// run the trivial-workflow anchor went from 76/s to 116/s and the
		// saga from 27/s to 30/s (BENCHMARKS.md).
		MaxConcurrentWorkflowTaskPollers: 8,
		MaxConcurrentActivityTaskPollers: 8,
		// A panicking saga is a bug: fail its task (it retries after a
		// deploy) rather than the workflow, so no order is abandoned.
		WorkflowPanicPolicy: worker.BlockWorkflow,
		WorkerStopTimeout:   opts.StopTimeout,
	}
}

// Register adds the workflows and activities of the sagas' task queue to
// r. SaleDraw stays among them: a draw an earlier release started ran on
// this queue, and its workflow and activity tasks stay here until it ends.
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.OrderSaga, workflow.RegisterOptions{Name: seckill.OrderSagaWorkflow})
	r.RegisterWorkflowWithOptions(workflows.PaymentRefund, workflow.RegisterOptions{Name: seckill.RefundWorkflow})
	r.RegisterWorkflowWithOptions(workflows.Reconcile, workflow.RegisterOptions{Name: seckill.ReconcileWorkflow})
	r.RegisterWorkflowWithOptions(workflows.ShopEvents, workflow.RegisterOptions{Name: seckill.ShopEventsWorkflow})
	r.RegisterWorkflowWithOptions(workflows.SaleDraw, workflow.RegisterOptions{Name: seckill.SaleDrawWorkflow})
	r.RegisterActivity(acts)
}

// RegisterDraws adds the SaleDraw and the activities to r, for the draw
// task queue.
func RegisterDraws(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.SaleDraw, workflow.RegisterOptions{Name: seckill.SaleDrawWorkflow})
	r.RegisterActivity(acts)
}

// EnsureReconcileSchedule creates the Schedule that runs Reconcile every
// interval on taskQueue, unless it exists. Safe to call from every worker.
func EnsureReconcileSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      seckill.ReconcileScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:                 seckill.ReconcileScheduleID,
			Workflow:           seckill.ReconcileWorkflow,
			TaskQueue:          taskQueue,
			WorkflowRunTimeout: 5 * time.Minute,
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create reconcile schedule: %w", err)
	}
	return nil
}

// EnsureSearchAttributes registers any of seckill's Keyword search
// attributes the namespace lacks. Safe to call from every process at start.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range saga.SearchAttributeNames {
		if _, ok := list.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}
