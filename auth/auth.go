// Package auth verifies the bearer tokens of docs/API.md "Authentication":
// a shop's identity provider (its keys from a JWKS, found through OpenID
// discovery or given as a URL), or a secret shared with seckill (HS256,
// for `seckill dev` and small installations). Both give a Principal: the
// token's subject, and whether its admin claim holds the admin value.
package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultAudience is the "aud" every token must hold unless
// SECKILL_JWT_AUDIENCE says otherwise.
const DefaultAudience = "seckill"

// RoleAdmin is the "role" claim of the admin tokens SignToken mints, and
// DefaultAdminClaim's value.
const RoleAdmin = "admin"

// DefaultAdminClaim is SECKILL_ADMIN_CLAIM's default.
const DefaultAdminClaim = "/role=" + RoleAdmin

// MaxSubject is the longest "sub" accepted.
const MaxSubject = 255

// Principal is the authenticated caller.
type Principal struct {
	UserID string
	Admin  bool
	// Claims are the verified token's claims, for the checks a sale makes
	// of its buyers (a presale's claim: Holds).
	Claims map[string]any
}

// Holds reports whether p's token carries claim (an AdminClaim's form,
// such as a presale's "/groups=vip").
func (p Principal) Holds(claim AdminClaim) bool { return claim.path != nil && claim.Holds(p.Claims) }

// Verifier checks a raw bearer token.
type Verifier interface {
	// Verify returns the principal of raw, or an error: ErrNotReady
	// while no provider key set has been loaded yet, any other error for
	// a token that is refused.
	Verify(ctx context.Context, raw string) (Principal, error)
	// Ready is nil once tokens can be verified (a provider's key set
	// loaded once; at once with a shared secret), else why not.
	Ready() error
}

// ErrNotReady: the provider's key set has not been loaded yet.
var ErrNotReady = errors.New("the identity provider's keys are not loaded yet")

