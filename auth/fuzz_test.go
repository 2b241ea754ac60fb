package auth_test

// Native fuzz targets for bearer tokens under a shared secret: each input
// is checked against an oracle written here from docs/API.md, not only
// that the code does not panic. Without -fuzz, `go test` runs the seed
// corpora as tests.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/auth"
)

// parseToken verifies raw as the API does in shared-secret mode.
func parseToken(secret []byte, raw string) (auth.Principal, error) {
	return auth.NewSecret(secret, "", auth.AdminClaim{}).Verify(context.Background(), raw)
}

// ---------------------------------------------------------------------------
// Bearer tokens

var (
	fuzzJWTSecret = []byte("fuzz-jwt-secret")
	fuzzSubjectRE = regexp.MustCompile(`^[\x20-\x7e]{1,255}$`)
)

func fuzzSign(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	raw, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return raw
}

// tokenOracle checks, without the jwt library, that raw is a token ParseToken
// may accept at a time after before, and returns its sub and role.
func tokenOracle(raw string, secret []byte, before time.Time) (sub, role string, problem string) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", "", "not three segments"
	}
	dec := base64.RawURLEncoding
	hb, err := dec.DecodeString(parts[0])
	if err != nil {
		return "", "", "header is not base64url"
	}
	var header map[string]any
	if json.Unmarshal(hb, &header) != nil {
		return "", "", "header is not a JSON object"
	}
	if header["alg"] != "HS256" {
		return "", "", "alg is not HS256"
	}
	sig, err := dec.DecodeString(parts[2])
	if err != nil {
		return "", "", "signature is not base64url"
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return "", "", "signature is not HMAC-SHA256 with the secret"
	}
	pb, err := dec.DecodeString(parts[1])
	if err != nil {
		return "", "", "payload is not base64url"
	}
	d := json.NewDecoder(bytes.NewReader(pb))
	d.UseNumber()
	var claims map[string]any
	if d.Decode(&claims) != nil {
		return "", "", "payload is not a JSON object"
	}
	switch aud := claims["aud"].(type) {
	case string:
		if aud != auth.DefaultAudience {
			return "", "", "aud is not seckill"
		}
	case []any:
		found := false
		for _, a := range aud {
			found = found || a == auth.DefaultAudience
		}
		if !found {
			return "", "", "aud does not hold seckill"
		}
	default:
		return "", "", "no aud"
	}
	var exp float64
	switch e := claims["exp"].(type) {
	case json.Number:
		exp, err = e.Float64()
	case string:
		exp, err = json.Number(e).Float64()
	default:
		err = errors.New("no exp")
	}
	if err != nil {
		return "", "", "exp is not a number"
	}
	if exp <= float64(before.UnixNano())/1e9 {
		return "", "", "exp is not in the future"
	}
	sub, _ = claims["sub"].(string)
	if !fuzzSubjectRE.MatchString(sub) {
		return "", "", "sub is not 1-255 printable ASCII characters"
	}
	switch r := claims["role"].(type) {
	case string:
		role = r
	case []any:
		// An array claim holding the admin value is an admin's
		// (SECKILL_ADMIN_CLAIM's rule): reported as that value.
		for _, e := range r {
			if e == auth.RoleAdmin {
				role = auth.RoleAdmin
			}
		}
	}
	return sub, role, ""
}

func FuzzParseToken(f *testing.F) {
	now := time.Now()
	exp := now.Add(100 * 365 * 24 * time.Hour).Unix()
	good := jwt.MapClaims{"sub": "u1", "aud": "seckill", "exp": exp}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	user := fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, good)
	admin := fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("role", "admin"))
	seeds := []string{
		user, admin,
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("role", "Admin")),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("aud", []string{"other", "seckill"})),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("aud", "seckill2")),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("aud", nil)),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("exp", nil)),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("exp", now.Add(-time.Minute).Unix())),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("exp", strconv.FormatInt(exp, 10))),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("exp", 1e300)),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("sub", "")),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("sub", strings.Repeat("a", 64))),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("sub", strings.Repeat("a", 65))),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("sub", "u 1")),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("sub", "u1\n")),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("sub", 42)),
		fuzzSign(f, jwt.SigningMethodHS256, fuzzJWTSecret, with("nbf", now.Add(time.Hour).Unix())),
		fuzzSign(f, jwt.SigningMethodHS256, []byte("wrong secret"), good),
		fuzzSign(f, jwt.SigningMethodHS384, fuzzJWTSecret, good),
		fuzzSign(f, jwt.SigningMethodHS512, fuzzJWTSecret, good),
		fuzzSign(f, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good),
		strings.TrimSuffix(user, user[strings.LastIndex(user, ".")+1:]),
		user + ".",
		"Bearer " + user,
		"", ".", "..", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30.",
	}
	for _, s := range seeds {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, raw string) {
		before := time.Now()
		p, err := parseToken(fuzzJWTSecret, raw)
		if err != nil {
			if p.UserID != "" || p.Admin || p.Claims != nil {
				t.Fatalf("error %v with a non-empty principal %+v", err, p)
			}
			return
		}
		sub, role, problem := tokenOracle(raw, fuzzJWTSecret, before)
		if problem != "" {
			t.Fatalf("accepted %q although %s", raw, problem)
		}
		if p.UserID != sub {
			t.Fatalf("principal user %q, token sub %q", p.UserID, sub)
		}
		if p.Admin != (role == auth.RoleAdmin) {
			t.Fatalf("principal admin=%v for role %q", p.Admin, role)
		}
		if _, err := parseToken([]byte("another secret"), raw); err == nil {
			t.Fatalf("%q verifies with another secret too", raw)
		}
	})
}

