package saga_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/saga"
)

// starts records the workflows a Client asks Temporal to start; any other
// call panics (the embedded interface is nil).
type starts struct {
	client.Client
	queues map[string]string // workflow type -> task queue
}

func (s *starts) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, workflow any, _ ...any) (client.WorkflowRun, error) {
	s.queues[workflow.(string)] = opts.TaskQueue
	return nil, nil
}

// A draw goes to the draw task queue, never the sagas' (where it waited
// behind the sagas its own admissions start), and a saga stays on the
// sagas' queue, with the queues configured or by default.
func TestStartDraw_RunsOnTheDrawTaskQueue(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		opts                 saga.Options
		sagaQueue, drawQueue string
	}{
		{"defaults", saga.Options{}, seckill.DefaultTaskQueue, seckill.DefaultDrawTaskQueue},
		{"configured", saga.Options{TaskQueue: "shop-orders", DrawTaskQueue: "shop-draws"}, "shop-orders", "shop-draws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			temporal := &starts{queues: map[string]string{}}
			c := saga.New(temporal, tc.opts)
			require.NoError(t, c.StartDraw(t.Context(), seckill.DrawInput{SaleID: 7, StartsAt: time.Now()}))
			require.NoError(t, c.Start(t.Context(), seckill.SagaInput{OrderID: 42, SaleID: 7, UserID: "alice"}))

			require.Equal(t, map[string]string{
				seckill.SaleDrawWorkflow:  tc.drawQueue,
				seckill.OrderSagaWorkflow: tc.sagaQueue,
			}, temporal.queues)
		})
	}
}
