package api_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
)

func TestClientIP_TrustsForwardedForOnlyFromProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name, remote, xff, want string
	}{
		{"direct client, no header", "203.0.113.9", "", "203.0.113.9"},
		{"direct client forging the header", "203.0.113.9", "198.51.100.1", "203.0.113.9"},
		{"through one proxy", "10.0.0.2", "198.51.100.1", "198.51.100.1"},
		{"client prepends a forged hop", "10.0.0.2", "1.2.3.4, 198.51.100.1", "198.51.100.1"},
		{"through two proxies", "10.0.0.2", "198.51.100.1, 10.0.0.3", "198.51.100.1"},
		{"only proxies", "10.0.0.2", "10.0.0.3", "10.0.0.2"},
		{"garbage header", "10.0.0.2", "not-an-ip", "10.0.0.2"},
		{"IPv6 proxy", "::1", "2001:db8::7", "2001:db8::7"},
		{"IPv4-mapped remote", "::ffff:10.0.0.2", "198.51.100.1", "198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := api.ClientIP(netip.MustParseAddr(tt.remote), tt.xff, trusted)
			require.Equal(t, tt.want, got.String())
		})
	}
}
