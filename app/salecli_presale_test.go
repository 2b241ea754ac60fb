package app

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seckill sale create --presale-starts-at --presale-claim: the body's
// presale, its start read as --starts is; both flags or neither.
func TestSaleCreateBody_PresaleFlags(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	n := newSale{name: "drop", price: "9.90", stock: 5, currency: "usd", starts: "+1h", ends: "+1h", timeout: time.Minute, segments: 1,
		presaleAt: "+10m", presaleClaim: "/groups=vip"}
	raw, err := n.body(now)
	require.NoError(t, err)
	var body struct {
		StartsAt string         `json:"starts_at"`
		Presale  map[string]any `json:"presale"`
	}
	require.NoError(t, json.Unmarshal(raw, &body))
	require.Equal(t, "2026-11-22T11:00:00Z", body.StartsAt)
	require.Equal(t, map[string]any{"starts_at": "2026-11-22T10:10:00Z", "claim": "/groups=vip"}, body.Presale)

	n.presaleAt, n.presaleClaim = "2026-11-22T10:30:00Z", "/realm_access/roles=early"
	raw, err = n.body(now)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &body))
	require.Equal(t, map[string]any{"starts_at": "2026-11-22T10:30:00Z", "claim": "/realm_access/roles=early"}, body.Presale)

	n.presaleClaim = ""
	_, err = n.body(now)
	require.ErrorContains(t, err, "both --presale-starts-at and --presale-claim")
	n.presaleAt, n.presaleClaim = "", "/groups=vip"
	_, err = n.body(now)
	require.ErrorContains(t, err, "both --presale-starts-at and --presale-claim")
	n.presaleAt = "tomorrow"
	_, err = n.body(now)
	require.ErrorContains(t, err, "--presale-starts-at")

	n.presaleAt, n.presaleClaim = "", ""
	raw, err = n.body(now)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "presale", "no presale without the flags")
}
