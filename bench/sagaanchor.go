package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/worker"
)

// SagaAnchor is anchor (c): the simplest workflow that does a timed-out
// saga's Temporal work (issue 34): started, one local activity, a timer
// of the sales' payment timeout, one local activity, completed. Started
// as the relay starts sagas (its parallelism, each start answered before
// the next), run by a worker with seckill's worker settings, on the same
// server, after the sagas.
//
// Every workflow's timer ends at the same deadline, the anchor's start
// plus the timer (a saga's at its pay_by plus the grace, fixed at its
// admission). Its two figures are measured as the sagas' are:
//   - FirstStepPerSecond: workflows whose first local activity ran, over
//     the span from the first start to the last such activity (the sagas:
//     orders AWAITING_PAYMENT from the first admission to the last lock);
//   - SettlePerSecond: workflows completed, over the span from the first
//     start to the last completion less the timer (the sagas: orders
//     closed PAYMENT_TIMEOUT from the first admission to the last close
//     less the payment timeout).
type SagaAnchor struct {
	Workflows          int     `json:"workflows"`
	Parallel           int     `json:"parallel"`
	TimerSeconds       float64 `json:"timer_seconds"`
	FirstStepPerSecond float64 `json:"first_step_per_second"`
	SettlePerSecond    float64 `json:"settle_per_second"`
	Seconds            float64 `json:"seconds"`
}

// stepClock counts the runs of one of the anchor's steps and keeps when
// the latest ran.
type stepClock struct {
	runs   atomic.Int64
	latest atomic.Int64 // unix nanoseconds
}

func (c *stepClock) tick() {
	c.runs.Add(1)
	c.latest.Store(time.Now().UnixNano())
}

func (c *stepClock) at() time.Time { return time.Unix(0, c.latest.Load()) }

// sagaAnchorSteps are the anchor's local activities.
type sagaAnchorSteps struct{ first, last stepClock }

func (s *sagaAnchorSteps) FirstStep(context.Context) error { s.first.tick(); return nil }

func (s *sagaAnchorSteps) LastStep(context.Context) error { s.last.tick(); return nil }

// sagaAnchorWorkflow: a local activity, a timer until deadline, a local
// activity. The deadline is fixed when the anchor starts, as a saga's
// pay_by is fixed at admission: a workflow started late waits less, as a
// saga started late by the relay does.
func sagaAnchorWorkflow(ctx workflow.Context, deadline time.Time) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var s *sagaAnchorSteps
	if err := workflow.ExecuteLocalActivity(ctx, s.FirstStep).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.Sleep(ctx, max(0, deadline.Sub(workflow.Now(ctx)))); err != nil {
		return err
	}
	return workflow.ExecuteLocalActivity(ctx, s.LastStep).Get(ctx, nil)
}

// sagaAnchor runs anchor (c) with n workflows and the given timer.
func sagaAnchor(ctx context.Context, c client.Client, o Options, n int, timer time.Duration) (*SagaAnchor, error) {
	queue := "bench-saga-anchor-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	steps := &sagaAnchorSteps{}
	w := sdkworker.New(c, queue, worker.SDKOptions(worker.Options{MaxConcurrentActivities: o.Config.WorkerActivities}))
	w.RegisterWorkflowWithOptions(sagaAnchorWorkflow, workflow.RegisterOptions{Name: "BenchSagaAnchor"})
	w.RegisterActivity(steps)
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()

	parallel := relay.DefaultParallel
	start := time.Now()
	if err := runWorkflows(ctx, c, queue, n, parallel, false, "BenchSagaAnchor", start.Add(timer)); err != nil {
		return nil, err
	}
	// Every workflow completes once its timer fired and its last step ran.
	for steps.last.runs.Load() < int64(n) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	first, last := steps.first.at(), steps.last.at()
	a := &SagaAnchor{Workflows: n, Parallel: parallel, TimerSeconds: timer.Seconds(), Seconds: time.Since(start).Seconds()}
	if d := first.Sub(start); d > 0 {
		a.FirstStepPerSecond = float64(n) / d.Seconds()
	}
	if d := last.Sub(start) - timer; d > 0 {
		a.SettlePerSecond = float64(n) / d.Seconds()
	}
	return a, nil
}
