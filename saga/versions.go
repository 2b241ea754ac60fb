package saga

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
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
	base := seckill.SagaBaseChange + "-1"
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
			retired := false
			if !slices.Contains(versions, base) {
				// Visibility lags, and a run records its versions in its
				// first workflow task: its history says which it is.
				h, err := c.startedOn(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
				if err != nil {
					return nil, err
				}
				switch h {
				case historyBase:
					versions = append(versions, base)
					sort.Strings(versions)
				case historyStarting:
					versions = []string{"(starting: no workflow task done yet)"}
				case historyRetired:
					retired = true
				}
			}
			key := strings.Join(versions, "\x00")
			if byKey[key] == nil {
				byKey[key] = &VersionCount{Versions: versions, Retired: retired}
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

// What a run's history says of the saga it started on.
const (
	historyBase     = iota // it recorded seckill.SagaBaseChange
	historyStarting        // no workflow task completed yet: it will
	historyRetired         // a workflow task completed without it
)

// startedOn reads the start of one run's history: a supported run records
// its version marker in the commands of its first workflow task.
func (c *Client) startedOn(ctx context.Context, workflowID, runID string) (int, error) {
	iter := c.tc.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	completed := false
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return 0, fmt.Errorf("read the history of %s: %w", workflowID, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			completed = true
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			m := ev.GetMarkerRecordedEventAttributes()
			var id string
			if p := m.GetDetails()["change-id"].GetPayloads(); m.GetMarkerName() == "Version" && len(p) == 1 &&
				dc.FromPayload(p[0], &id) == nil && id == seckill.SagaBaseChange {
				return historyBase, nil
			}
		}
		if completed && ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED &&
			ev.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED {
			// The first task's commands follow its completion, the
			// version marker first among them.
			return historyRetired, nil
		}
	}
	if completed {
		return historyRetired, nil
	}
	return historyStarting, nil
}
