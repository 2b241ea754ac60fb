package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
)

// SaleDraw is the draw of a sale with a lobby (docs/API.md "Fair start"),
// started when the sale is created. It sleeps until starts_at, then closes
// the lobby and commits its entries (CommitDraw), sleeps until the beacon
// round the ranks wait for is published, ranks every entry (RankDraw), settles the ranks in batches
// (SettleDraw: winners admitted as claims are, then the waitlist in rank
// order, then the rest lost) and opens the sale to claims (FinishDraw).
// Every step is idempotent and records its progress in the database, so
// a worker killed at any point resumes where it stopped: nobody is
// admitted twice and no unit is given twice.
func SaleDraw(ctx workflow.Context, in seckill.DrawInput) error {
	if wait := in.StartsAt.Sub(workflow.Now(ctx)); wait > 0 {
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		// A worker that dies mid-batch is noticed within a heartbeat.
		HeartbeatTimeout: 30 * time.Second,
		// The draw must finish: retried without end, as the outbox relay is.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
	// Histories begun before v4 go straight to RankDraw, which commits
	// the entries and waits for the beacon itself.
	if workflow.GetVersion(ctx, "commit-then-beacon", workflow.DefaultVersion, 1) == 1 {
		var c seckill.DrawCommit
		if err := workflow.ExecuteActivity(commitOptions(ctx), a.CommitDraw, in).Get(ctx, &c); err != nil {
			return err
		}
		// The round is not published before its time: asking earlier
		// would only fail and back off past it.
		if wait := c.RoundAt.Sub(workflow.Now(ctx)); wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	var p seckill.DrawProgress
	if err := workflow.ExecuteActivity(ctx, a.RankDraw, in).Get(ctx, &p); err != nil {
		return err
	}
	for !p.Done {
		step := seckill.DrawStep{DrawInput: in, WaitlistFull: p.WaitlistFull, Ended: p.Ended}
		if err := workflow.ExecuteActivity(ctx, a.SettleDraw, step).Get(ctx, &p); err != nil {
			return err
		}
	}
	return workflow.ExecuteActivity(ctx, a.FinishDraw, in).Get(ctx, nil)
}

// commitOptions are CommitDraw's: the entries must be committed before the
// beacon round's time, 10 to 13 s after starts_at, or the draw can never be
// verified (nobody can tell a commit after the round from an operator's
// grinding). So a worker that dies while committing is noticed within
// seconds (the commit heartbeats at every batch it reads), and a failed
// attempt is tried again within a second, not after the draw's backoff.
func commitOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    CommitHeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: time.Second},
	})
}

// CommitHeartbeatTimeout is how soon a worker that died in CommitDraw is
// noticed.
const CommitHeartbeatTimeout = 5 * time.Second
