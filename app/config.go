// Package app wires seckill's parts into the processes of the command line:
// the API, the worker (with the outbox relay) and the all-in-one dev mode.
// cmd/seckill reads the environment and calls it; the end-to-end tests call
// it in-process.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/payments/stripepay"
	"github.com/seckill/seckill/reconcile"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/shopevents"
	"github.com/seckill/seckill/tracing"
)

// Config is the whole configuration, read once from the environment.
type Config struct {
	HTTPAddr    string
	RedisURL    string
	RedisPrefix string
	// RedisMinReplicas: replicas an admission must reach before its 202
	// (-1: 1 with Sentinel or Cluster, 0 with one server).
	RedisMinReplicas    int
	RedisReplicaTimeout time.Duration
	DatabaseURL         string
	TemporalAddress     string
	Namespace           string
	TaskQueue           string
	// DrawTaskQueue (TEMPORAL_DRAW_TASK_QUEUE) is the task queue of the
	// sale draws, apart from the sagas' TaskQueue (the same name is
	// refused).
	DrawTaskQueue string
	JWTSecret     []byte
	WebhookSecret []byte
	// ProofKey (SECKILL_POW_KEY) signs proof-of-work challenges; unset,
	// the API derives one from WebhookSecret (pow.DeriveKey).
	ProofKey []byte

	// TemporalTLS: TLS and credentials for a Temporal beyond loopback
	// (TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA,
	// TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY).
	TemporalTLS TemporalTLS

	// Sign-in through the shop's identity provider (docs/API.md
	// "Authentication"): OIDCIssuer (SECKILL_OIDC_ISSUER, discovery) or
	// JWKSURL (SECKILL_JWKS_URL) with JWTIssuer (SECKILL_JWT_ISSUER).
	// Neither: HS256 under JWTSecret.
	OIDCIssuer string
	JWKSURL    string
	JWTIssuer  string
	// JWTAudience (SECKILL_JWT_AUDIENCE) must be in every token's aud.
	JWTAudience string
	// AdminClaim (SECKILL_ADMIN_CLAIM) says which tokens are an admin's.
	AdminClaim auth.AdminClaim
	// JWKSRefresh (SECKILL_JWKS_REFRESH) is how often the provider's key
	// set is read again, so a key it retired stops being accepted.
	JWKSRefresh time.Duration
	// AdminToken (SECKILL_ADMIN_TOKEN) is the admin token the command-line
	// tools send to the API; unset, they sign one with JWTSecret.
	AdminToken string

	// Order events to the shop (docs/API.md): EventsURL
	// (SECKILL_EVENTS_URL, unset: none are sent), signed with EventsSecret
	// (SECKILL_EVENTS_SECRET, whsec_...), each retried for EventsRetryFor
	// (SECKILL_EVENTS_RETRY_FOR, at least 3 days by default).
	// Tracing (docs/API.md "Tracing"): an OTLP endpoint is set in the
	// OTEL_* variables, so the database, Redis, Temporal and HTTP calls
	// are traced and the process exports its spans.
	Tracing bool

	EventsURL      string
	EventsSecret   string
	EventsRetryFor time.Duration

	DevTemporalPort int
	DevUIPort       int
	DevPProfPort    int

	// Tuning.
	DBMaxConns       int
	RedisPoolSize    int
	WorkerActivities int
	// WorkflowCache is how many workflows the worker process keeps in the
	// SDK's sticky cache (SECKILL_WORKFLOW_CACHE).
	WorkflowCache  int
	StockTx        int
	RelayParallel  int
	RelayClaimIdle time.Duration
	RelayRate      float64
	// EagerStart: the relay asks for eager workflow start (the worker in
	// its process runs each saga's first task without a round trip
	// through matching).
	EagerStart     bool
	RewarmEvery    time.Duration
	ReconcileEvery time.Duration
	ReconcileGrace time.Duration
	// PaymentHold (SECKILL_PAYMENT_HOLD) is how long a payment for an
	// order never written is held, in case its saga still starts, before
	// it is refunded [delivery.PendingWindow].
	PaymentHold time.Duration

	// WaitlistMax bounds each sale's waitlist (SECKILL_WAITLIST_MAX).
	WaitlistMax int

	// The randomness beacon a lobby's draw waits for (docs/API.md "A
	// draw nobody can bias"). BeaconURLs (SECKILL_BEACON_URLS: drand's
	// public endpoints by default; "none": nil, a draw uses its secret
	// seed alone) are where rounds are read, each tried in turn;
	// BeaconChain (SECKILL_BEACON_CHAIN: quicknet [default], or dev for
	// seckill's development beacon) the chain new sales' draws wait for.
	// BeaconLocal: SECKILL_BEACON_URLS was unset, so `seckill dev` serves
	// its own development beacon and uses it.
	BeaconURLs  []string
	BeaconChain beacon.Chain
	BeaconLocal bool

	// On SIGTERM the API stays up, not ready, for ShutdownDelay
	// (SECKILL_SHUTDOWN_DELAY [0s]) so load balancers stop sending it
	// requests, then waits up to ShutdownTimeout (SECKILL_SHUTDOWN_TIMEOUT
	// [10s]) for the requests in flight; the worker waits as long for its
	// activities in flight.
	ShutdownDelay   time.Duration
	ShutdownTimeout time.Duration

	// PaymentProvider is "dev" or "stripe" (SECKILL_PAYMENT_PROVIDER);
	// with stripe, StripeSecretKey (STRIPE_SECRET_KEY) and StripeAPIBase
	// (STRIPE_API_BASE, "" for Stripe's own API).
	PaymentProvider string
	StripeSecretKey string
	StripeAPIBase   string

	// Rate limits.
	ClaimRate redisstore.RateLimit
	IPRate    api.IPLimit

	// DevTools serves the demo sign-in and the dev checkout page
	// (SECKILL_DEV_TOOLS; always on in `seckill dev`).
	DevTools bool

	Log *slog.Logger
}

