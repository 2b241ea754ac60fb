package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/auth"
)

// idp is a stand-in identity provider on loopback: a discovery document
// and a key set that the test changes, counting how often the key set is
// read. The token endpoint of a real provider is exercised in app/
// (internal/oidcop); here the tokens are signed by the test.
type idp struct {
	srv   *httptest.Server
	mu    sync.Mutex
	keys  map[string]crypto.Signer
	down  bool
	reads atomic.Int32
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	p := &idp{keys: map[string]crypto.Signer{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration"):
		_, _ = w.Write([]byte(`{"issuer":"` + p.srv.URL + `","jwks_uri":"` + p.srv.URL + `/jwks"}`))
	case r.URL.Path == "/jwks":
		p.reads.Add(1)
		set := jwkset.NewMemoryStorage()
		for kid, k := range p.keys {
			jwk, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}})
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			_ = set.KeyWrite(r.Context(), jwk)
		}
		body, _ := set.JSONPublic(r.Context())
		_, _ = w.Write(body)
	default:
		http.NotFound(w, r)
	}
}

func (p *idp) set(kid string, k crypto.Signer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k == nil {
		delete(p.keys, kid)
	} else {
		p.keys[kid] = k
	}
}

func (p *idp) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// verifier discovers p's keys and waits until they are loaded.
func (p *idp) verifier(t *testing.T, admin string, refresh time.Duration) *auth.Provider {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	v, err := auth.NewProvider(ctx, auth.ProviderConfig{Discover: true, Issuer: p.srv.URL, Admin: auth.MustAdminClaim(admin), Refresh: refresh})
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); v.Wait() })
	require.Eventually(t, func() bool { return v.Ready() == nil }, 10*time.Second, 10*time.Millisecond)
	return v
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}

// token signs claims (sub, aud, iss and exp filled in unless given) with
// key under kid.
func (p *idp) token(t *testing.T, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"sub": "auth0|5f3c9a2b", "aud": []string{"shop-web", "seckill"}, "iss": p.srv.URL, "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	tok := jwt.NewWithClaims(method, c)
	tok.Header["kid"] = kid
	raw, err := tok.SignedString(key)
	require.NoError(t, err)
	return raw
}

func TestProvider_AcceptsItsKeysTokensOnly(t *testing.T) {
	p := newIDP(t)
	rk, ek := rsaKey(t), ecKey(t)
	p.set("r1", rk)
	p.set("e1", ek)
	v := p.verifier(t, "/realm_access/roles=seckill-admin", 0)
	ctx := context.Background()

	pr, err := v.Verify(ctx, p.token(t, jwt.SigningMethodRS256, "r1", rk, nil))
	require.NoError(t, err)
	pr.Claims = nil
	require.Equal(t, auth.Principal{UserID: "auth0|5f3c9a2b"}, pr)
	pr, err = v.Verify(ctx, p.token(t, jwt.SigningMethodES256, "e1", ek, jwt.MapClaims{"realm_access": map[string]any{"roles": []string{"seckill-admin"}}}))
	require.NoError(t, err)
	require.True(t, pr.Holds(auth.MustAdminClaim("/realm_access/roles=seckill-admin")), "the provider's claims, for a presale's check")
	pr.Claims = nil
	require.Equal(t, auth.Principal{UserID: "auth0|5f3c9a2b", Admin: true}, pr, "ES256, and the admin claim where Keycloak puts it")

	pub, err := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	require.NoError(t, err)
	pemPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	other := rsaKey(t)
	for name, raw := range map[string]string{
		"wrong iss":    p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"iss": "https://evil.example"}),
		"no iss":       p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"iss": nil}),
		"wrong aud":    p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"aud": "shop-web"}),
		"expired":      p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix()}),
		"no exp":       p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"exp": nil}),
		"no sub":       p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"sub": nil}),
		"sub too long": p.token(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"sub": string(make([]byte, 256))}),
		"alg none":     p.token(t, jwt.SigningMethodNone, "r1", jwt.UnsafeAllowNoneSignatureType, nil),
		// Algorithm confusion: HS256 with the provider's public key as
		// the secret, DER and PEM.
		"HS256 with the public key (DER)": p.token(t, jwt.SigningMethodHS256, "r1", pub, nil),
		"HS256 with the public key (PEM)": p.token(t, jwt.SigningMethodHS256, "r1", pemPub, nil),
		// Another provider's key under a kid this one uses.
		"another provider, same kid": p.token(t, jwt.SigningMethodRS256, "r1", other, nil),
		"RS256 claimed, EC key":      p.token(t, jwt.SigningMethodES256, "r1", ek, nil),
	} {
		_, err := v.Verify(ctx, raw)
		require.Error(t, err, name)
		require.NotErrorIs(t, err, auth.ErrNotReady, name)
	}
}

