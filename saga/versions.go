package saga

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/seckill/seckill"
)

// changeVersionAttr is Temporal's own search attribute in which a run
// records each workflow.GetVersion change it has met, as
// "<change id>-<version>".
const changeVersionAttr = "TemporalChangeVersion"

// VersionCount is how many open OrderSaga runs recorded one set of saga
// versions.
type VersionCount struct {
	// Versions are the run's TemporalChangeVersion values, sorted; none
	// for a run of the retired saga of earlier releases.
	Versions []string `json:"versions"`
	Runs     int      `json:"runs"`
	// Retired: the runs started on a saga today's worker no longer
	// replays (Versions lacks seckill.SagaBaseChange at version 1).
	Retired bool `json:"retired"`
}

// OpenVersions counts the open OrderSaga runs by the saga versions they
// recorded, most runs first. A worker upgrade that retires a saga version
// waits until no open run is Retired.
func (c *Client) OpenVersions(ctx context.Context) ([]VersionCount, error) {
	query := fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = 'Running'", seckill.OrderSagaWorkflow)
	byKey := map[string]*VersionCount{}
	dc := converter.GetDefaultDataConverter()
	var token []byte
	for {
		resp, err := c.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list open order sagas: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			var versions []string
			if p := e.GetSearchAttributes().GetIndexedFields()[changeVersionAttr]; p != nil {
				if err := dc.FromPayload(p, &versions); err != nil {
					return nil, fmt.Errorf("read %s of %s: %w", changeVersionAttr, e.GetExecution().GetWorkflowId(), err)
				}
			}
			sort.Strings(versions)
			key := strings.Join(versions, "\x00")
			if byKey[key] == nil {
				byKey[key] = &VersionCount{Versions: versions, Retired: !slices.Contains(versions, seckill.SagaBaseChange+"-1")}
			}
			byKey[key].Runs++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	out := make([]VersionCount, 0, len(byKey))
	for _, v := range byKey {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Runs != out[j].Runs {
			return out[i].Runs > out[j].Runs
		}
		return strings.Join(out[i].Versions, ",") < strings.Join(out[j].Versions, ",")
	})
	return out, nil
}