// The payment providers SECKILL_PAYMENT_PROVIDER names.
const (
	ProviderDev    = "dev"
	ProviderStripe = "stripe"
)

// Dev secrets, used by `seckill dev` when none are set and printed at start.
// Never accepted by `seckill api` or `seckill worker`.
const (
	DevJWTSecret     = "seckill-dev-jwt-secret-do-not-use-in-production"
	DevWebhookSecret = "whsec_seckill_dev_do_not_use_in_production"
)

// Beacon is the chain new sales' draws wait for; nil when no beacon is
// read (SECKILL_BEACON_URLS=none).
func (c *Config) Beacon() *beacon.Chain {
	if c.BeaconURLs == nil {
		return nil
	}
	chain := c.BeaconChain
	return &chain
}

// FromEnv reads the configuration with getenv (os.Getenv). Secrets are
// not checked here: see RequireSecrets and WithDevSecrets.
func FromEnv(getenv func(string) string) (Config, error) {
	return fromEnv(getenv, func(string, string) {})
}

// fromEnv is FromEnv telling note each variable it reads, with its
// default: how ConfigEnv learns them, so that no setting is missing from
// the commands' help.
func fromEnv(getenv func(string) string, note func(name, def string)) (Config, error) {
	get := func(key string) string {
		note(key, "")
		return getenv(key)
	}
	str := func(key, def string) string {
		note(key, def)
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	var errs []error
	num := func(key string, def, lo, hi int) int {
		note(key, strconv.Itoa(def))
		v := getenv(key)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s must be an integer between %d and %d, got %q", key, lo, hi, v))
		}
		return n
	}
	dur := func(key string, def time.Duration) time.Duration {
		note(key, cli.Duration(def))
		v := getenv(key)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive duration like 30s, got %q", key, v))
		}
		return d
	}
	durOrZero := func(key string) time.Duration {
		note(key, "0s")
		v := getenv(key)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s must be a duration like 5s (0s: none), got %q", key, v))
		}
		return d
	}
	c := Config{
		HTTPAddr:            str("SECKILL_HTTP_ADDR", "127.0.0.1:8080"),
		RedisURL:            str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		RedisPrefix:         get("SECKILL_REDIS_PREFIX"), // "": DefaultRedisPrefix
		DatabaseURL:         str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/seckill?sslmode=disable"),
		TemporalAddress:     str("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace:           str("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:           str("TEMPORAL_TASK_QUEUE", seckill.DefaultTaskQueue),
		DrawTaskQueue:       str("TEMPORAL_DRAW_TASK_QUEUE", seckill.DefaultDrawTaskQueue),
		JWTSecret:           []byte(get("SECKILL_JWT_SECRET")),
		WebhookSecret:       []byte(get("SECKILL_WEBHOOK_SECRET")),
		OIDCIssuer:          get("SECKILL_OIDC_ISSUER"),
		JWKSURL:             get("SECKILL_JWKS_URL"),
		JWTIssuer:           get("SECKILL_JWT_ISSUER"),
		JWTAudience:         str("SECKILL_JWT_AUDIENCE", auth.DefaultAudience),
		AdminToken:          get("SECKILL_ADMIN_TOKEN"),
		JWKSRefresh:         dur("SECKILL_JWKS_REFRESH", auth.DefaultRefresh),
		Tracing:             tracing.Enabled(get),
		EventsURL:           get("SECKILL_EVENTS_URL"),
		EventsSecret:        get("SECKILL_EVENTS_SECRET"),
		EventsRetryFor:      dur("SECKILL_EVENTS_RETRY_FOR", seckill.DefaultShopEventRetryFor),
		DevTemporalPort:     num("SECKILL_DEV_TEMPORAL_PORT", 7233, 1, 65535),
		DevUIPort:           num("SECKILL_DEV_UI_PORT", 8233, 1, 65535),
		DevPProfPort:        num("SECKILL_DEV_PPROF_PORT", 0, 0, 65535),
		DBMaxConns:          num("SECKILL_DB_MAX_CONNS", 32, 1, 1000),
		RedisPoolSize:       num("SECKILL_REDIS_POOL_SIZE", 256, 1, 10000),
		RedisMinReplicas:    num("SECKILL_REDIS_MIN_REPLICAS", -1, 0, 16),
		RedisReplicaTimeout: dur("SECKILL_REDIS_REPLICA_TIMEOUT", redisstore.DefaultReplicaTimeout),
		WorkerActivities:    num("SECKILL_WORKER_ACTIVITIES", 200, 1, 10000),
		WorkflowCache:       num("SECKILL_WORKFLOW_CACHE", 10000, 0, 1000000),
		StockTx:             num("SECKILL_STOCK_TX", 8, 1, 1000),
		RelayParallel:       num("SECKILL_RELAY_PARALLEL", relay.DefaultParallel, 1, 1024),
		RelayClaimIdle:      dur("SECKILL_RELAY_CLAIM_IDLE", relay.DefaultClaimIdle),
		RewarmEvery:         dur("SECKILL_REWARM_EVERY", 5*time.Second),
		ReconcileEvery:      dur("SECKILL_RECONCILE_EVERY", time.Minute),
		ReconcileGrace:      dur("SECKILL_RECONCILE_GRACE", reconcile.DefaultGrace),
		PaymentHold:         dur("SECKILL_PAYMENT_HOLD", delivery.PendingWindow),
		WaitlistMax:         num("SECKILL_WAITLIST_MAX", api.DefaultWaitlistMax, 1, 100_000_000),
		ShutdownDelay:       durOrZero("SECKILL_SHUTDOWN_DELAY"),
		ShutdownTimeout:     dur("SECKILL_SHUTDOWN_TIMEOUT", 10*time.Second),
		PaymentProvider:     str("SECKILL_PAYMENT_PROVIDER", ProviderDev),
		StripeSecretKey:     get("STRIPE_SECRET_KEY"),
		StripeAPIBase:       get("STRIPE_API_BASE"),
		ProofKey:            []byte(get("SECKILL_POW_KEY")),
	}
	if c.DrawTaskQueue == c.TaskQueue {
		// The draws' worker runs only the draws: on the sagas' queue it
		// would take saga tasks it cannot run.
		errs = append(errs, fmt.Errorf("TEMPORAL_DRAW_TASK_QUEUE must differ from TEMPORAL_TASK_QUEUE, both are %q: the draws run on a task queue of their own", c.TaskQueue))
	}
	if n := len(c.ProofKey); n > 0 && n < 32 {
		errs = append(errs, fmt.Errorf("SECKILL_POW_KEY must be at least 32 characters (openssl rand -hex 32), got %d; unset, a key is derived from SECKILL_WEBHOOK_SECRET", n))
	}
	admin, err := auth.ParseAdminClaim(str("SECKILL_ADMIN_CLAIM", auth.DefaultAdminClaim))
	if err != nil {
		errs = append(errs, fmt.Errorf("SECKILL_ADMIN_CLAIM: %w", err))
	}
	c.AdminClaim = admin
	c.TemporalTLS = TemporalTLS{
		CertFile: get("TEMPORAL_TLS_CERT"), KeyFile: get("TEMPORAL_TLS_KEY"), CAFile: get("TEMPORAL_TLS_CA"),
		ServerName: get("TEMPORAL_TLS_SERVER_NAME"), APIKey: strings.TrimSpace(get("TEMPORAL_API_KEY")),
	}
	errs = append(errs, c.TemporalTLS.check(time.Now())...)
	errs = append(errs, c.checkSignIn()...)
	switch {
	case c.EventsURL != "":
		if _, err := shopevents.New(c.EventsURL, c.EventsSecret, nil); err != nil {
			errs = append(errs, err)
		}
	case c.EventsSecret != "":
		errs = append(errs, errors.New("SECKILL_EVENTS_SECRET is set without SECKILL_EVENTS_URL: set the shop's endpoint for order events, or unset the secret"))
	}
	switch c.PaymentProvider {
	case ProviderDev:
	case ProviderStripe:
		if _, err := stripepay.New(c.StripeSecretKey, c.StripeAPIBase); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("SECKILL_PAYMENT_PROVIDER must be %s or %s, got %q", ProviderDev, ProviderStripe, c.PaymentProvider))
	}
	flag := func(key string, def bool) bool {
		note(key, strconv.FormatBool(def))
		switch v := strings.ToLower(getenv(key)); v {
		case "":
			return def
		case "0", "false", "no", "off":
			return false
		case "1", "true", "yes", "on":
			return true
		default:
			errs = append(errs, fmt.Errorf("%s must be true or false, got %q", key, v))
			return def
		}
	}
	c.DevTools = flag("SECKILL_DEV_TOOLS", false)
	urls := get("SECKILL_BEACON_URLS")
	if c.BeaconURLs, err = beacon.ParseURLs(urls); err != nil {
		errs = append(errs, fmt.Errorf("SECKILL_BEACON_URLS: %w", err))
	}
	c.BeaconLocal = urls == ""
	switch chain := str("SECKILL_BEACON_CHAIN", "quicknet"); chain {
	case "quicknet":
		c.BeaconChain = beacon.Quicknet
	case "dev":
		c.BeaconChain = beacon.Dev
	default:
		errs = append(errs, fmt.Errorf("SECKILL_BEACON_CHAIN must be quicknet or dev, got %q", chain))
	}
	c.RelayRate = float64(num("SECKILL_RELAY_RATE", 0, 0, 100000))
	c.EagerStart = flag("SECKILL_EAGER_START", true)
	if c.ClaimRate.Max, c.ClaimRate.Window, err = parseRate(str("SECKILL_CLAIM_RATE", "10/10s")); err != nil {
		errs = append(errs, fmt.Errorf("SECKILL_CLAIM_RATE: %w", err))
	}
	if c.IPRate.Max, c.IPRate.Window, err = parseRate(str("SECKILL_IP_RATE", "0")); err != nil {
		errs = append(errs, fmt.Errorf("SECKILL_IP_RATE: %w", err))
	}
	for _, p := range strings.Split(get("SECKILL_TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("SECKILL_TRUSTED_PROXIES: %q is neither an address nor a CIDR", p))
				continue
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		c.IPRate.TrustedProxies = append(c.IPRate.TrustedProxies, prefix.Masked())
	}
	return c, errors.Join(errs...)
}