// ValidSubject reports whether sub is 1-255 printable ASCII characters,
// as docs/API.md allows (providers issue "auth0|5f3c...", UUIDs, e-mail
// like ids).
func ValidSubject(sub string) bool {
	if len(sub) == 0 || len(sub) > MaxSubject {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if sub[i] < 0x20 || sub[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkSubject is ValidSubject as an error.
func checkSubject(sub string) error {
	if !ValidSubject(sub) {
		return fmt.Errorf("sub must be 1-%d printable ASCII characters", MaxSubject)
	}
	return nil
}

// principalOf reads the principal of verified claims.
func principalOf(c jwt.MapClaims, admin AdminClaim) (Principal, error) {
	sub, err := c.GetSubject()
	if err != nil {
		return Principal{}, err
	}
	if err := checkSubject(sub); err != nil {
		return Principal{}, err
	}
	return Principal{UserID: sub, Admin: admin.Holds(c), Claims: c}, nil
}

// AdminClaim is SECKILL_ADMIN_CLAIM: a JSON Pointer (RFC 6901) to a claim
// and the value that claim must be, or contain when it is an array.
type AdminClaim struct {
	path  []string
	value string
}

// ParseAdminClaim parses "<JSON Pointer>=<value>", e.g. "/role=admin",
// "/realm_access/roles=seckill-admin", "/https:~1~1shop.example~1roles=admin".
// The pointer ends at the first "=": the value may hold "=" (an LDAP group
// such as cn=admins,ou=groups), a pointer cannot.
func ParseAdminClaim(s string) (AdminClaim, error) {
	ptr, value, ok := strings.Cut(s, "=")
	if !ok {
		return AdminClaim{}, fmt.Errorf("admin claim %q: want <JSON Pointer>=<value>, e.g. %s", s, DefaultAdminClaim)
	}
	if !strings.HasPrefix(ptr, "/") || len(ptr) < 2 {
		return AdminClaim{}, fmt.Errorf("admin claim %q: %q is not a JSON Pointer to a claim (it starts with /)", s, ptr)
	}
	if value == "" {
		return AdminClaim{}, fmt.Errorf("admin claim %q: the value after = is empty", s)
	}
	var path []string
	for _, tok := range strings.Split(ptr[1:], "/") {
		// RFC 6901: "~" is only ever "~0" (a ~) or "~1" (a /).
		for i := 0; i < len(tok); i++ {
			if tok[i] == '~' && (i+1 == len(tok) || (tok[i+1] != '0' && tok[i+1] != '1')) {
				return AdminClaim{}, fmt.Errorf("admin claim %q: %q escapes ~ other than ~0 and ~1", s, tok)
			}
		}
		path = append(path, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
	}
	return AdminClaim{path: path, value: value}, nil
}

// MustAdminClaim is ParseAdminClaim for a constant.
func MustAdminClaim(s string) AdminClaim {
	a, err := ParseAdminClaim(s)
	if err != nil {
		panic(err)
	}
	return a
}

// Holds reports whether the claims hold the admin value at the pointer:
// the claim is the value, or an array with the value in it.
func (a AdminClaim) Holds(claims map[string]any) bool {
	var at any = claims
	for _, key := range a.path {
		obj, ok := at.(map[string]any)
		if !ok {
			return false
		}
		if at, ok = obj[key]; !ok {
			return false
		}
	}
	switch v := at.(type) {
	case string:
		return v == a.value
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == a.value {
				return true
			}
		}
	}
	return false
}

// registered are the JWT claims SignWith sets itself (RFC 7519 4.1).
var registered = map[string]bool{"iss": true, "sub": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true}

// setIn puts a's value at its pointer in claims: the value alone in an
// array, or added to the array (or the one value) there.
func (a AdminClaim) setIn(claims map[string]any) error {
	switch {
	case a.path == nil:
		return errors.New("an empty claim")
	case registered[a.path[0]]:
		return fmt.Errorf("claim %s: %q is a registered claim the token's validity rests on", a, a.path[0])
	}
	at := claims
	for _, key := range a.path[:len(a.path)-1] {
		switch next := at[key].(type) {
		case map[string]any:
			at = next
		case nil:
			m := map[string]any{}
			at[key], at = m, m
		default:
			return fmt.Errorf("claim %s: %q holds a value, not an object", a, key)
		}
	}
	last := a.path[len(a.path)-1]
	switch v := at[last].(type) {
	case nil:
		at[last] = []any{a.value}
	case string:
		at[last] = []any{v, a.value}
	case []any:
		at[last] = append(v, a.value)
	default:
		return fmt.Errorf("claim %s: %q holds an object, not a value", a, last)
	}
	return nil
}

// String is the setting's form.
func (a AdminClaim) String() string {
	var b strings.Builder
	for _, key := range a.path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1"))
	}
	return b.String() + "=" + a.value
}

// Secret verifies HS256 tokens under a shared secret, and signs them.
type Secret struct {
	key      []byte
	audience string
	admin    AdminClaim
	parser   *jwt.Parser
}

// NewSecret verifies HS256 tokens signed with key whose "aud" holds
// audience (DefaultAudience when empty); admin says who is an admin
// (zero: DefaultAdminClaim).
func NewSecret(key []byte, audience string, admin AdminClaim) *Secret {
	if audience == "" {
		audience = DefaultAudience
	}
	if admin.path == nil {
		admin = MustAdminClaim(DefaultAdminClaim)
	}
	return &Secret{key: key, audience: audience, admin: admin, parser: jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(audience),
		jwt.WithExpirationRequired(),
	)}
}

// Verify implements Verifier.
func (s *Secret) Verify(_ context.Context, raw string) (Principal, error) {
	c := jwt.MapClaims{}
	if _, err := s.parser.ParseWithClaims(raw, c, func(*jwt.Token) (any, error) { return s.key, nil }); err != nil {
		return Principal{}, err
	}
	return principalOf(c, s.admin)
}

// Ready implements Verifier: a secret is always ready.
func (s *Secret) Ready() error { return nil }

// Sign returns an HS256 token for user that this Secret accepts: "aud"
// its audience and, when admin, its admin claim set to its value (the
// claim at the pointer, e.g. {"realm_access": {"roles": "seckill-admin"}}),
// valid for ttl. What `seckill token`, `seckill dev` and the command-line
// tools hand out.
func (s *Secret) Sign(user string, admin bool, ttl time.Duration) (string, error) {
	return s.SignWith(user, admin, ttl)
}

// SignWith is Sign with extra claims set too, each as its pointer says (a
// presale's "/groups=vip" gives {"groups": ["vip"]}); several at one
// pointer make an array holding each value. A claim whose pointer crosses
// a value that is not an object is an error.
func (s *Secret) SignWith(user string, admin bool, ttl time.Duration, extra ...AdminClaim) (string, error) {
	if len(s.key) == 0 {
		return "", errors.New("no JWT secret to sign with (SECKILL_JWT_SECRET)")
	}
	if err := checkSubject(user); err != nil {
		return "", fmt.Errorf("user id %q: %w", user, err)
	}
	if ttl <= 0 {
		return "", errors.New("ttl must be positive")
	}
	now := time.Now()
	c := jwt.MapClaims{
		"sub": user,
		"aud": []string{s.audience},
		"iat": jwt.NewNumericDate(now),
		"exp": jwt.NewNumericDate(now.Add(ttl)),
	}
	if admin {
		var at map[string]any = c
		for _, key := range s.admin.path[:len(s.admin.path)-1] {
			next, ok := at[key].(map[string]any)
			if !ok {
				next = map[string]any{}
				at[key] = next
			}
			at = next
		}
		at[s.admin.path[len(s.admin.path)-1]] = s.admin.value
	}
	for _, e := range extra {
		if err := e.setIn(c); err != nil {
			return "", err
		}
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.key)
}

// SignToken is Sign under secret with the default audience and admin
// claim ("role": "admin").
func SignToken(secret []byte, user string, admin bool, ttl time.Duration) (string, error) {
	return NewSecret(secret, "", AdminClaim{}).Sign(user, admin, ttl)
}
