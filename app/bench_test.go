//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/bench"
)

// TestBench_SmallRunEndToEnd runs `seckill bench` on a small configuration
// against a system in this process: two sales, more buyers than units,
// payments, failures and abandoned orders, both anchors, and the audit.
// It checks the run and its bookkeeping, never its speed.
func TestBench_SmallRunEndToEnd(t *testing.T) {
	sys := startSystem(t, systemOptions{configure: func(c *app.Config) { c.ClaimRate.Max = 0 }})
	out := t.TempDir()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Options{
		APIURL: sys.info.APIURL, Config: sys.cfg,
		Units: 40, Sales: 2, Buyers: 300, Requests: 600, Rate: 2000, Conns: 16,
		PaymentTimeout: 5 * time.Second, PayShare: 0.4, FailShare: 0.3,
		SettleWithin:      2 * time.Minute,
		AnchorScriptCalls: 2000, AnchorWorkflows: 20, AnchorSagas: 20,
		BodyRounds: 2, BodyRoundTime: 300 * time.Millisecond,
		EntryRounds: 2, EntryRoundTime: 300 * time.Millisecond,
		OutDir: out, Progress: &progress,
	})
	require.NoError(t, err, progress.String())
	t.Log("\n" + rep.String())

	if !rep.OK() {
		for _, a := range rep.Audits {
			t.Logf("%s", a)
		}
		var rows []map[string]any
		sys.store.Gorm().Raw(`SELECT r.event_id, r.reason, r.created_at, e.outcome, e.received_at, e.delivered_at, o.status, o.pay_by, o.paid_at, o.awaiting_at FROM refunds r JOIN payment_events e ON e.id = r.event_id JOIN orders o ON o.id = r.order_id`).Scan(&rows)
		for _, r := range rows {
			t.Logf("DEBUG %v", r)
		}
		t.Fatalf("audits and server errors:\n%s", rep)
	}
	require.Equal(t, 600, rep.Claims.Sent)
	byOutcome := rep.Claims.ByOutcome
	// Request i is buyer i%300 on sale i%2, so each sale meets 150 buyers,
	// each twice: its 40 units are all won, and the rest are refused.
	// Winners pay or fail from their 202, so a unit whose payment failed at
	// once can be won again by a later claim.
	won := byOutcome["ADMITTED"].Count
	require.GreaterOrEqual(t, won, int64(80), "every unit of both sales is won: %+v", byOutcome)
	require.Equal(t, int64(600), won+byOutcome["SOLD_OUT"].Count+byOutcome["ALREADY_CLAIMED"].Count,
		"every claim is admitted, sold out or already claimed: %+v", byOutcome)
	require.Equal(t, int(won), rep.Sagas.Orders)
	require.Equal(t, int(won), rep.Settle.Paid+rep.Settle.Failed+rep.Settle.Abandoned)
	require.Positive(t, rep.Settle.Paid)
	require.Positive(t, rep.Settle.Abandoned)
	require.Equal(t, won-int64(rep.Sagas.SoldOutAtDB), rep.Sagas.ToAwaitPayment.Count,
		"every order that reached AWAITING_PAYMENT is in the saga latencies")
	require.Equal(t, int64(rep.Settle.Paid+rep.Settle.Failed), rep.Payable.Accepted.Count,
		"every payment sent from its 202 was accepted")
	require.NotNil(t, rep.Anchors.Workflow)
	// The body ratio: both paths, both ways in every round, and every
	// claim of its rounds refused SOLD_OUT (no rate limit here).
	require.NotNil(t, rep.BodyRatio)
	require.Len(t, rep.BodyRatio.Paths, 2)
	for _, p := range rep.BodyRatio.Paths {
		require.Len(t, p.With, 2, p.Path)
		require.Len(t, p.Without, 2, p.Path)
		require.Zero(t, p.Unexpected, "%s: %s", p.Path, p.FirstAnswer)
		require.Positive(t, p.MedianWith, p.Path)
		require.Positive(t, p.MedianNone, p.Path)
		require.InDelta(t, p.MedianWith/p.MedianNone, rep.Ratios["claims_with_body_vs_without_"+p.Path], 1e-9)
	}
	// The entry ratio: both ways in every round, every entry a fresh
	// one (201), every claim refused SOLD_OUT.
	er := rep.EntryRatio
	require.NotNil(t, er)
	for _, arm := range []string{"entries", "flag", "script"} {
		require.Len(t, er.PerSecond[arm], 2, arm)
		require.Zero(t, er.Unexpected[arm], "%s: %s", arm, er.FirstUnexpected)
		require.Positive(t, er.Median[arm], arm)
	}
	require.InDelta(t, er.Median["entries"]/er.Median["flag"], rep.Ratios["entries_vs_claims_flag"], 1e-9)
	require.InDelta(t, er.Median["entries"]/er.Median["script"], rep.Ratios["entries_vs_claims_script"], 1e-9)
	require.Contains(t, rep.Ratios, "entries_vs_claims_burst")
	require.Equal(t, 20, rep.Anchors.Workflow.Workflows)
	// Anchor (c) and the sagas' settle rate it is compared with: the
	// abandoned orders timed out.
	sa := rep.Anchors.Saga
	require.NotNil(t, sa)
	require.Equal(t, 20, sa.Workflows)
	require.Equal(t, 7.0, sa.TimerSeconds, "the payment timeout and the saga's grace")
	require.Positive(t, sa.FirstStepPerSecond)
	require.Positive(t, sa.SettlePerSecond)
	require.Equal(t, rep.Settle.Abandoned, rep.Sagas.TimedOut)
	require.Positive(t, rep.Sagas.SettlePerSecond)
	require.InDelta(t, rep.Sagas.SettlePerSecond/sa.SettlePerSecond, rep.Ratios["sagas_vs_saga_anchor_settle"], 1e-9)
	require.Contains(t, rep.Ratios, "sagas_vs_saga_anchor_first_step")
	if rep.Anchors.Script == nil {
		t.Fatal("anchor (a) missing")
	}
	require.Contains(t, rep.Ratios, "claims_vs_script")
	require.Contains(t, rep.Ratios, "sagas_vs_workflow")
	// The burst's two sales, then the body rounds' and the entry rounds'
	// sold-out sales, each audited.
	require.Len(t, rep.Audits, 4)
	for _, a := range rep.Audits {
		require.True(t, a.OK(), "%s", a)
	}

	// The files: JSON that round-trips, and a PNG.
	b, err := os.ReadFile(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	var back bench.Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, rep.Claims.Sent, back.Claims.Sent)
	png, err := os.ReadFile(filepath.Join(out, "bench.png"))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "bench.png is not a PNG")
	require.Contains(t, progress.String(), "burst done")
}