// ConfigEnv is every environment variable FromEnv reads, in the order it
// reads them, with its default: FromEnv itself names them as it reads
// them, so the commands' help (cmd/seckill) cannot miss one.
func ConfigEnv() []cli.Var {
	var vars []cli.Var
	seen := map[string]bool{}
	_, _ = fromEnv(func(string) string { return "" }, func(name, def string) {
		if !seen[name] {
			seen[name] = true
			vars = append(vars, cli.Var{Name: name, Default: shownDefault(name, def)})
		}
	})
	return vars
}

// shownDefault is the default of setting name as the help shows it: def,
// FromEnv's, unless FromEnv computes it or the value means more than it
// says.
func shownDefault(name, def string) string {
	switch name {
	case "SECKILL_REDIS_PREFIX":
		return "seckill- and 8 hex digits of the installation id"
	case "SECKILL_REDIS_MIN_REPLICAS":
		return "1 with Sentinel or Cluster, 0 with one server"
	case "SECKILL_POW_KEY":
		return "derived from SECKILL_WEBHOOK_SECRET"
	case "STRIPE_API_BASE":
		return stripepay.DefaultAPIBase
	case "SECKILL_DEV_PPROF_PORT", "SECKILL_IP_RATE":
		return def + " (off)"
	case "SECKILL_RELAY_RATE":
		return def + " (unpaced)"
	}
	return def
}

