package api

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill"
)

// Audience is the required "aud" of every token.
const Audience = "seckill"

// RoleAdmin is the "role" claim of admin tokens.
const RoleAdmin = "admin"

var subjectRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Claims are the JWT claims seckill reads.
type Claims struct {
	jwt.RegisteredClaims
	Role string `json:"role,omitempty"`
}

// Principal is the authenticated caller.
type Principal struct {
	UserID string
	Admin  bool
}

// SignToken returns an HS256 token for user, admin or not, valid for ttl.
func SignToken(secret []byte, user string, admin bool, ttl time.Duration) (string, error) {
	if !subjectRE.MatchString(user) {
		return "", fmt.Errorf("user id must be 1-64 characters of [A-Za-z0-9_-], got %q", user)
	}
	if ttl <= 0 {
		return "", errors.New("ttl must be positive")
	}
	now := time.Now()
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   user,
		Audience:  jwt.ClaimStrings{Audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	if admin {
		c.Role = RoleAdmin
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
}

// verifier checks bearer tokens: HS256 only, aud "seckill", exp required,
// sub 1-64 characters of [A-Za-z0-9_-].
type verifier struct {
	secret []byte
	parser *jwt.Parser
}

func newVerifier(secret []byte) *verifier {
	return &verifier{secret: secret, parser: jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(Audience),
		jwt.WithExpirationRequired(),
	)}
}

// ParseToken verifies a raw bearer token against secret with the rules of
// docs/API.md and returns its principal.
func ParseToken(secret []byte, raw string) (Principal, error) {
	return newVerifier(secret).Verify(raw)
}

// Verify returns the principal of a raw token.
func (v *verifier) Verify(raw string) (Principal, error) {
	var c Claims
	_, err := v.parser.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return v.secret, nil })
	if err != nil {
		return Principal{}, err
	}
	if !subjectRE.MatchString(c.Subject) {
		return Principal{}, errors.New("sub must be 1-64 characters of [A-Za-z0-9_-]")
	}
	return Principal{UserID: c.Subject, Admin: c.Role == RoleAdmin}, nil
}

const principalKey = "principal"

// authenticate requires a valid bearer token.
func (v *verifier) authenticate(c *fiber.Ctx) error {
	h := c.Get(fiber.HeaderAuthorization)
	raw, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || raw == "" {
		return seckill.Errorf(seckill.CodeUnauthenticated, "a bearer token is required")
	}
	p, err := v.Verify(strings.TrimSpace(raw))
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

func principal(c *fiber.Ctx) Principal {
	p, _ := c.Locals(principalKey).(Principal)
	return p
}
