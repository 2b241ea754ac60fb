package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/workflows"
)

// The entries must be committed before the beacon round's time, 10 to 13 s
// after starts_at. CommitDraw is therefore noticed within seconds when its
// worker dies (its heartbeat timeout) and tried again within a second of
// a failure: three failures in a row still commit about 1.4 s after
// starts_at, where the draw's own backoff (1, 2, 4 s) took 7 s.
func TestSaleDraw_ACommitThatFailsIsTriedAgainWithinASecond(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	startsAt := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(startsAt.Add(-time.Minute))
	env.RegisterWorkflow(workflows.SaleDraw)
	acts := &activities.Activities{}
	env.RegisterActivity(acts)

	var (
		attempts    int
		committedAt time.Time
		heartbeat   time.Duration
	)
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "CommitDraw" {
			heartbeat = info.HeartbeatTimeout
		}
	})
	env.OnActivity(acts.CommitDraw, mock.Anything, mock.Anything).Return(
		func(context.Context, seckill.DrawInput) (seckill.DrawCommit, error) {
			attempts++
			if attempts <= 3 {
				return seckill.DrawCommit{}, errors.New("postgres: connection refused")
			}
			committedAt = env.Now()
			return seckill.DrawCommit{RoundAt: startsAt.Add(10 * time.Second)}, nil
		})
	env.OnActivity(acts.RankDraw, mock.Anything, mock.Anything).Return(seckill.DrawProgress{Done: true}, nil)
	env.OnActivity(acts.FinishDraw, mock.Anything, mock.Anything).Return(nil)

	env.ExecuteWorkflow(workflows.SaleDraw, seckill.DrawInput{SaleID: 7, StartsAt: startsAt})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 4, attempts)
	require.Equal(t, workflows.CommitHeartbeatTimeout, heartbeat)
	require.Less(t, heartbeat, 10*time.Second, "a dead worker is noticed before the round")
	require.Less(t, committedAt.Sub(startsAt), 2*time.Second, "committed %s after starts_at", committedAt.Sub(startsAt))
}