// otherEnv are the environment variables read outside FromEnv.
func otherEnv() []cli.Var {
	return []cli.Var{
		// The API commands' --api (sale, order wait, draw verify).
		{Name: "SECKILL_API_URL", Default: "http://$SECKILL_HTTP_ADDR"},
		// cmd/seckill: the processes' logs, profiler and worker metrics.
		{Name: "SECKILL_LOG_LEVEL", Default: "info"},
		{Name: "SECKILL_LOG_FORMAT", Default: "text in dev and devserver, json otherwise"},
		{Name: "SECKILL_PPROF_ADDR", Default: "off"},
		{Name: "SECKILL_METRICS_ADDR", Default: "off"},
		// tracing.Setup, and the OpenTelemetry SDK it starts.
		{Name: "OTEL_EXPORTER_OTLP_PROTOCOL", Default: "http/protobuf"},
		{Name: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Default: "OTEL_EXPORTER_OTLP_PROTOCOL's"},
		{Name: "OTEL_SERVICE_NAME", Default: "seckill-COMMAND"},
		{Name: "OTEL_TRACES_SAMPLER", Default: "parentbased_always_on"},
	}
}

// Settings is every environment variable seckill reads: FromEnv's
// (ConfigEnv), then those read elsewhere.
func Settings() []cli.Var { return append(ConfigEnv(), otherEnv()...) }

