//go:build !slim

package app_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
)

// TestRateLimits_PerUserAndPerClientAddress: a user's claims beyond the
// limit, and a client address's requests beyond its limit, get 429
// RATE_LIMITED with Retry-After; others are not affected.
func TestRateLimits_PerUserAndPerClientAddress(t *testing.T) {
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.ClaimRate.Max, c.ClaimRate.Window = 3, time.Minute
		c.IPRate.Max, c.IPRate.Window = 20, time.Minute
		c.IPRate.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}})
	sale := s.createSale(100, 600*time.Second)
	claim := func(user, client string) response {
		r, err := s.do("POST", "/api/v1/sales/"+sale+"/claims", s.token(user, false), nil,
			map[string]string{"X-Forwarded-For": client})
		require.NoError(t, err)
		return r
	}

	// Per user: three attempts a minute on this sale.
	for i := range 3 {
		r := claim("hasty", "198.51.100.1")
		require.Contains(t, []int{202, 409}, r.status, "attempt %d: %s", i, r.body)
	}
	r := claim("hasty", "198.51.100.2")
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "RATE_LIMITED", r.json(t)["code"])
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.InDelta(t, 60, retry, 2)
	require.Equal(t, 202, claim("patient", "198.51.100.3").status)

	// Per client address (as told by the trusted proxy): 20 a minute.
	limited := 0
	for i := range 25 {
		r := claim("user"+strconv.Itoa(i), "203.0.113.50")
		if r.status == http.StatusTooManyRequests {
			require.Equal(t, "RATE_LIMITED", r.json(t)["code"])
			require.NotEmpty(t, r.header.Get("Retry-After"))
			limited++
		}
	}
	require.Equal(t, 5, limited, "the first 20 pass, the other 5 are limited")
	require.Equal(t, 202, claim("elsewhere", "203.0.113.51").status, "another address is not limited")
	// The webhook is never limited by address.
	for range 25 {
		r := s.webhook("evt_flood", "payment_intent.succeeded", "1", 990)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
}
