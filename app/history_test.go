//go:build !slim

package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// recordHistory writes the history of a finished workflow to
// workflows/testdata/<name>.json when SECKILL_RECORD_HISTORIES is set, for
// the replay test that guards the saga's determinism across code changes.
func (s *system) recordHistory(workflowID, name string) {
	s.t.Helper()
	if os.Getenv("SECKILL_RECORD_HISTORIES") == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Only a finished history is worth keeping: wait for the workflow.
	require.NoError(s.t, s.temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, nil))
	iter := s.temporal.GetWorkflowHistory(ctx, workflowID, "", false, 0)
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(s.t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(s.t, err)
	require.NoError(s.t, os.WriteFile(filepath.Join("..", "workflows", "testdata", name+".json"), b, 0o644))
	testingLog(s.t, "recorded history of %s as %s", workflowID, name)
}

func testingLog(t *testing.T, format string, args ...any) { t.Logf(format, args...) }
