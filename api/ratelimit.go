package api

import (
	"net/netip"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"

	"github.com/seckill/seckill"
)

// IPLimit limits requests per client IP in a sliding window, in this
// process. Zero Max: no limit.
type IPLimit struct {
	Max    int
	Window time.Duration
	// TrustedProxies may set X-Forwarded-For; from anyone else the header
	// is ignored and the connection's address is the client.
	TrustedProxies []netip.Prefix
}

// ClientIP returns the client address of a request that came from remote
// with X-Forwarded-For xff: walking the header from the right, the first
// address that is not a trusted proxy. Without a trusted remote the header
// is ignored (anyone can write it).
func ClientIP(remote netip.Addr, xff string, trusted []netip.Prefix) netip.Addr {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	if !isTrusted(remote) || xff == "" {
		return remote.Unmap()
	}
	hops := strings.Split(xff, ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return remote.Unmap() // a forged or broken header: use what we know
		}
		if !isTrusted(a) {
			return a.Unmap()
		}
	}
	return remote.Unmap()
}

func ipLimiter(l IPLimit) fiber.Handler {
	return limiter.New(limiter.Config{
		Max:               l.Max,
		Expiration:        l.Window,
		LimiterMiddleware: limiter.SlidingWindow{},
		KeyGenerator: func(c *fiber.Ctx) string {
			remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
			return ClientIP(remote, c.Get(fiber.HeaderXForwardedFor), l.TrustedProxies).String()
		},
		LimitReached: func(*fiber.Ctx) error {
			return seckill.Errorf(seckill.CodeRateLimited, "too many requests from this address")
		},
	})
}
