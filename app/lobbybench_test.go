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

	"github.com/seckill/seckill/bench"
)

// TestBench_LobbySmallRunEndToEnd runs `seckill bench --lobby` on a small
// configuration against a system in this process: more buyers than units,
// every one entered, the draw, its figures and the verifier. It checks
// the run and its bookkeeping, never its speed.
func TestBench_LobbySmallRunEndToEnd(t *testing.T) {
	sys := startSystem(t, systemOptions{})
	out := t.TempDir()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench.RunLobby(ctx, bench.LobbyOptions{
		Options: bench.Options{
			APIURL: sys.info.APIURL, Config: sys.cfg,
			Units: 40, Buyers: 300, Rate: 300, Conns: 16,
			OutDir: out, Progress: &progress,
		},
		Window: 4 * time.Second, DrawWithin: 3 * time.Minute, Verify: true,
	})
	require.NoError(t, err, progress.String())
	t.Log("\n" + rep.String())
	require.True(t, rep.OK(), "problems: %v\n%s", rep.Problems(), progress.String())

	require.Equal(t, 300, rep.Entries.Sent+rep.Entries.NotSent)
	require.Equal(t, rep.Entries.Sent, rep.Entries.Entered, "every entry sent was answered 201: %v", rep.Entries.Errors)
	require.Equal(t, rep.Entries.Entered, rep.Draw.Entries)
	require.Equal(t, 40, rep.Draw.Admitted)
	require.Equal(t, 40, rep.Draw.Orders)
	require.Equal(t, 40, rep.Draw.Outcomes["WON"])
	require.Equal(t, rep.Draw.Entries-40, rep.Draw.Outcomes["WAITING"]+rep.Draw.Outcomes["LOST"])
	// The draw's times, from starts_at, come in their order.
	d := rep.Draw
	require.Positive(t, d.FirstAdmissionSeconds)
	require.LessOrEqual(t, d.FirstAdmissionSeconds, d.LastAdmissionSeconds)
	require.Less(t, d.LastAdmissionSeconds, d.LastAwaitingSeconds)
	require.LessOrEqual(t, d.LastAdmissionSeconds, d.DoneSeconds)
	require.Equal(t, int64(40), d.AdmittedToAwaiting.Count)
	require.Positive(t, rep.Table.BeforeDrawBytes)
	require.Equal(t, int64(rep.Draw.Entries), rep.Table.Rows)
	require.NotNil(t, rep.Verify)
	require.True(t, rep.Verify.OK, "%+v", rep.Verify)

	var written bench.LobbyReport
	b, err := os.ReadFile(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &written))
	require.Equal(t, rep.Draw.Admitted, written.Draw.Admitted)
}
