package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// ProviderAlgorithms are the algorithms accepted from a provider's keys:
// the asymmetric ones of docs/API.md. HS* and "none" are refused, so a
// token "signed" with a public key's bytes as an HMAC secret is too.
var ProviderAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"}

// Provider settings: how often the key set is read again, how often a
// token naming an unknown key may make it be read at once (docs/API.md:
// at most once per 10 s), and how fast a provider that cannot be reached
// at start is tried again.
const (
	DefaultRefresh   = 5 * time.Minute
	UnknownKIDEvery  = 10 * time.Second
	firstLoadBackoff = 10 * time.Second
	// Leeway is the clock skew allowed with a provider on exp, nbf and iat.
	Leeway = 10 * time.Second
)

// ProviderConfig names the provider. Exactly one of Issuer (OpenID
// discovery) or JWKSURL (then with Issuer as the required "iss") locates
// its keys.
type ProviderConfig struct {
	// Discover: Issuer is an OpenID issuer whose discovery document
	// (<issuer>/.well-known/openid-configuration) names the key set.
	Discover bool
	// Issuer is the required "iss" of every token.
	Issuer string
	// JWKSURL is the key set when Discover is false.
	JWKSURL string
	// Audience must be in every token's "aud" [DefaultAudience].
	Audience string
	// Admin says who is an admin [DefaultAdminClaim].
	Admin AdminClaim
	// Refresh is how often the key set is read again [DefaultRefresh].
	Refresh time.Duration
	// HTTP is the client for the provider [10 s timeout].
	HTTP *http.Client
	Log  *slog.Logger
}

// Provider verifies tokens signed by an identity provider's keys.
type Provider struct {
	cfg    ProviderConfig
	parser *jwt.Parser
	keys   atomic.Pointer[keyfunc.Keyfunc]
	mu     sync.Mutex
	why    error // why no key set is loaded yet
	done   chan struct{}
}

// NewProvider starts loading the provider's keys in the background and
// returns at once: until they are loaded, Verify answers ErrNotReady and
// Ready says why. The provider is tried again every few seconds until it
// answers; then its key set is read every Refresh, and at once (at most
// once per UnknownKIDEvery) for a token naming a key it does not hold.
// Everything stops when ctx is done; Wait waits for that.
func NewProvider(ctx context.Context, cfg ProviderConfig) (*Provider, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("an identity provider needs its issuer")
	}
	if !cfg.Discover && cfg.JWKSURL == "" {
		return nil, errors.New("an identity provider needs its JWKS URL or OpenID discovery")
	}
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	if cfg.Admin.path == nil {
		cfg.Admin = MustAdminClaim(DefaultAdminClaim)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Provider{
		cfg: cfg,
		parser: jwt.NewParser(
			jwt.WithValidMethods(ProviderAlgorithms),
			jwt.WithAudience(cfg.Audience),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithExpirationRequired(),
			// A provider's clock and ours may differ by a little: a token
			// is not refused for its first or last Leeway.
			jwt.WithLeeway(Leeway),
		),
		why:  ErrNotReady,
		done: make(chan struct{}),
	}
	go p.load(ctx)
	return p, nil
}

// Verify implements Verifier.
func (p *Provider) Verify(ctx context.Context, raw string) (Principal, error) {
	kf := p.keys.Load()
	if kf == nil {
		return Principal{}, ErrNotReady
	}
	c := jwt.MapClaims{}
	if _, err := p.parser.ParseWithClaims(raw, c, (*kf).KeyfuncCtx(ctx)); err != nil {
		return Principal{}, err
	}
	return principalOf(c, p.cfg.Admin)
}

// Ready implements Verifier.
func (p *Provider) Ready() error {
	if p.keys.Load() != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.why
}

// Wait returns once the background work has stopped (ctx done).
func (p *Provider) Wait() { <-p.done }

// load reads the key set until it has it once, then leaves its refresh to
// jwkset's goroutine, which ends with ctx.
func (p *Provider) load(ctx context.Context) {
	defer close(p.done)
	backoff := 250 * time.Millisecond
	for {
		storeCtx, stop := context.WithCancel(ctx)
		kf, err := p.open(storeCtx)
		if err == nil {
			p.keys.Store(&kf)
			p.cfg.Log.Info("identity provider keys loaded", "issuer", p.cfg.Issuer)
			<-ctx.Done()
			stop()
			return
		}
		stop() // ends the refresh goroutine of a failed attempt
		p.mu.Lock()
		p.why = fmt.Errorf("%w: %v", ErrNotReady, err)
		p.mu.Unlock()
		p.cfg.Log.Warn("identity provider not reachable; trying again", "issuer", p.cfg.Issuer, "in", backoff.String(), "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, firstLoadBackoff)
	}
}

// open finds the key set and reads it once.
func (p *Provider) open(ctx context.Context) (keyfunc.Keyfunc, error) {
	url := p.cfg.JWKSURL
	if p.cfg.Discover {
		var err error
		if url, err = p.discover(ctx); err != nil {
			return nil, err
		}
	}
	log := p.cfg.Log
	set, err := jwkset.NewStorageFromHTTP(url, jwkset.HTTPClientStorageOptions{
		Client:          p.cfg.HTTP,
		Ctx:             ctx,
		HTTPTimeout:     p.cfg.HTTP.Timeout,
		RefreshInterval: p.cfg.Refresh,
		RefreshErrorHandler: func(_ context.Context, err error) {
			log.Warn("identity provider keys not refreshed; keeping the last set", "url", url, "error", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("read the key set %s: %w", url, err)
	}
	keys, err := set.KeyReadAll(ctx)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("the key set %s holds no key seckill can use", url)
	}
	client, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{url: set},
		RefreshUnknownKID: rate.NewLimiter(rate.Every(UnknownKIDEvery), 1),
		// A token naming an unknown key waits at most this long for the
		// limiter and the provider; others are refused at once.
		RateLimitWaitMax: 2 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: client})
}

// discover reads the issuer's OpenID discovery document for its key set.
func (p *Provider) discover(ctx context.Context) (string, error) {
	u := strings.TrimSuffix(p.cfg.Issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := p.cfg.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("OpenID discovery: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("OpenID discovery %s: %s", u, resp.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return "", fmt.Errorf("OpenID discovery %s: %w", u, err)
	}
	// OpenID Connect Discovery 1.0, 4.3: the document's issuer is the one
	// asked for, exactly.
	if doc.Issuer != p.cfg.Issuer {
		return "", fmt.Errorf("OpenID discovery %s names issuer %q, not %q", u, doc.Issuer, p.cfg.Issuer)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("OpenID discovery %s names no jwks_uri", u)
	}
	return doc.JWKSURI, nil
}
