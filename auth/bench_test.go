package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/auth"
)

// keySet serves the public halves of keys (kid -> private key) as a JWKS.
func keySet(tb testing.TB, keys map[string]crypto.Signer) *httptest.Server {
	tb.Helper()
	set := jwkset.NewMemoryStorage()
	for kid, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}})
		if err != nil {
			tb.Fatal(err)
		}
		if err := set.KeyWrite(context.Background(), jwk); err != nil {
			tb.Fatal(err)
		}
	}
	body, err := set.JSONPublic(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// readyProvider is a Provider on url, loaded.
func readyProvider(tb testing.TB, url string) *auth.Provider {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := auth.NewProvider(ctx, auth.ProviderConfig{Issuer: "https://id.example", JWKSURL: url})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cancel(); p.Wait() })
	for deadline := time.Now().Add(10 * time.Second); p.Ready() != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("keys not loaded: %v", p.Ready())
		}
	}
	return p
}

func signed(tb testing.TB, method jwt.SigningMethod, kid string, key any) string {
	tb.Helper()
	tok := jwt.NewWithClaims(method, jwt.MapClaims{
		"sub": "auth0|5f3c9a2b", "aud": "seckill", "iss": "https://id.example",
		"exp": time.Now().Add(time.Hour).Unix(), "role": "admin",
	})
	if kid != "" {
		tok.Header["kid"] = kid
	}
	raw, err := tok.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkVerify is the cost of verifying one claim's token: the shared
// secret, and a provider's RS256 (2048-bit) and ES256 keys.
func BenchmarkVerify(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	p := readyProvider(b, keySet(b, map[string]crypto.Signer{"rsa": rsaKey, "ec": ecKey}).URL)
	secret := []byte("bench-secret")
	hs, err := auth.SignToken(secret, "auth0|5f3c9a2b", true, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    auth.Verifier
		raw  string
	}{
		{"HS256", auth.NewSecret(secret, "", auth.AdminClaim{}), hs},
		{"RS256", p, signed(b, jwt.SigningMethodRS256, "rsa", rsaKey)},
		{"ES256", p, signed(b, jwt.SigningMethodES256, "ec", ecKey)},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if pr, err := c.v.Verify(ctx, c.raw); err != nil || !pr.Admin {
					b.Fatalf("%+v %v", pr, err)
				}
			}
		})
	}
}
