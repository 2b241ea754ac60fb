package saga

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
)

// ShopClient hands order events to their delivery: each order's ShopEvents
// workflow (shop-events-<order id>), started by the first event that
// finds none running.
type ShopClient struct {
	tc        client.Client
	taskQueue string
	retryFor  time.Duration
}

// NewShopClient returns a ShopClient on taskQueue whose deliveries retry
// each event for retryFor (seckill.DefaultShopEventRetryFor when zero).
func NewShopClient(c *Client, retryFor time.Duration) *ShopClient {
	return &ShopClient{tc: c.tc, taskQueue: c.taskQueue, retryFor: retryFor}
}

// TellShop signals ev to its order's ShopEvents workflow, starting one if
// none runs. Safe to repeat: the workflow sends an id once per run, and
// the shop drops repeats by webhook-id.
func (s *ShopClient) TellShop(ctx context.Context, ev seckill.ShopEvent) error {
	in := seckill.ShopEventsInput{OrderID: ev.OrderID, RetryFor: s.retryFor}
	_, err := s.tc.SignalWithStartWorkflow(ctx, seckill.ShopEventsWorkflowID(ev.OrderID), seckill.ShopEventSignal, ev,
		client.StartWorkflowOptions{
			ID:                    seckill.ShopEventsWorkflowID(ev.OrderID),
			TaskQueue:             s.taskQueue,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		}, seckill.ShopEventsWorkflow, in)
	if err != nil {
		return fmt.Errorf("signal %s: %w", seckill.ShopEventsWorkflowID(ev.OrderID), err)
	}
	return nil
}
