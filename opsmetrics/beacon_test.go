package opsmetrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/opsmetrics"
)

// seckill_draw_beacon_late_seconds: how long past its time the beacon
// round a draw waits for is, while the draw has not ranked; a round still
// to come, or a draw ranked, is not late.
func TestDrawBeaconLate_IsHowLongPastItsTimeAnUnrecordedRoundIs(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	lobbySale := func(roundAt time.Time) *seckill.Sale { return testenv.BeaconLobbySale(t, e.st, roundAt) }
	late := lobbySale(time.Now().Add(-2 * time.Minute))
	// Its round read, its ranking refused (the entries are not those
	// committed): as late, and for the same alert.
	refused := lobbySale(time.Now().Add(-2 * time.Minute))
	require.NoError(t, e.st.CloseLobby(ctx, refused.ID))
	_, err := e.st.SetBeaconSignature(ctx, refused.ID, beacon.DevSigner().Sign(refused.DrawBeacon.Round))
	require.NoError(t, err)
	ranked := lobbySale(time.Now().Add(-2 * time.Minute))
	require.NoError(t, e.st.CloseLobby(ctx, ranked.ID))
	require.NoError(t, e.st.MarkRanked(ctx, ranked.ID, 0, 0))
	lobbySale(time.Now().Add(time.Hour)) // its round is still to come

	m := scrape(t, opsmetrics.New(e.st, e.rs, opsmetrics.Options{}))
	healthy(t, m)
	got := m["seckill_draw_beacon_late_seconds"]
	require.Len(t, got, 2, "%v", got)
	near(t, time.Since(late.DrawBeacon.RoundAt).Seconds(), got[label(late.ID)], "the late draw")
	near(t, time.Since(refused.DrawBeacon.RoundAt).Seconds(), got[label(refused.ID)], "the refused ranking")
}
