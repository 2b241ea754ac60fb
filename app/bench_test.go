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
		AnchorScriptCalls: 2000, AnchorWorkflows: 20,
		OutDir: out, Progress: &progress,
	})
	require.NoError(t, err, progress.String())
	t.Log("\n" + rep.String())

	require.True(t, rep.OK(), "audits and server errors:\n%s", rep)
	require.Equal(t, 600, rep.Claims.Sent)
	byOutcome := rep.Claims.ByOutcome
	// Request i is buyer i%300 on sale i%2, so each sale meets 150 buyers,
	// each twice: its 40 units are all won, and the rest are refused.
	won := byOutcome["admitted"].Count
	require.Equal(t, int64(80), won, "every unit of both sales is won: %+v", byOutcome)
	require.Equal(t, int64(600), won+byOutcome["sold_out"].Count+byOutcome["already_claimed"].Count,
		"every claim is admitted, sold out or already claimed: %+v", byOutcome)
	require.Equal(t, 80, rep.Sagas.Orders)
	require.Equal(t, 80, rep.Settle.Paid+rep.Settle.Failed+rep.Settle.Abandoned)
	require.Positive(t, rep.Settle.Paid)
	require.Positive(t, rep.Settle.Abandoned)
	require.Equal(t, int64(80-rep.Sagas.SoldOutAtDB), rep.Sagas.ToAwaitPayment.Count,
		"every order that reached AWAITING_PAYMENT is in the saga latencies")
	require.NotNil(t, rep.Anchors.Workflow)
	require.Equal(t, 20, rep.Anchors.Workflow.Workflows)
	if rep.Anchors.Script == nil {
		t.Fatal("anchor (a) missing")
	}
	require.Contains(t, rep.Ratios, "claims_vs_script")
	require.Contains(t, rep.Ratios, "sagas_vs_workflow")
	require.Len(t, rep.Audits, 2)

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
