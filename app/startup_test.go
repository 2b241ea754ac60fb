//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// Every start-up error names what failed and the setting that fixes it.
func TestStartupErrors_NameTheFix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cfg := testConfig(t)
	cfg.RedisURL = "redis://127.0.0.1:1/0"
	_, err := app.Connect(ctx, cfg)
	require.ErrorContains(t, err, "Redis not reachable at redis://127.0.0.1:1/0: start it")
	require.ErrorContains(t, err, "set REDIS_URL")

	cfg = testConfig(t)
	cfg.DatabaseURL = "postgres://postgres:hunter2@127.0.0.1:1/seckill?sslmode=disable"
	_, err = app.Connect(ctx, cfg)
	require.ErrorContains(t, err, "PostgreSQL not usable at postgres://postgres:xxxxx@127.0.0.1:1/seckill")
	require.ErrorContains(t, err, "DATABASE_URL")
	require.NotContains(t, err.Error(), "hunter2")
	err = app.Migrate(ctx, cfg, nil)
	require.ErrorContains(t, err, "DATABASE_URL")

	cfg = testConfig(t)
	cfg.TemporalAddress = "127.0.0.1:1"
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = app.Connect(tctx, cfg)
	tcancel()
	require.ErrorContains(t, err, "Temporal not reachable at 127.0.0.1:1")
	require.ErrorContains(t, err, "TEMPORAL_ADDRESS")

	ln, err := app.Listen("127.0.0.1:0", "SECKILL_HTTP_ADDR")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	_, err = app.Listen(ln.Addr().String(), "SECKILL_HTTP_ADDR")
	require.ErrorContains(t, err, "set SECKILL_HTTP_ADDR to a free address")

	var empty app.Config
	err = empty.RequireSecrets()
	require.ErrorContains(t, err, "SECKILL_JWT_SECRET is required unless SECKILL_OIDC_ISSUER or SECKILL_JWKS_URL")
	require.ErrorContains(t, err, "SECKILL_WEBHOOK_SECRET is required: set it")

	_, err = app.FromEnv(func(k string) string {
		if k == "SECKILL_DEV_TOOLS" {
			return "maybe"
		}
		return ""
	})
	require.ErrorContains(t, err, "SECKILL_DEV_TOOLS must be true or false")

	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	_, err = app.FromEnv(env(map[string]string{"SECKILL_PAYMENT_PROVIDER": "paypal"}))
	require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER must be dev or stripe")
	_, err = app.FromEnv(env(map[string]string{"SECKILL_PAYMENT_PROVIDER": "stripe"}))
	require.ErrorContains(t, err, "STRIPE_SECRET_KEY is required with SECKILL_PAYMENT_PROVIDER=stripe")
	_, err = app.FromEnv(env(map[string]string{"SECKILL_PAYMENT_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "pk_test_1"}))
	require.ErrorContains(t, err, "publishable key")
	_, err = app.FromEnv(env(map[string]string{"SECKILL_PAYMENT_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "sk_test_1", "STRIPE_API_BASE": "stripe-mock:12111"}))
	require.ErrorContains(t, err, "STRIPE_API_BASE must be an http(s) URL")
	cfg, err = app.FromEnv(env(map[string]string{"SECKILL_PAYMENT_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "sk_test_1"}))
	require.NoError(t, err)
	require.Equal(t, app.ProviderStripe, cfg.PaymentProvider)
	cfg, err = app.FromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, app.ProviderDev, cfg.PaymentProvider, "dev unless told otherwise")

	// Sign-in: one way to verify tokens, each mistake named.
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SECKILL_OIDC_ISSUER": "https://id.example", "SECKILL_JWT_SECRET": "s"}, "SECKILL_OIDC_ISSUER and SECKILL_JWT_SECRET are both set"},
		{map[string]string{"SECKILL_JWKS_URL": "https://id.example/jwks", "SECKILL_JWT_ISSUER": "https://id.example", "SECKILL_JWT_SECRET": "s"}, "SECKILL_JWKS_URL and SECKILL_JWT_SECRET are both set"},
		{map[string]string{"SECKILL_OIDC_ISSUER": "https://id.example", "SECKILL_JWKS_URL": "https://id.example/jwks"}, "SECKILL_OIDC_ISSUER and SECKILL_JWKS_URL are both set"},
		{map[string]string{"SECKILL_JWKS_URL": "https://id.example/jwks"}, "SECKILL_JWKS_URL needs SECKILL_JWT_ISSUER"},
		{map[string]string{"SECKILL_OIDC_ISSUER": "id.example"}, "SECKILL_OIDC_ISSUER must be an http(s) URL"},
		{map[string]string{"SECKILL_ADMIN_CLAIM": "role=admin"}, "SECKILL_ADMIN_CLAIM"},
		{map[string]string{"SECKILL_JWT_SECRET": "s", "SECKILL_JWT_ISSUER": "https://id.example"}, "SECKILL_JWT_ISSUER is set without SECKILL_JWKS_URL"},
		// Order events to the shop: a URL, and a Standard Webhooks key.
		{map[string]string{"SECKILL_EVENTS_URL": "https://shop.example/hooks"}, "SECKILL_EVENTS_SECRET must be a Standard Webhooks key"},
		{map[string]string{"SECKILL_EVENTS_URL": "https://shop.example/hooks", "SECKILL_EVENTS_SECRET": "whsec_c2hvcnQ="}, "use at least 24"},
		{map[string]string{"SECKILL_EVENTS_URL": "shop.example/hooks", "SECKILL_EVENTS_SECRET": shopSecret}, "SECKILL_EVENTS_URL must be an http(s) URL"},
		{map[string]string{"SECKILL_EVENTS_SECRET": shopSecret}, "SECKILL_EVENTS_SECRET is set without SECKILL_EVENTS_URL"},
		{map[string]string{"SECKILL_EVENTS_URL": "https://shop.example/hooks", "SECKILL_EVENTS_SECRET": shopSecret, "SECKILL_EVENTS_RETRY_FOR": "3 days"}, "SECKILL_EVENTS_RETRY_FOR must be a positive duration"},
	} {
		_, err = app.FromEnv(env(tt.env))
		require.ErrorContains(t, err, tt.want, "%v", tt.env)
	}
	cfg, err = app.FromEnv(env(map[string]string{"SECKILL_OIDC_ISSUER": "https://id.example", "SECKILL_WEBHOOK_SECRET": "w",
		"SECKILL_ADMIN_CLAIM": "/realm_access/roles=seckill-admin", "SECKILL_JWT_AUDIENCE": "shop-api"}))
	require.NoError(t, err)
	require.True(t, cfg.UsesProvider())
	require.NoError(t, cfg.RequireSecrets(), "no JWT secret is needed with a provider")
	require.Equal(t, "/realm_access/roles=seckill-admin", cfg.AdminClaim.String())
	_, err = cfg.AdminBearer("cli", time.Minute)
	require.ErrorContains(t, err, "SECKILL_ADMIN_TOKEN is required with an identity provider")
}

func TestMigrate_ShowsProgress(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, app.Migrate(context.Background(), testConfig(t), &out))
	require.Contains(t, out.String(), "migrating the database postgres://")
	require.Contains(t, out.String(), "✓ database migrated")
}

// seckill dev says what it is doing, and opens a demo sale so the shop has
// something to buy, which the typed TypeScript client buys too.
func TestDev_ShowsProgressAndOpensADemoSale(t *testing.T) {
	var out bytes.Buffer
	s := startSystem(t, systemOptions{dev: func(o *app.DevOptions) { o.Progress, o.DemoSale = &out, true }})
	require.Contains(t, out.String(), "• creating (if missing) and migrating the database")
	require.Contains(t, out.String(), "✓ database ready")
	require.Contains(t, out.String(), "✓ API at "+s.info.APIURL)
	require.Regexp(t, `✓ demo sale \d+ open for 24 h`, out.String())

	r := s.mustDo("GET", "/api/v1/sales", "", nil)
	var list struct {
		Sales []seckill.SaleJSON `json:"sales"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	require.Len(t, list.Sales, 1)
	require.Equal(t, seckill.StateActive, list.Sales[0].State)
	require.Equal(t, int64(100), list.Sales[0].Stock.Remaining)
	r = s.claim(list.Sales[0].ID, "first-visitor")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)

	// The TypeScript client (clients/typescript), built on the types
	// generated from api/openapi.yaml, buys from it as a shop's front end
	// would: its own test signs in, claims, pays with the dev provider and
	// reads the order PAID.
	npm := exec.Command("npm", "test")
	npm.Dir = filepath.Join("..", "clients", "typescript")
	npm.Env = append(os.Environ(), "SECKILL_API_URL="+s.info.APIURL)
	out2, err := npm.CombinedOutput()
	require.NoError(t, err, "the TypeScript client's test (npm packages: scripts/ensure-node-tools.sh):\n%s", out2)
}

// Two installations (two databases) never share Redis keys: one that
// finds its prefix owned by another refuses to start and names the
// setting, and the default prefix is each database's own.
func TestConnect_OneInstallationPerRedisPrefix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	a := testConfig(t)
	da, err := app.Connect(ctx, a)
	require.NoError(t, err)
	defer da.Close()

	b := testConfig(t) // a database of its own
	b.RedisPrefix = a.RedisPrefix
	_, err = app.Connect(ctx, b)
	require.ErrorContains(t, err, "belongs to another seckill installation")
	require.ErrorContains(t, err, "SECKILL_REDIS_PREFIX")

	a.RedisPrefix, b.RedisPrefix = "", ""
	da2, err := app.Connect(ctx, a)
	require.NoError(t, err)
	defer da2.Close()
	db, err := app.Connect(ctx, b)
	require.NoError(t, err)
	defer db.Close()
	require.NotEqual(t, da2.Redis.Prefix(), db.Redis.Prefix(), "each database derives a prefix of its own")
	require.Regexp(t, `^seckill-[0-9a-f]{8}$`, da2.Redis.Prefix())
	id, err := da2.Store.InstallationID(ctx)
	require.NoError(t, err)
	require.Equal(t, app.DefaultRedisPrefix(id), da2.Redis.Prefix())
	t.Cleanup(func() {
		_ = da2.Redis.DropAll(context.Background())
		_ = db.Redis.DropAll(context.Background())
	})
}