// TestBench_WaitlistAndSegments: a sale of 4 segments; half the buyers
// refused join the waitlist; half the winners never pay. Every unit they
// leave goes to a waiting buyer, who pays: the sale sells all its units,
// and the audit passes.
func TestBench_WaitlistAndSegments(t *testing.T) {
	sys := startSystem(t, systemOptions{configure: func(c *app.Config) { c.ClaimRate.Max = 0 }})
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Options{
		APIURL: sys.info.APIURL, Config: sys.cfg,
		Units: 30, Sales: 1, Buyers: 300, Requests: 300, Rate: 2000, Conns: 16,
		PaymentTimeout: 5 * time.Second, PayShare: 0.5,
		Segments: 4, WaitlistShare: 0.5, WaitlistPayShare: 1,
		SettleWithin: 2 * time.Minute,
		Progress:     &progress,
	})
	require.NoError(t, err, progress.String())
	t.Log("\n" + rep.String())
	require.True(t, rep.OK(), "%s", rep)
	require.Equal(t, int64(30), rep.Claims.ByOutcome["ADMITTED"].Count)
	require.NotNil(t, rep.Waitlist)
	require.Positive(t, rep.Waitlist.Answers["WAITING"], "%v", rep.Waitlist.Answers)
	require.Equal(t, rep.Settle.Abandoned, rep.Waitlist.Admitted, "every abandoned unit went to a waiting buyer")
	require.Equal(t, int64(rep.Waitlist.Admitted), rep.Waitlist.HandOverToAwaitPayment.Count)
	require.Equal(t, int64(30), rep.UnitsSold, "every unit found a buyer")
}
