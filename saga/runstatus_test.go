package saga

import (
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
)

// Every execution status Temporal can report has a name of its own, and
// only COMPLETED reads as completed: reconciliation restarts a saga whose
// run ended any other way.
func TestRunStatus_EveryTemporalStatusHasItsOwnName(t *testing.T) {
	seen := map[RunStatus]enumspb.WorkflowExecutionStatus{}
	for v := range enumspb.WorkflowExecutionStatus_name {
		s := enumspb.WorkflowExecutionStatus(v)
		if s == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
			continue
		}
		got := runStatus(s)
		if got == RunUnknown {
			t.Errorf("%v has no name", s)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%v and %v are both %q", s, other, got)
		}
		seen[got] = s
		if (got == RunCompleted) != (s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED) {
			t.Errorf("%v reads as %q", s, got)
		}
	}
	if runStatus(enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING) != RunRunning {
		t.Error("RUNNING is not running")
	}
	if runStatus(enumspb.WorkflowExecutionStatus(99)) != RunUnknown {
		t.Error("a status this release does not know must be unknown, never completed")
	}
}