// Env returns the named settings with their defaults, for a command's
// help. It panics on a name that is not a setting (Settings), a mistake
// the help tests find by asking every command for its help.
func Env(names ...string) []cli.Var {
	all := Settings()
	vars := make([]cli.Var, 0, len(names))
	for _, name := range names {
		i := slices.IndexFunc(all, func(v cli.Var) bool { return v.Name == name })
		if i < 0 {
			panic("app.Env: " + name + " is not a setting seckill reads")
		}
		vars = append(vars, all[i])
	}
	return vars
}

// TemporalEnv names the settings of the connection to Temporal
// (DialTemporal), and the task queue of the sagas.
func TemporalEnv() []string {
	return []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE", "TEMPORAL_TLS_CERT",
		"TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_API_KEY"}
}

// DevServerEnv names the settings of the embedded Temporal server, which
// only dev and devserver run (StartDevServer).
func DevServerEnv() []string {
	return []string{"SECKILL_DEV_TEMPORAL_PORT", "SECKILL_DEV_UI_PORT", "SECKILL_DEV_PPROF_PORT"}
}

// SigningEnv names the settings of the tokens seckill signs itself
// (Secret): the shared secret, the audience and the admin claim; and the
// identity provider's, which rule such tokens out.
func SigningEnv() []string {
	return []string{"SECKILL_JWT_SECRET", "SECKILL_JWT_AUDIENCE", "SECKILL_ADMIN_CLAIM", "SECKILL_OIDC_ISSUER", "SECKILL_JWKS_URL"}
}

