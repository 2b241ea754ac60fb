// Package oidcop runs a real OpenID provider for tests: the op package of
// github.com/zitadel/oidc/v3 on a private loopback port, serving its own
// discovery document, JWKS and token endpoint over plain HTTP.
//
// Access tokens come from the token endpoint through the client_credentials
// grant: Provider.Token registers a throwaway client that stands for the
// wanted subject, audience, extra claims and lifetime, asks the endpoint for
// a token with that client's credentials, and forgets the client. The token
// is a JWT signed by the provider's current key, with its kid in the header.
//
// A Provider holds any number of published keys, the newest of which signs;
// Rotate and Retire change them while the provider runs. Stop and Restart
// take it off and back on the same address, with the same issuer and keys.
package oidcop

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Options configures Start.
type Options struct {
	// Alg is the algorithm of the first signing key: "RS256" (the
	// default) or "ES256".
	Alg string
	// Down starts the provider without serving: its address is picked,
	// then released, so connections are refused until Restart. Another
	// process could take the port meanwhile; Restart then fails the test.
	Down bool
}

// Provider is a running (or stopped) OpenID provider. Its methods that take
// a testing.TB fail the test on error and, like t.Fatal, must be called
// from the test's goroutine.
type Provider struct {
	addr   string
	issuer string
	op     *op.Provider
	store  *storage
	http   *http.Client // Token's client; no keep-alives, so no idle goroutines

	mu     sync.Mutex
	srv    *http.Server  // nil while stopped
	served chan struct{} // closed when srv's Serve returns
}

// Start runs a provider on 127.0.0.1 at a free port, with one signing key
// of opts.Alg, and stops it when t ends.
func Start(t testing.TB, opts Options) *Provider {
	t.Helper()
	k, err := newKey(cmp.Or(opts.Alg, "RS256"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidcop: listen: %v", err)
	}
	p := &Provider{
		addr:   ln.Addr().String(),
		issuer: "http://" + ln.Addr().String(),
		store:  &storage{keys: []*key{k}, clients: map[string]*client{}},
		http: &http.Client{
			Transport: &http.Transport{DisableKeepAlives: true},
			Timeout:   10 * time.Second,
		},
	}
	// The AES key would encrypt opaque access tokens; this provider only
	// issues JWTs, but a zero key should not be lying around either.
	config := &op.Config{}
	_, _ = rand.Read(config.CryptoKey[:])
	// An http issuer is refused unless WithAllowInsecure is given.
	p.op, err = op.NewProvider(config, p.store, op.StaticIssuer(p.issuer), op.WithAllowInsecure())
	if err != nil {
		_ = ln.Close()
		t.Fatalf("oidcop: new provider: %v", err)
	}
	t.Cleanup(p.Stop)
	if opts.Down {
		_ = ln.Close()
		return p
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serve(ln)
	return p
}

// Issuer is the provider's issuer, http://127.0.0.1:<port>; its discovery
// document is at Issuer()+"/.well-known/openid-configuration".
func (p *Provider) Issuer() string { return p.issuer }

// JWKSURL is the address of the provider's JWKS, as its discovery document
// names it.
func (p *Provider) JWKSURL() string { return p.op.KeysEndpoint().Absolute(p.issuer) }

// serve starts serving on ln. p.mu must be held and p stopped.
func (p *Provider) serve(ln net.Listener) {
	srv := &http.Server{Handler: p.op, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // http.ErrServerClosed once stopped
	}()
	p.srv, p.served = srv, served
}

// stop closes the listener and every connection, and waits for the server
// to end. p.mu must be held.
func (p *Provider) stop() {
	if p.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p.srv.Shutdown(ctx) != nil {
		_ = p.srv.Close()
	}
	<-p.served
	p.srv, p.served = nil, nil
}

// Stop takes the provider off its address: connections are refused until
// Restart. Stopping a stopped provider does nothing.
func (p *Provider) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop()
}

// Restart serves again on the same address, with the same issuer and keys;
// a running provider is stopped first.
func (p *Provider) Restart(t testing.TB) {
	t.Helper()
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
}

// Up is Restart for any goroutine: it returns the error instead of failing
// the test.
func (p *Provider) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("oidcop: listen again on %s: %w", p.addr, err)
	}
	p.serve(ln)
	return nil
}

// Rotate publishes a new key of alg ("RS256" or "ES256") and signs new
// tokens with it; the older keys stay in the JWKS. It returns the new kid.
func (p *Provider) Rotate(t testing.TB, alg string) string {
	t.Helper()
	k, err := newKey(alg)
	if err != nil {
		t.Fatal(err)
	}
	p.store.addKey(k)
	return k.id
}

// Retire removes the key kid from the JWKS. The signing key cannot be
// retired: Rotate first.
func (p *Provider) Retire(t testing.TB, kid string) {
	t.Helper()
	if err := p.store.removeKey(kid); err != nil {
		t.Fatal(err)
	}
}

// KIDs lists the ids of the published keys, oldest first: the last one
// signs new tokens.
func (p *Provider) KIDs() []string { return p.store.kids() }

// Token obtains a JWT access token from the provider's token endpoint, over
// HTTP, with the client_credentials grant. The token's iss is Issuer(),
// sub is sub, aud is audience (the throwaway client's id if empty), exp is
// now+ttl (a negative ttl gives an expired token), and its kid header names
// the current signing key. claims are added as private claims; those that
// clash with claims op sets itself (iss, sub, aud, exp, iat, nbf, jti,
// client_id) are overridden. The provider must be running.
func (p *Provider) Token(t testing.TB, sub string, claims map[string]any, audience []string, ttl time.Duration) string {
	t.Helper()
	c := p.store.register(&grant{
		subject:  sub,
		audience: slices.Clone(audience),
		claims:   maps.Clone(claims),
		ttl:      ttl,
	})
	defer p.store.unregister(c.id)

	form := url.Values{"grant_type": {string(oidc.GrantTypeClientCredentials)}}
	req, err := http.NewRequest(http.MethodPost, p.op.TokenEndpoint().Absolute(p.issuer), strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatalf("oidcop: token request: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatalf("oidcop: token request: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("oidcop: token response: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("oidcop: token endpoint answered %s: %s", resp.Status, body)
	}
	var tok oidc.AccessTokenResponse
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("oidcop: token response %s: %v", body, err)
	}
	return tok.AccessToken
}
