// Package app wires seckill's parts into the processes of the command line:
// the API, the worker (with the outbox relay) and the all-in-one dev mode.
// cmd/seckill reads the environment and calls it; the end-to-end tests call
// it in-process.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/payments/stripepay"
	"github.com/seckill/seckill/reconcile"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/relay"
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
	JWTSecret           []byte
	WebhookSecret       []byte

	DevTemporalPort int
	DevUIPort       int
	DevPProfPort    int

	// Tuning.
	DBMaxConns       int
	RedisPoolSize    int
	WorkerActivities int
	StockTx          int
	RelayParallel    int
	RelayClaimIdle   time.Duration
	RelayRate        float64
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

// FromEnv reads the configuration with getenv (os.Getenv). Secrets are
// not checked here: see RequireSecrets and WithDevSecrets.
func FromEnv(getenv func(string) string) (Config, error) {
	str := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	var errs []error
	num := func(key string, def, lo, hi int) int {
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
	c := Config{
		HTTPAddr:            str("SECKILL_HTTP_ADDR", "127.0.0.1:8080"),
		RedisURL:            str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		RedisPrefix:         getenv("SECKILL_REDIS_PREFIX"), // "": DefaultRedisPrefix
		DatabaseURL:         str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/seckill?sslmode=disable"),
		TemporalAddress:     str("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace:           str("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:           str("TEMPORAL_TASK_QUEUE", seckill.DefaultTaskQueue),
		JWTSecret:           []byte(getenv("SECKILL_JWT_SECRET")),
		WebhookSecret:       []byte(getenv("SECKILL_WEBHOOK_SECRET")),
		DevTemporalPort:     num("SECKILL_DEV_TEMPORAL_PORT", 7233, 1, 65535),
		DevUIPort:           num("SECKILL_DEV_UI_PORT", 8233, 1, 65535),
		DevPProfPort:        num("SECKILL_DEV_PPROF_PORT", 0, 0, 65535),
		DBMaxConns:          num("SECKILL_DB_MAX_CONNS", 32, 1, 1000),
		RedisPoolSize:       num("SECKILL_REDIS_POOL_SIZE", 256, 1, 10000),
		RedisMinReplicas:    num("SECKILL_REDIS_MIN_REPLICAS", -1, 0, 16),
		RedisReplicaTimeout: dur("SECKILL_REDIS_REPLICA_TIMEOUT", redisstore.DefaultReplicaTimeout),
		WorkerActivities:    num("SECKILL_WORKER_ACTIVITIES", 200, 1, 10000),
		StockTx:             num("SECKILL_STOCK_TX", 8, 1, 1000),
		RelayParallel:       num("SECKILL_RELAY_PARALLEL", relay.DefaultParallel, 1, 1024),
		RelayClaimIdle:      dur("SECKILL_RELAY_CLAIM_IDLE", relay.DefaultClaimIdle),
		RewarmEvery:         dur("SECKILL_REWARM_EVERY", 5*time.Second),
		ReconcileEvery:      dur("SECKILL_RECONCILE_EVERY", time.Minute),
		ReconcileGrace:      dur("SECKILL_RECONCILE_GRACE", reconcile.DefaultGrace),
		PaymentHold:         dur("SECKILL_PAYMENT_HOLD", delivery.PendingWindow),
		WaitlistMax:         num("SECKILL_WAITLIST_MAX", api.DefaultWaitlistMax, 1, 100_000_000),
		PaymentProvider:     str("SECKILL_PAYMENT_PROVIDER", ProviderDev),
		StripeSecretKey:     getenv("STRIPE_SECRET_KEY"),
		StripeAPIBase:       getenv("STRIPE_API_BASE"),
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
	c.RelayRate = float64(num("SECKILL_RELAY_RATE", 0, 0, 100000))
	c.EagerStart = flag("SECKILL_EAGER_START", true)
	var err error
	if c.ClaimRate.Max, c.ClaimRate.Window, err = parseRate(str("SECKILL_CLAIM_RATE", "10/10s")); err != nil {
		errs = append(errs, fmt.Errorf("SECKILL_CLAIM_RATE: %w", err))
	}
	if c.IPRate.Max, c.IPRate.Window, err = parseRate(str("SECKILL_IP_RATE", "0")); err != nil {
		errs = append(errs, fmt.Errorf("SECKILL_IP_RATE: %w", err))
	}
	for _, p := range strings.Split(getenv("SECKILL_TRUSTED_PROXIES"), ",") {
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

// RequireSecrets fails unless both secrets are set: production processes
// never fall back to the dev secrets.
func (c *Config) RequireSecrets() error {
	var errs []error
	if len(c.JWTSecret) == 0 {
		errs = append(errs, errors.New("SECKILL_JWT_SECRET is required: set it to a long random value (openssl rand -hex 32), the key your identity provider signs tokens with; `seckill dev` uses a printed dev secret"))
	}
	if len(c.WebhookSecret) == 0 {
		errs = append(errs, errors.New("SECKILL_WEBHOOK_SECRET is required: set it to your payment provider's webhook signing secret (Stripe: whsec_...); `seckill dev` uses a printed dev secret"))
	}
	return errors.Join(errs...)
}

// WithDevSecrets fills unset secrets with the fixed dev ones.
func (c *Config) WithDevSecrets() {
	if len(c.JWTSecret) == 0 {
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
