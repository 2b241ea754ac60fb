package oidcop_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/seckill/seckill/internal/oidcop"
	"github.com/seckill/seckill/internal/testenv"
)

// httpClient keeps no idle connections, so no goroutine outlives a request.
var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// get fetches url and returns its body, or an error if the provider is
// unreachable or does not answer 200.
func get(url string) ([]byte, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}

type discovery struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	TokenEndpoint string   `json:"token_endpoint"`
	GrantTypes    []string `json:"grant_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// discover reads p's discovery document.
func discover(t *testing.T, p *oidcop.Provider) discovery {
	t.Helper()
	body, err := get(p.Issuer() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var d discovery
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// jwks reads p's JWKS now and returns its key ids and a keyfunc over it.
func jwks(t *testing.T, p *oidcop.Provider) ([]string, keyfunc.Keyfunc) {
	t.Helper()
	body, err := get(p.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KID)
	}
	kf, err := keyfunc.NewJWKSetJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	return kids, kf
}

// verify checks token as a resource server would: signature by a JWKS key
// of alg, issuer, audience "seckill-api" and expiry.
func verify(p *oidcop.Provider, kf keyfunc.Keyfunc, token, alg string) (*jwt.Token, jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(token, claims, kf.Keyfunc,
		jwt.WithValidMethods([]string{alg}),
		jwt.WithIssuer(p.Issuer()),
		jwt.WithAudience("seckill-api"),
		jwt.WithExpirationRequired(),
	)
	return tok, claims, err
}

func TestDiscovery_NamesTheIssuerItsKeysAndItsTokenEndpoint(t *testing.T) {
	testenv.NoLeaks(t)
	p := oidcop.Start(t, oidcop.Options{})
	d := discover(t, p)
	if d.Issuer != p.Issuer() || d.JWKSURI != p.JWKSURL() || d.TokenEndpoint != p.Issuer()+"/oauth/token" {
		t.Fatalf("discovery %+v, issuer %s, jwks %s", d, p.Issuer(), p.JWKSURL())
	}
	if !slices.Contains(d.GrantTypes, "client_credentials") || !slices.Equal(d.SigningAlgs, []string{"RS256"}) {
		t.Fatalf("discovery %+v", d)
	}
}

func TestToken_VerifiesAgainstTheJWKS(t *testing.T) {
	testenv.NoLeaks(t)
	p := oidcop.Start(t, oidcop.Options{})
	claims := map[string]any{
		"role":                       "admin",
		"realm_access":               map[string]any{"roles": []string{"seckill-admin"}},
		"https://shop.example/roles": []string{"admin"},
		"iss":                        "https://evil.example", // op's own iss wins
	}
	for _, sub := range []string{"auth0|5f3c9a", uuid.NewString()} {
		t.Run(sub, func(t *testing.T) {
			token := p.Token(t, sub, claims, []string{"seckill-api", "other-api"}, 5*time.Minute)
			_, kf := jwks(t, p)
			tok, got, err := verify(p, kf, token, "RS256")
			if err != nil {
				t.Fatal(err)
			}
			if kid := tok.Header["kid"]; kid != p.KIDs()[0] {
				t.Errorf("kid %v, want %s", kid, p.KIDs()[0])
			}
			if got["sub"] != sub || got["iss"] != p.Issuer() || got["role"] != "admin" {
				t.Errorf("claims %v", got)
			}
			aud, _ := got.GetAudience()
			if !slices.Equal(aud, jwt.ClaimStrings{"seckill-api", "other-api"}) {
				t.Errorf("aud %v", aud)
			}
			realm, _ := got["realm_access"].(map[string]any)
			if roles, _ := realm["roles"].([]any); !slices.Equal(roles, []any{"seckill-admin"}) {
				t.Errorf("realm_access %v", got["realm_access"])
			}
			if roles, _ := got["https://shop.example/roles"].([]any); !slices.Equal(roles, []any{"admin"}) {
				t.Errorf("namespaced roles %v", got["https://shop.example/roles"])
			}
			// op's CreateJWT, behind the token endpoint, sets jti and client_id.
			if got["jti"] == "" || got["client_id"] == "" {
				t.Errorf("claims %v lack jti or client_id", got)
			}
			exp, _ := got.GetExpirationTime()
			if d := time.Until(exp.Time); d < 4*time.Minute || d > 5*time.Minute {
				t.Errorf("exp in %v, want about 5m", d)
			}
		})
	}
}

func TestToken_AnExpiredOneIsRefused(t *testing.T) {
	testenv.NoLeaks(t)
	p := oidcop.Start(t, oidcop.Options{})
	token := p.Token(t, "auth0|5f3c9a", nil, []string{"seckill-api"}, -time.Minute)
	_, kf := jwks(t, p)
	if _, _, err := verify(p, kf, token, "RS256"); !errors.Is(err, jwt.ErrTokenExpired) {
		t.Fatalf("verify: %v, want expired", err)
	}
}

func TestES256(t *testing.T) {
	testenv.NoLeaks(t)
	p := oidcop.Start(t, oidcop.Options{Alg: "ES256"})
	if d := discover(t, p); !slices.Equal(d.SigningAlgs, []string{"ES256"}) {
		t.Fatalf("signing algs %v", d.SigningAlgs)
	}
	token := p.Token(t, "user-1", nil, []string{"seckill-api"}, time.Minute)
	_, kf := jwks(t, p)
	tok, _, err := verify(p, kf, token, "ES256")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Header["kid"] != p.KIDs()[0] {
		t.Fatalf("kid %v, want %s", tok.Header["kid"], p.KIDs()[0])
	}
}

func TestRotate_ANewKeyJoinsTheJWKSAndARetiredOneLeavesIt(t *testing.T) {
	testenv.NoLeaks(t)
	p := oidcop.Start(t, oidcop.Options{})
	old := p.KIDs()[0]
	oldToken := p.Token(t, "user-1", nil, []string{"seckill-api"}, time.Minute)

	next := p.Rotate(t, "ES256")
	if kids, _ := jwks(t, p); !slices.Equal(kids, []string{old, next}) || !slices.Equal(p.KIDs(), kids) {
		t.Fatalf("JWKS kids %v, KIDs %v, want [%s %s]", kids, p.KIDs(), old, next)
	}
	if d := discover(t, p); !slices.Equal(d.SigningAlgs, []string{"RS256", "ES256"}) {
		t.Fatalf("signing algs %v", d.SigningAlgs)
	}
	newToken := p.Token(t, "user-1", nil, []string{"seckill-api"}, time.Minute)
	_, kf := jwks(t, p)
	if _, _, err := verify(p, kf, oldToken, "RS256"); err != nil {
		t.Fatalf("old token after rotation: %v", err)
	}
	tok, _, err := verify(p, kf, newToken, "ES256")
	if err != nil {
		t.Fatalf("new token: %v", err)
	}
	if tok.Header["kid"] != next {
		t.Fatalf("new token kid %v, want %s", tok.Header["kid"], next)
	}

	p.Retire(t, old)
	kids, kf := jwks(t, p)
	if !slices.Equal(kids, []string{next}) || !slices.Equal(p.KIDs(), kids) {
		t.Fatalf("after retire: JWKS kids %v, KIDs %v", kids, p.KIDs())
	}
	if _, _, err := verify(p, kf, oldToken, "RS256"); err == nil {
		t.Fatal("old token verifies after its key was retired")
	}
	if _, _, err := verify(p, kf, newToken, "ES256"); err != nil {
		t.Fatalf("new token after retire: %v", err)
	}

	// The signing key cannot be retired.
	rec := &fatalRecorder{TB: t}
	p.Retire(rec, next)
	if rec.msg == "" || !slices.Equal(p.KIDs(), []string{next}) {
		t.Fatalf("retiring the signing key: %q, KIDs %v", rec.msg, p.KIDs())
	}
}

// fatalRecorder records a Fatal instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatal(args ...any) { r.msg = fmt.Sprint(args...) }

func TestRestart_AProviderDownServesTheSameKeysOnceUp(t *testing.T) {
	testenv.NoLeaks(t)
	p := oidcop.Start(t, oidcop.Options{Down: true})
	if _, err := get(p.JWKSURL()); err == nil {
		t.Fatal("JWKS served before Restart")
	}
	p.Restart(t)
	kids, _ := jwks(t, p)
	token := p.Token(t, "user-1", nil, []string{"seckill-api"}, time.Minute)

	p.Stop()
	if _, err := get(p.JWKSURL()); err == nil {
		t.Fatal("JWKS served after Stop")
	}
	p.Restart(t)
	if d := discover(t, p); d.Issuer != p.Issuer() {
		t.Fatalf("issuer %s after restart, want %s", d.Issuer, p.Issuer())
	}
	again, kf := jwks(t, p)
	if !slices.Equal(again, kids) {
		t.Fatalf("kids %v after restart, want %v", again, kids)
	}
	if _, _, err := verify(p, kf, token, "RS256"); err != nil {
		t.Fatalf("token from before the restart: %v", err)
	}
}
