package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/auth"
)

var secret = []byte("test-jwt-secret")

func TestSignToken_VerifiesUnderItsSecretOnly(t *testing.T) {
	for _, tt := range []struct {
		name, user string
		admin      bool
	}{
		{"user", "u1", false},
		{"admin", "ops_team-1", true},
		{"a provider's id", "auth0|5f3c9a2b", false},
		{"e-mail like", "ann@example.com", false},
		{"255 characters", strings.Repeat("a", 255), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := auth.SignToken(secret, tt.user, tt.admin, time.Hour)
			require.NoError(t, err)
			tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
			require.NoError(t, err)
			require.Equal(t, "HS256", tok.Header["alg"])

			p, err := auth.NewSecret(secret, "", auth.AdminClaim{}).Verify(context.Background(), raw)
			require.NoError(t, err)
			require.Equal(t, tt.user, p.Claims["sub"], "the verified token's claims")
			p.Claims = nil
			require.Equal(t, auth.Principal{UserID: tt.user, Admin: tt.admin}, p)
			_, err = auth.NewSecret([]byte("another"), "", auth.AdminClaim{}).Verify(context.Background(), raw)
			require.ErrorIs(t, err, jwt.ErrSignatureInvalid)
			_, err = auth.NewSecret(secret, "other-audience", auth.AdminClaim{}).Verify(context.Background(), raw)
			require.ErrorIs(t, err, jwt.ErrTokenInvalidAudience)
		})
	}
}

func TestSignToken_RefusesBadInput(t *testing.T) {
	for _, tt := range []struct {
		name, user string
		ttl        time.Duration
	}{
		{"empty user", "", time.Hour},
		{"256 characters", strings.Repeat("a", 256), time.Hour},
		{"non-ascii", "ü1", time.Hour},
		{"newline", "u1\n", time.Hour},
		{"tab", "u\t1", time.Hour},
		{"zero ttl", "u1", 0},
		{"negative ttl", "u1", -time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := auth.SignToken(secret, tt.user, false, tt.ttl)
			require.Error(t, err)
			require.Empty(t, raw)
		})
	}
}

func TestAdminClaim_EachDocumentedShape(t *testing.T) {
	claims := map[string]any{
		"role":                       "admin",
		"realm_access":               map[string]any{"roles": []any{"user", "seckill-admin"}},
		"https://shop.example/roles": []any{"admin"},
		"cognito:groups":             []any{"buyers"},
		"a~b":                        "x",
		"groups":                     []any{"cn=admins,ou=groups"},
	}
	for setting, want := range map[string]bool{
		"/role=admin":                            true,
		"/role=Admin":                            false,
		"/realm_access/roles=seckill-admin":      true,
		"/realm_access/roles=admin":              false,
		"/https:~1~1shop.example~1roles=admin":   true,
		"/cognito:groups=admin":                  false,
		"/a~0b=x":                                true,
		"/missing=admin":                         false,
		"/realm_access=seckill-admin":            false, // an object is neither
		"/realm_access/roles/0=user":             false, // arrays are not walked into
		"/https:~1~1shop.example~1roles=admin=1": false,
		"/groups=cn=admins,ou=groups":            true, // the value may hold =
	} {
		a, err := auth.ParseAdminClaim(setting)
		require.NoError(t, err, setting)
		require.Equal(t, want, a.Holds(claims), setting)
		require.Equal(t, setting, a.String(), "the setting reads back")
	}
	for _, bad := range []string{"", "role=admin", "/role", "/role=", "=admin", "/=admin", "/a~2b=x", "/a~=x", "/a~~01=x", "/a~"} {
		_, err := auth.ParseAdminClaim(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestValidSubject_IsPrintableASCIIOfOneTo255Bytes(t *testing.T) {
	for sub, want := range map[string]bool{
		"u1": true, "auth0|5f3c": true, "a b": true, "~": true, strings.Repeat("z", 255): true,
		"": false, strings.Repeat("z", 256): false, "\x7f": false, "é": false, "a\x00": false,
	} {
		require.Equal(t, want, auth.ValidSubject(sub), "%q", sub)
	}
}

// The tokens seckill mints are ones its own settings accept: the
// configured audience, and for an admin the configured admin claim.
func TestSecret_SignsWhatItAccepts(t *testing.T) {
	admin := auth.MustAdminClaim("/realm_access/roles=seckill-admin")
	s := auth.NewSecret([]byte("k"), "shop-api", admin)
	for _, isAdmin := range []bool{false, true} {
		raw, err := s.Sign("auth0|5f3c", isAdmin, time.Minute)
		require.NoError(t, err)
		p, err := s.Verify(context.Background(), raw)
		require.NoError(t, err)
		p.Claims = nil
		require.Equal(t, auth.Principal{UserID: "auth0|5f3c", Admin: isAdmin}, p)
	}
	_, err := auth.NewSecret(nil, "", auth.AdminClaim{}).Sign("bob", false, time.Minute)
	require.ErrorContains(t, err, "no JWT secret")
}

// seckill token --claim: the extra claims SignWith sets are held, each at
// its pointer, several at one pointer in an array; the registered claims
// and a pointer through a value are refused.
func TestSecret_SignWithSetsTheExtraClaims(t *testing.T) {
	s := auth.NewSecret([]byte("k"), "", auth.MustAdminClaim("/realm_access/roles=seckill-admin"))
	vip, staff := auth.MustAdminClaim("/groups=vip"), auth.MustAdminClaim("/groups=staff")
	raw, err := s.SignWith("ann", true, time.Minute, vip, staff, auth.MustAdminClaim("/realm_access/roles=early"))
	require.NoError(t, err)
	p, err := s.Verify(context.Background(), raw)
	require.NoError(t, err)
	require.Equal(t, "ann", p.UserID)
	require.True(t, p.Admin, "the admin claim and an extra value at its pointer")
	for _, c := range []string{"/groups=vip", "/groups=staff", "/realm_access/roles=early"} {
		require.True(t, p.Holds(auth.MustAdminClaim(c)), c)
	}
	require.False(t, p.Holds(auth.MustAdminClaim("/groups=other")))
	require.False(t, p.Holds(auth.AdminClaim{}), "the zero claim is held by nobody")

	plain, err := s.Sign("bob", false, time.Minute)
	require.NoError(t, err)
	p, err = s.Verify(context.Background(), plain)
	require.NoError(t, err)
	require.False(t, p.Holds(vip))

	_, err = s.SignWith("ann", false, time.Minute, auth.MustAdminClaim("/sub=eve"))
	require.ErrorContains(t, err, "registered claim")
	_, err = s.SignWith("ann", false, time.Minute, vip, auth.MustAdminClaim("/groups/x=y"))
	require.ErrorContains(t, err, "not an object")
}
