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
// round a draw waits for is, while its signature is not recorded; a round
// still to come, or recorded, is not late.
func TestDrawBeaconLate_IsHowLongPastItsTimeAnUnrecordedRoundIs(t *testing.T) {
	testenv.NoLeaks(t)
	e := newEnv(t)
	ctx := t.Context()
	lobbySale := func(roundAt time.Time) *seckill.Sale {
		lobby, now := time.Now().Add(-time.Hour), time.Now()
		r := beacon.Dev.FirstRoundAt(roundAt)
		s, err := e.st.CreateSale(ctx, seckill.NewSale{Name: "drop", Currency: "usd", Variants: testenv.DefaultVariant("drop", 100, 5),
			StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Minute, LobbyOpensAt: &lobby,
			Beacon: &seckill.DrawBeacon{Chain: beacon.Dev.Hash, Round: r, RoundAt: beacon.Dev.RoundTime(r)}}, nil)
		require.NoError(t, err)
		return s
	}
	late := lobbySale(time.Now().Add(-2 * time.Minute))
	recorded := lobbySale(time.Now().Add(-2 * time.Minute))
	require.NoError(t, e.st.CloseLobby(ctx, recorded.ID))
	_, err := e.st.SetBeaconSignature(ctx, recorded.ID, beacon.DevSigner().Sign(recorded.DrawBeacon.Round))
	require.NoError(t, err)
	lobbySale(time.Now().Add(time.Hour)) // its round is still to come

	m := scrape(t, opsmetrics.New(e.st, e.rs, opsmetrics.Options{}))
	healthy(t, m)
	got := m["seckill_draw_beacon_late_seconds"]
	require.Len(t, got, 1, "%v", got)
	near(t, time.Since(late.DrawBeacon.RoundAt).Seconds(), got[label(late.ID)], "the late draw")
}