// AdminEnv names the settings of the command-line tools' admin token
// (AdminBearer).
func AdminEnv() []string { return append([]string{"SECKILL_ADMIN_TOKEN"}, SigningEnv()...) }

// parseRate reads "N/duration" (e.g. "10/10s"); "0" means no limit.
func parseRate(v string) (int, time.Duration, error) {
	if v == "0" {
		return 0, 0, nil
	}
	n, d, ok := strings.Cut(v, "/")
	max, err := strconv.Atoi(n)
	if !ok || err != nil || max < 1 {
		return 0, 0, fmt.Errorf("want N/duration like 10/10s, or 0 for no limit, got %q", v)
	}
	window, err := time.ParseDuration(d)
	if err != nil || window <= 0 {
		return 0, 0, fmt.Errorf("want N/duration like 10/10s, or 0 for no limit, got %q", v)
	}
	return max, window, nil
}

// UsesProvider reports whether tokens are verified with an identity
// provider's keys rather than the shared secret.
func (c *Config) UsesProvider() bool { return c.OIDCIssuer != "" || c.JWKSURL != "" }

// checkSignIn checks that the sign-in settings name one way to verify
// tokens.
func (c *Config) checkSignIn() []error {
	var errs []error
	for _, setting := range [][2]string{{"SECKILL_OIDC_ISSUER", c.OIDCIssuer}, {"SECKILL_JWKS_URL", c.JWKSURL}} {
		if u, err := url.Parse(setting[1]); setting[1] != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
			errs = append(errs, fmt.Errorf("%s must be an http(s) URL, got %q", setting[0], setting[1]))
		}
	}
	switch {
	case c.OIDCIssuer != "" && c.JWKSURL != "":
		errs = append(errs, errors.New("SECKILL_OIDC_ISSUER and SECKILL_JWKS_URL are both set: set the issuer (its keys are found by discovery) or the key set with SECKILL_JWT_ISSUER, not both"))
	case c.JWKSURL != "" && c.JWTIssuer == "":
		errs = append(errs, errors.New("SECKILL_JWKS_URL needs SECKILL_JWT_ISSUER, the iss its tokens must carry"))
	case !c.UsesProvider() && c.JWTIssuer != "":
		errs = append(errs, errors.New("SECKILL_JWT_ISSUER is set without SECKILL_JWKS_URL: it names the iss of a provider's tokens, and tokens signed with SECKILL_JWT_SECRET are not checked against it; set SECKILL_JWKS_URL or unset SECKILL_JWT_ISSUER"))
	case c.OIDCIssuer != "" && c.JWTIssuer != "" && c.JWTIssuer != c.OIDCIssuer:
		errs = append(errs, fmt.Errorf("SECKILL_JWT_ISSUER (%q) differs from SECKILL_OIDC_ISSUER (%q): with discovery the issuer is SECKILL_OIDC_ISSUER; unset SECKILL_JWT_ISSUER", c.JWTIssuer, c.OIDCIssuer))
	}
	if c.UsesProvider() && len(c.JWTSecret) > 0 {
		name := "SECKILL_OIDC_ISSUER"
		if c.JWKSURL != "" {
			name = "SECKILL_JWKS_URL"
		}
		errs = append(errs, fmt.Errorf("%s and SECKILL_JWT_SECRET are both set: tokens are verified with the identity provider's keys or with the shared secret, not both; unset one", name))
	}
	return errs
}

// Verifier is how the API verifies bearer tokens: the identity provider's
// keys, loaded in the background until ctx is done, or the shared secret.
func (c *Config) Verifier(ctx context.Context) (auth.Verifier, error) {
	if !c.UsesProvider() {
		return c.Secret(), nil
	}
	issuer := c.JWTIssuer
	if c.OIDCIssuer != "" {
		issuer = c.OIDCIssuer
	}
	return auth.NewProvider(ctx, auth.ProviderConfig{
		Discover: c.OIDCIssuer != "", Issuer: issuer, JWKSURL: c.JWKSURL,
		Audience: c.JWTAudience, Admin: c.AdminClaim, Refresh: c.JWKSRefresh, Log: c.Log,
	})
}