func TestProvider_ARotatedKeyIsAcceptedWithItsFirstTokenAndARetiredOneNoLonger(t *testing.T) {
	p := newIDP(t)
	old := rsaKey(t)
	p.set("k1", old)
	v := p.verifier(t, auth.DefaultAdminClaim, 300*time.Millisecond)
	ctx := context.Background()
	_, err := v.Verify(ctx, p.token(t, jwt.SigningMethodRS256, "k1", old, nil))
	require.NoError(t, err)

	// The provider publishes k2 and signs with it: the first token naming
	// k2 makes seckill read the set at once, not at the next refresh.
	next := ecKey(t)
	p.set("k2", next)
	_, err = v.Verify(ctx, p.token(t, jwt.SigningMethodES256, "k2", next, nil))
	require.NoError(t, err)
	_, err = v.Verify(ctx, p.token(t, jwt.SigningMethodRS256, "k1", old, nil))
	require.NoError(t, err, "the old key works while it is in the set")

	// k1 leaves the set: refused once the set is read again.
	p.set("k1", nil)
	require.Eventually(t, func() bool {
		_, err := v.Verify(ctx, p.token(t, jwt.SigningMethodRS256, "k1", old, nil))
		return err != nil
	}, 5*time.Second, 50*time.Millisecond)

	// Unknown kids read the set at most once per 10 s, however many come.
	before := p.reads.Load()
	for range 20 {
		_, err := v.Verify(ctx, p.token(t, jwt.SigningMethodRS256, "nope", old, nil))
		require.Error(t, err)
	}
	require.LessOrEqual(t, p.reads.Load()-before, int32(1+1), "one unknown-kid read, plus at most one timed refresh")
}

func TestProvider_DownAtStartThenUp(t *testing.T) {
	p := newIDP(t)
	k := rsaKey(t)
	p.set("k1", k)
	p.setDown(true)
	ctx, cancel := context.WithCancel(context.Background())
	v, err := auth.NewProvider(ctx, auth.ProviderConfig{Discover: true, Issuer: p.srv.URL})
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); v.Wait() })

	time.Sleep(300 * time.Millisecond)
	require.ErrorIs(t, v.Ready(), auth.ErrNotReady)
	_, err = v.Verify(context.Background(), p.token(t, jwt.SigningMethodRS256, "k1", k, nil))
	require.ErrorIs(t, err, auth.ErrNotReady, "not a refusal: the token may be good")

	p.setDown(false)
	require.Eventually(t, func() bool { return v.Ready() == nil }, 15*time.Second, 50*time.Millisecond)
	_, err = v.Verify(context.Background(), p.token(t, jwt.SigningMethodRS256, "k1", k, nil))
	require.NoError(t, err)
}

func TestProvider_DiscoveryMustNameTheIssuerAskedFor(t *testing.T) {
	p := newIDP(t)
	p.set("k1", rsaKey(t))
	ctx, cancel := context.WithCancel(context.Background())
	v, err := auth.NewProvider(ctx, auth.ProviderConfig{Discover: true, Issuer: p.srv.URL + "/other"})
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); v.Wait() })
	time.Sleep(300 * time.Millisecond)
	require.ErrorIs(t, v.Ready(), auth.ErrNotReady)
	require.ErrorContains(t, v.Ready(), "names issuer")
}
