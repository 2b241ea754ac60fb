//go:build !slim

package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/beacon"
)

// SECKILL_BEACON_URLS: unset, drand's public endpoints (and `seckill dev`
// serves its own beacon instead); "none", no beacon: new sales' draws use
// their secret seed alone; otherwise the URLs given. SECKILL_BEACON_CHAIN
// names the chain, quicknet unless dev; anything else is refused.
func TestConfig_Beacon(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cfg, err := app.FromEnv(env(nil))
	require.NoError(t, err)
	require.True(t, cfg.BeaconLocal)
	require.Equal(t, beacon.DefaultURLs, cfg.BeaconURLs)
	require.Equal(t, beacon.Quicknet.Hash, cfg.Beacon().Hash)

	cfg, err = app.FromEnv(env(map[string]string{"SECKILL_BEACON_URLS": "none"}))
	require.NoError(t, err)
	require.False(t, cfg.BeaconLocal)
	require.Nil(t, cfg.Beacon(), "no beacon: v3's draw")

	cfg, err = app.FromEnv(env(map[string]string{"SECKILL_BEACON_URLS": "http://relay-a:8080/,https://relay-b", "SECKILL_BEACON_CHAIN": "dev"}))
	require.NoError(t, err)
	require.Equal(t, []string{"http://relay-a:8080", "https://relay-b"}, cfg.BeaconURLs)
	require.Equal(t, beacon.Dev.Hash, cfg.Beacon().Hash)

	_, err = app.FromEnv(env(map[string]string{"SECKILL_BEACON_URLS": "ftp://relay"}))
	require.ErrorContains(t, err, "SECKILL_BEACON_URLS")
	_, err = app.FromEnv(env(map[string]string{"SECKILL_BEACON_CHAIN": "mainnet"}))
	require.ErrorContains(t, err, "SECKILL_BEACON_CHAIN must be quicknet or dev")
}
