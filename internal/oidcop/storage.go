package oidcop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// errUnsupported answers every flow the test provider does not offer:
// authorization code, refresh, device code, JWT profile, introspection,
// userinfo, revocation and logout.
var errUnsupported = errors.New("oidcop: not supported by the test provider")

// key is one signing key pair.
type key struct {
	id     string
	alg    jose.SignatureAlgorithm
	signer crypto.Signer
}

// newKey generates a key pair for alg ("RS256" or "ES256").
func newKey(alg string) (*key, error) {
	var (
		signer crypto.Signer
		err    error
	)
	switch jose.SignatureAlgorithm(alg) {
	case jose.RS256:
		signer, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		return nil, fmt.Errorf("oidcop: unsupported signing algorithm %q (want RS256 or ES256)", alg)
	}
	if err != nil {
		return nil, err
	}
	return &key{id: rand.Text(), alg: jose.SignatureAlgorithm(alg), signer: signer}, nil
}

// signingKey is a key as op signs with it (op.SigningKey).
type signingKey key

func (k *signingKey) ID() string                                  { return k.id }
func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return k.alg }
func (k *signingKey) Key() any                                    { return k.signer }

// publicKey is a key as op publishes it in the JWKS (op.Key).
type publicKey key

func (k *publicKey) ID() string                         { return k.id }
func (k *publicKey) Algorithm() jose.SignatureAlgorithm { return k.alg }
func (k *publicKey) Use() string                        { return "sig" }
func (k *publicKey) Key() any                           { return k.signer.Public() }

// grant is what Provider.Token asks for: the token request a throwaway
// client stands for (op.TokenRequest).
type grant struct {
	subject  string
	audience []string
	claims   map[string]any
	ttl      time.Duration
}

func (g *grant) GetSubject() string    { return g.subject }
func (g *grant) GetAudience() []string { return g.audience }
func (g *grant) GetScopes() []string   { return nil }

// client is a confidential client allowed only the client_credentials
// grant, issued JWT access tokens (op.Client).
type client struct {
	id     string
	secret string
	grant  *grant
}

func (c *client) GetID() string                        { return c.id }
func (c *client) RedirectURIs() []string               { return nil }
func (c *client) PostLogoutRedirectURIs() []string     { return nil }
func (c *client) ApplicationType() op.ApplicationType  { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod          { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType   { return nil }
func (c *client) LoginURL(string) string               { return "" }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return 0 }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// storage is the provider's in-memory state: its keys and the clients
// Provider.Token registers. It implements op.Storage,
// op.ClientCredentialsStorage and op.CanGetPrivateClaimsFromRequest.
type storage struct {
	mu      sync.Mutex
	keys    []*key // published; the last one signs
	clients map[string]*client
}

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.ClientCredentialsStorage       = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

// addKey publishes k and makes it the signing key.
func (s *storage) addKey(k *key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
}

// removeKey unpublishes the key kid, which must not be the signing key.
func (s *storage) removeKey(kid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.keys, func(k *key) bool { return k.id == kid })
	switch {
	case i < 0:
		return fmt.Errorf("oidcop: no published key %q", kid)
	case i == len(s.keys)-1:
		return fmt.Errorf("oidcop: key %q signs new tokens; Rotate before retiring it", kid)
	}
	s.keys = slices.Delete(s.keys, i, i+1)
	return nil
}

// kids lists the published key ids, the signing key last.
func (s *storage) kids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.id
	}
	return ids
}

// register adds a client standing for g and returns it.
func (s *storage) register(g *grant) *client {
	c := &client{id: rand.Text(), secret: rand.Text(), grant: g}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.id] = c
	return c
}

// unregister removes the client id.
func (s *storage) unregister(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, id)
}

// authenticate returns the client id if secret is its secret.
func (s *storage) authenticate(id, secret string) (*client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || c.secret != secret {
		return nil, errors.New("oidcop: unknown client or wrong secret")
	}
	return c, nil
}

// SigningKey returns the newest key.
func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return (*signingKey)(s.keys[len(s.keys)-1]), nil
}

// SignatureAlgorithms lists the algorithms of the published keys.
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var algs []jose.SignatureAlgorithm
	for _, k := range s.keys {
		if !slices.Contains(algs, k.alg) {
			algs = append(algs, k.alg)
		}
	}
	return algs, nil
}

// KeySet returns the published public keys, served as the JWKS.
func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		set[i] = (*publicKey)(k)
	}
	return set, nil
}

// ClientCredentials authenticates a client_credentials request.
func (s *storage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	return s.authenticate(id, secret)
}

// ClientCredentialsTokenRequest returns the grant the client stands for.
func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, _ []string) (op.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("oidcop: unknown client %q", id)
	}
	return c.grant, nil
}

// CreateAccessToken gives the token a random id and expires it after the
// grant's ttl.
func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	g, ok := req.(*grant)
	if !ok {
		return "", time.Time{}, errUnsupported
	}
	return rand.Text(), time.Now().Add(g.ttl), nil
}

// GetPrivateClaimsFromRequest returns the grant's extra claims; op lets
// the registered claims (iss, sub, aud, exp, ...) win over them.
func (s *storage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	if g, ok := req.(*grant); ok {
		return g.claims, nil
	}
	return nil, nil
}

// GetClientByClientID returns a registered client.
func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("oidcop: unknown client %q", id)
	}
	return c, nil
}

// AuthorizeClientIDSecret checks a client's secret.
func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	_, err := s.authenticate(id, secret)
	return err
}

// Health reports the storage as always healthy.
func (s *storage) Health(context.Context) error { return nil }

// SetUserinfoFromScopes is deprecated in op and left empty, as op asks.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// GetPrivateClaimsFromScopes adds no claims: GetPrivateClaimsFromRequest
// supplies them.
func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// The methods below belong to flows the test provider does not offer.

func (s *storage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, errUnsupported
}
func (s *storage) AuthRequestByID(context.Context, string) (op.AuthRequest, error) {
	return nil, errUnsupported
}
func (s *storage) AuthRequestByCode(context.Context, string) (op.AuthRequest, error) {
	return nil, errUnsupported
}
func (s *storage) SaveAuthCode(context.Context, string, string) error { return errUnsupported }
func (s *storage) DeleteAuthRequest(context.Context, string) error    { return errUnsupported }
func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}
func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errUnsupported
}
func (s *storage) TerminateSession(context.Context, string, string) error { return errUnsupported }
func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrRequestNotSupported().WithDescription("%v", errUnsupported)
}
func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errUnsupported
}
func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errUnsupported
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}
func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}
