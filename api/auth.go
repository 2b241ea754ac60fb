package api

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// wwwAuthenticate is the challenge of every 401 (RFC 6750, docs/API.md),
// set by the error handler.
const wwwAuthenticate = `Bearer error="invalid_token"`

const principalKey = "principal"

// authenticate requires a valid bearer token: 401 UNAUTHENTICATED
// otherwise, and 503 UNAVAILABLE while the identity
// provider's keys are not loaded yet.
func (s *Server) authenticate(c *fiber.Ctx) error {
	raw, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if raw = strings.TrimSpace(raw); !ok || raw == "" {
		return seckill.Errorf(seckill.CodeUnauthenticated, "a bearer token is required")
	}
	p, err := s.cfg.Auth.Verify(c.UserContext(), raw)
	if errors.Is(err, auth.ErrNotReady) {
		return seckill.Errorf(seckill.CodeUnavailable, "sign-in is not available yet; try again shortly")
	}
	if err != nil {
		return seckill.Errorf(seckill.CodeUnauthenticated, "invalid or expired token")
	}
	c.Locals(principalKey, p)
	return c.Next()
}

// requireAdmin must follow authenticate.
func requireAdmin(c *fiber.Ctx) error {
	if !principal(c).Admin {
		return seckill.Errorf(seckill.CodeForbidden, "admin role required")
	}
	return c.Next()
}

func principal(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(principalKey).(auth.Principal)
	return p
}