var fuzzMethods = map[string]jwt.SigningMethod{
	"HS256": jwt.SigningMethodHS256,
	"HS384": jwt.SigningMethodHS384,
	"HS512": jwt.SigningMethodHS512,
	"none":  jwt.SigningMethodNone,
}

var fuzzMethodOrder = []string{"HS256", "HS384", "HS512", "none"}

func FuzzParseTokenClaims(f *testing.F) {
	hour := int64(3600)
	for _, s := range []struct {
		sub, aud, role, alg string
		exp                 int64
	}{
		{"u1", "seckill", "", "HS256", hour},
		{"admin_1", "seckill", "admin", "HS256", hour},
		{"u1", "seckill", "Admin", "HS256", hour},
		{"u1", "seckill", "admin ", "HS256", hour},
		{"u1", "seckill", "admin", "HS384", hour},
		{"u1", "seckill", "admin", "HS512", hour},
		{"u1", "seckill", "admin", "none", hour},
		{"u1", "seckill", "admin", "RS256", hour},
		{"u1", "Seckill", "", "HS256", hour},
		{"u1", "seckill ", "", "HS256", hour},
		{"u1", "", "", "HS256", hour},
		{"u1", "seckill", "", "HS256", 0},
		{"u1", "seckill", "", "HS256", -1},
		{"u1", "seckill", "", "HS256", 1},
		{"u1", "seckill", "", "HS256", 2},
		{"u1", "seckill", "", "HS256", math.MaxInt64},
		{"u1", "seckill", "", "HS256", math.MinInt64},
		{"", "seckill", "", "HS256", hour},
		{strings.Repeat("Z", 64), "seckill", "", "HS256", hour},
		{strings.Repeat("Z", 65), "seckill", "", "HS256", hour},
		{"a-b_C9", "seckill", "", "HS256", hour},
		{"u.1", "seckill", "", "HS256", hour},
		{"u1\n", "seckill", "", "HS256", hour},
		{"\u00fc1", "seckill", "", "HS256", hour},
		{"u\xff", "seckill", "", "HS256", hour},
	} {
		f.Add(s.sub, s.aud, s.role, s.alg, s.exp)
	}

	f.Fuzz(func(t *testing.T, sub, aud, role, alg string, expOffset int64) {
		name := alg
		method, ok := fuzzMethods[alg]
		if !ok {
			name = fuzzMethodOrder[len(alg)%len(fuzzMethodOrder)]
			method = fuzzMethods[name]
		}
		key := any(fuzzJWTSecret)
		if name == "none" {
			key = jwt.UnsafeAllowNoneSignatureType
		}

		now := time.Now()
		claims := jwt.MapClaims{"sub": sub, "aud": aud, "role": role}
		const maxExp = 100 * 365 * 24 * 3600 // offsets the parser's float exp represents exactly
		switch {
		case expOffset > maxExp:
			claims["exp"] = now.Unix() + maxExp + expOffset%1000
		case expOffset < -maxExp:
			claims["exp"] = now.Unix() - maxExp + expOffset%1000
		default:
			claims["exp"] = now.Unix() + expOffset
		}
		exp := claims["exp"].(int64)
		raw := fuzzSign(t, method, key, claims)

		p, err := parseToken(fuzzJWTSecret, raw)
		conditions := name == "HS256" && aud == auth.DefaultAudience && fuzzSubjectRE.MatchString(sub)
		if err == nil {
			if !conditions {
				t.Fatalf("accepted alg=%s aud=%q sub=%q", name, aud, sub)
			}
			if exp <= now.Unix() {
				t.Fatalf("accepted a token that expired at %d (now %d)", exp, now.Unix())
			}
			if p.UserID != sub || p.Admin != (role == auth.RoleAdmin) {
				t.Fatalf("principal %+v for sub %q role %q", p, sub, role)
			}
		} else if conditions && exp >= now.Unix()+2 {
			// exp = now+1 s may pass while the token is parsed; from 2 s on
			// a valid token must be accepted.
			t.Fatalf("refused a valid token (sub %q, role %q, exp %+ds): %v", sub, role, exp-now.Unix(), err)
		}

		// The same claims signed with another secret never verify.
		if name != "none" {
			other := fuzzSign(t, method, []byte("another secret"), claims)
			if _, err := parseToken(fuzzJWTSecret, other); err == nil {
				t.Fatal("accepted a token signed with another secret")
			}
		}
		// HS256 header over HS512 bytes (alg confusion) never verifies.
		if name == "HS512" {
			parts := strings.Split(raw, ".")
			h256 := strings.Split(fuzzSign(t, jwt.SigningMethodHS256, fuzzJWTSecret, claims), ".")[0]
			if _, err := parseToken(fuzzJWTSecret, h256+"."+parts[1]+"."+parts[2]); err == nil {
				t.Fatal("accepted an HS256 header with an HS512 signature")
			}
		}
	})
}