// AdminBearer returns the bearer token the command-line tools send to the
// API as an admin: SECKILL_ADMIN_TOKEN, or one signed with the JWT secret
// for subject, valid for ttl. With an identity provider only its own
// tokens pass, so SECKILL_ADMIN_TOKEN is then required.
func (c *Config) AdminBearer(subject string, ttl time.Duration) (string, error) {
	if c.AdminToken != "" {
		return c.AdminToken, nil
	}
	if c.UsesProvider() {
		return "", errors.New("SECKILL_ADMIN_TOKEN is required with an identity provider (SECKILL_OIDC_ISSUER or SECKILL_JWKS_URL): set it to an admin's access token from the provider")
	}
	return c.Secret().Sign(subject, true, ttl)
}

// Secret is the shared-secret verifier and signer of these settings: its
// tokens carry SECKILL_JWT_AUDIENCE and, for admins, SECKILL_ADMIN_CLAIM.
func (c *Config) Secret() *auth.Secret {
	return auth.NewSecret(c.JWTSecret, c.JWTAudience, c.AdminClaim)
}

// RequireSecrets fails unless the process has its secrets: the webhook
// secret, and the JWT secret unless an identity provider signs the tokens.
// Production processes never fall back to the dev secrets.
func (c *Config) RequireSecrets() error {
	var errs []error
	if len(c.JWTSecret) == 0 && !c.UsesProvider() {
		errs = append(errs, errors.New("SECKILL_JWT_SECRET is required unless SECKILL_OIDC_ISSUER or SECKILL_JWKS_URL names your identity provider: set it to a long random value (openssl rand -hex 32); `seckill dev` uses a printed dev secret"))
	}
	if len(c.WebhookSecret) == 0 {
		errs = append(errs, errors.New("SECKILL_WEBHOOK_SECRET is required: set it to your payment provider's webhook signing secret (Stripe: whsec_...); `seckill dev` uses a printed dev secret"))
	}
	return errors.Join(errs...)
}

// WithDevSecrets fills unset secrets with the fixed dev ones (the JWT
// secret only when no identity provider is set).
func (c *Config) WithDevSecrets() {
	if len(c.JWTSecret) == 0 && !c.UsesProvider() {
		c.JWTSecret = []byte(DevJWTSecret)
	}
	if len(c.WebhookSecret) == 0 {
		c.WebhookSecret = []byte(DevWebhookSecret)
	}
}

// LogIDsAsStrings is a slog ReplaceAttr that writes integer ids (keys
// ending in "ID": orderID, saleID, ...) as strings, as the API does: an
// order id does not survive a float64, which is how jq and most log tools
// read JSON numbers.
func LogIDsAsStrings(_ []string, a slog.Attr) slog.Attr {
	if strings.HasSuffix(a.Key, "ID") && a.Value.Kind() == slog.KindInt64 {
		return slog.String(a.Key, strconv.FormatInt(a.Value.Int64(), 10))
	}
	return a
}

// TemporalTLS is how every process and command reaches a Temporal beyond
// loopback (docs/OPERATIONS.md "Temporal beyond loopback"): a self-hosted
// cluster with mutual TLS, or Temporal Cloud. Any setting turns TLS on;
// with none the connection is plaintext, as to `seckill dev`'s own server.
type TemporalTLS struct {
	// CertFile and KeyFile (TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY) are the
	// client certificate and its private key, PEM; both or neither. They
	// are read again at each TLS handshake, so a renewed certificate
	// (cert-manager) is used from the next connection on.
	CertFile string
	KeyFile  string
	// CAFile (TEMPORAL_TLS_CA) holds the CA certificates, PEM, the
	// server's certificate is verified with [the system's roots].
	CAFile string
	// ServerName (TEMPORAL_TLS_SERVER_NAME) is the name the server's
	// certificate must carry [TEMPORAL_ADDRESS's host].
	ServerName string
	// APIKey (TEMPORAL_API_KEY), a Temporal Cloud API key, is sent as
	// "authorization: Bearer" with every call.
	APIKey string
}

// Enabled reports whether the connection to Temporal is TLS.
func (t TemporalTLS) Enabled() bool { return t != TemporalTLS{} }

// check returns an error, naming the setting, for each setting that
// cannot work at now.
func (t TemporalTLS) check(now time.Time) []error {
	var errs []error
	switch {
	case t.KeyFile != "" && t.CertFile == "":
		errs = append(errs, errors.New("TEMPORAL_TLS_KEY is set but TEMPORAL_TLS_CERT is not: set both to the client certificate's PEM files, or neither"))
	case t.CertFile != "" && t.KeyFile == "":
		errs = append(errs, errors.New("TEMPORAL_TLS_CERT is set but TEMPORAL_TLS_KEY is not: set both to the client certificate's PEM files, or neither"))
	case t.CertFile != "":
		if cert, err := loadClientCert(t.CertFile, t.KeyFile); err != nil {
			errs = append(errs, err)
		} else if now.After(cert.Leaf.NotAfter) {
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS_CERT: the certificate in %s expired at %s: renew it", t.CertFile, cert.Leaf.NotAfter.UTC().Format(time.RFC3339)))
		}
	}
	if t.CAFile != "" {
		if _, err := loadCAs(t.CAFile); err != nil {
			errs = append(errs, err)
		}
	}
	if strings.ContainsAny(t.APIKey, " \t\r\n") {
		errs = append(errs, errors.New("TEMPORAL_API_KEY has white space inside it: set it to the API key alone"))
	}
	return errs
}

// client is the TLS configuration and the credentials of the connection
// to Temporal: nil, nil for plaintext. log is told when a renewed client
// certificate cannot be read and the one before is kept.
func (t TemporalTLS) client(log *slog.Logger) (*tls.Config, sdkclient.Credentials, error) {
	if !t.Enabled() {
		return nil, nil, nil
	}
	if errs := t.check(time.Now()); len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pool, err := loadCAs(t.CAFile)
		if err != nil {
			return nil, nil, err
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		r := &certReloader{certFile: t.CertFile, keyFile: t.KeyFile, log: log}
		if _, err := r.get(nil); err != nil {
			return nil, nil, err
		}
		tc.GetClientCertificate = r.get
	}
	var creds sdkclient.Credentials
	if t.APIKey != "" {
		creds = sdkclient.NewAPIKeyStaticCredentials(t.APIKey)
	}
	return tc, creds, nil
}

// certReloader reads the client certificate at each TLS handshake, and
// keeps the last one read when the files cannot be read (a renewal half
// written).
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	mu                sync.Mutex
	last              *tls.Certificate
}

func (r *certReloader) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	cert, err := loadClientCert(r.certFile, r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.last == nil {
			return nil, err
		}
		if r.log != nil {
			r.log.Warn("cannot read the Temporal client certificate again: the one read before is presented", "err", err)
		}
		return r.last, nil
	}
	r.last = cert
	return cert, nil
}

// loadClientCert reads TEMPORAL_TLS_CERT's certificate and
// TEMPORAL_TLS_KEY's key; an error names the setting at fault.
func loadClientCert(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_TLS_CERT: %w", err)
	}
	leaf, err := parseCerts(certPEM)
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_TLS_CERT: %s %w", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_TLS_KEY: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The certificate parsed above: what fails is the key.
		if strings.Contains(err.Error(), "does not match") {
			return nil, fmt.Errorf("TEMPORAL_TLS_KEY: %s is not the private key of the certificate in TEMPORAL_TLS_CERT (%s)", keyFile, certFile)
		}
		return nil, fmt.Errorf("TEMPORAL_TLS_KEY: %s holds no usable PEM private key (%s)", keyFile, strings.TrimPrefix(err.Error(), "tls: "))
	}
	cert.Leaf = leaf[0]
	return &cert, nil
}

// loadCAs reads TEMPORAL_TLS_CA's certificates.
func loadCAs(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
	}
	certs, err := parseCerts(data)
	if err != nil {
		return nil, fmt.Errorf("TEMPORAL_TLS_CA: %s %w", file, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// parseCerts returns the PEM certificates in data: at least one, each
// parsable; an error completes "FILE ...".
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("holds a certificate that does not parse: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return certs, nil
}
