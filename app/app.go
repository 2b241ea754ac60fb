package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/tracing"
	sdkclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/opsmetrics"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/payments/stripepay"
	"github.com/seckill/seckill/reconcile"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/saga"
	"github.com/seckill/seckill/shopevents"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/warmup"
	"github.com/seckill/seckill/worker"
)

// Deps are the connections every process holds, and its metrics.
type Deps struct {
	Redis    *redisstore.Store
	Store    *store.Store
	Temporal sdkclient.Client
	Metrics  *prometheus.Registry
}

// Connect opens Postgres, Redis (under the installation's own key prefix,
// refusing one another installation owns) and the Temporal client.
func Connect(ctx context.Context, cfg Config) (*Deps, error) { return connect(ctx, cfg, true) }

// ConnectTool is Connect for a tool that only reads (the audit): it checks
// that the prefix is this installation's and never takes one.
func ConnectTool(ctx context.Context, cfg Config) (*Deps, error) { return connect(ctx, cfg, false) }

func connect(ctx context.Context, cfg Config, own bool) (*Deps, error) {
	d := &Deps{Metrics: api.NewRegistry()}
	var err error
	if d.Store, err = store.Open(ctx, cfg.DatabaseURL, store.Options{MaxOpenConns: cfg.DBMaxConns, MaxIdleConns: cfg.DBMaxConns, Tracing: cfg.Tracing}); err != nil {
		return nil, postgresError(cfg.DatabaseURL, err)
	}
	if d.Redis, err = openOwnedRedis(ctx, cfg, d.Store, own); err != nil {
		d.Close()
		return nil, err
	}
	mh, err := temporalMetrics(d.Metrics, cfg.Log)
	if err != nil {
		d.Close()
		return nil, err
	}
	topts := sdkclient.Options{MetricsHandler: mh}
	if cfg.Tracing {
		// Starts and signals carry the caller's span in the workflow's
		// headers; the worker (built on this client) continues it in the
		// workflow's and activities' spans.
		ti, err := tracing.TemporalInterceptor()
		if err != nil {
			d.Close()
			return nil, err
		}
		topts.Interceptors = append(topts.Interceptors, ti)
	}
	d.Temporal, err = DialTemporal(ctx, cfg, topts)
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// DialTemporal dials cfg's Temporal: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE
// and, beyond loopback, TEMPORAL_TLS_* and TEMPORAL_API_KEY
// (docs/OPERATIONS.md "Temporal beyond loopback"), logging to cfg.Log. Every process and
// command that talks to Temporal dials here; opts carries the rest
// (metrics, interceptors). An error names the fix.
func DialTemporal(ctx context.Context, cfg Config, opts sdkclient.Options) (sdkclient.Client, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tlsCfg, creds, err := cfg.TemporalTLS.client(log.With("component", "temporal"))
	if err != nil {
		return nil, err
	}
	opts.HostPort, opts.Namespace = cfg.TemporalAddress, cfg.Namespace
	opts.ConnectionOptions.TLS, opts.Credentials = tlsCfg, creds
	if opts.Logger == nil {
		opts.Logger = sdklog.NewStructuredLogger(log.With("component", "temporal"))
	}
	c, err := sdkclient.DialContext(ctx, opts)
	if err != nil {
		return nil, temporalDialError(cfg, err)
	}
	return c, nil
}

// OpenRedis returns cfg's Redis (any of the three REDIS_URL forms) under
// cfg's prefix, with cfg's pool size and replica wait; it connects on
// first use.
func OpenRedis(cfg Config) (*redisstore.Store, error) {
	if cfg.Log != nil {
		redisstore.LogTo(cfg.Log)
	}
	return redisstore.Open(cfg.RedisURL, cfg.RedisPrefix, redisstore.Options{
		PoolSize: cfg.RedisPoolSize, MinReplicas: cfg.RedisMinReplicas, ReplicaTimeout: cfg.RedisReplicaTimeout,
		Tracing: cfg.Tracing,
	})
}

// DefaultRedisPrefix is the key prefix of the installation with id when
// SECKILL_REDIS_PREFIX is unset: its own, so two databases never share
// Redis keys, and the same for every process of one installation.
func DefaultRedisPrefix(installationID string) string {
	return "seckill-" + strings.ReplaceAll(installationID, "-", "")[:8]
}

// openOwnedRedis opens cfg's Redis under the installation's prefix
// (cfg.RedisPrefix, or DefaultRedisPrefix) and makes sure the prefix is
// this installation's, taking it when own is set and nobody has.
func openOwnedRedis(ctx context.Context, cfg Config, st *store.Store, own bool) (*redisstore.Store, error) {
	id, err := st.InstallationID(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.RedisPrefix == "" {
		cfg.RedisPrefix = DefaultRedisPrefix(id)
	}
	r, err := OpenRedis(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.Ping(ctx); err != nil {
		_ = r.Close()
		return nil, redisError(cfg.RedisURL, err)
	}
	knownSale := func(ctx context.Context, saleID int64) (bool, error) {
		_, err := st.Sale(ctx, saleID)
		if errors.Is(err, seckill.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	check := func() error { return r.ClaimPrefix(ctx, id, "database "+redact(cfg.DatabaseURL), knownSale) }
	if !own {
		check = func() error { return r.CheckPrefix(ctx, id) }
	}
	if err := check(); err != nil {
		_ = r.Close()
		return nil, err
	}
	if want := r.MinReplicas(); want > 0 && cfg.Log != nil {
		if n, err := r.Replicas(ctx); err == nil && n < want {
			cfg.Log.Warn("Redis has fewer replicas than an admission must reach: claims are answered 503 until they connect (or lower SECKILL_REDIS_MIN_REPLICAS)",
				"replicas", n, "SECKILL_REDIS_MIN_REPLICAS", want)
		}
	}
	return r, nil
}

// Close closes every connection that was opened.
func (d *Deps) Close() {
	if d.Temporal != nil {
		d.Temporal.Close()
	}
	if d.Store != nil {
		_ = d.Store.Close()
	}
	if d.Redis != nil {
		_ = d.Redis.Close()
	}
}

// Payments returns cfg's payment provider: the one that refunds, and the
// one that makes and cancels payment objects (nil for dev, whose checkout
// needs none).
func Payments(cfg Config, st *store.Store) (seckill.PaymentProvider, seckill.PaymentIntents, error) {
	if cfg.PaymentProvider != ProviderStripe {
		return devpay.Provider{Ledger: st}, nil, nil
	}
	p, err := stripepay.New(cfg.StripeSecretKey, cfg.StripeAPIBase)
	if err != nil {
		return nil, nil, err
	}
	return p, p, nil
}

// RunAPI serves the HTTP API on ln until ctx is done.
func RunAPI(ctx context.Context, cfg Config, d *Deps, ln net.Listener) error {
	if err := d.Redis.Preload(ctx); err != nil {
		return err
	}
	if b := cfg.Beacon(); b != nil && b.Dev && !cfg.DevTools {
		cfg.Log.Warn("SECKILL_BEACON_CHAIN=dev: new sales' draws wait for the development beacon, whose key anyone can derive; `seckill draw verify` refuses them without --dev-chain. For development and tests only")
	}
	ids, err := idgen.New(ctx, d.Redis.IDNodes(), cfg.Log)
	if err != nil {
		return err
	}
	_, intents, err := Payments(cfg, d.Store)
	if err != nil {
		return err
	}
	verifier, err := cfg.Verifier(ctx)
	if err != nil {
		return err
	}
	// Creating a sale with a lobby starts its draw.
	sagas := saga.New(d.Temporal, saga.Options{TaskQueue: cfg.TaskQueue, DrawTaskQueue: cfg.DrawTaskQueue})
	srv := api.New(api.Config{
		Auth:  verifier,
		Store: d.Store, Redis: d.Redis.WithRateLimit(cfg.ClaimRate), IDs: ids, Sagas: sagas,
		Delivery:  &delivery.Deliverer{Store: d.Store, Redis: d.Redis, Sagas: sagas, Log: cfg.Log, Hold: cfg.PaymentHold},
		JWTSecret: cfg.JWTSecret, WebhookSecret: cfg.WebhookSecret, ProofKey: cfg.ProofKey, Log: cfg.Log, IPLimit: cfg.IPRate,
		Registry: d.Metrics, Dev: api.DevTools{SignIn: cfg.DevTools && !cfg.UsesProvider(), Checkout: cfg.DevTools && intents == nil}, WaitlistMax: cfg.WaitlistMax,
		Payments: intents, Tracing: cfg.Tracing, Beacon: cfg.Beacon(),
		ShutdownDelay: cfg.ShutdownDelay, ShutdownTimeout: cfg.ShutdownTimeout,
	})
	// The id node's lease is renewed until the last request has its
	// answer, so the draining claims still get order ids. Requests Serve
	// gives up on (the shutdown timeout) may mint after: the node is
	// never freed, and Next refuses before the lease can expire.
	idsCtx, stopIDs := context.WithCancel(context.WithoutCancel(ctx))
	idsDone := make(chan error, 1)
	go func() { idsDone <- ids.Run(idsCtx) }()
	err = srv.Serve(ctx, ln)
	stopIDs()
	return errors.Join(err, <-idsDone)
}

// RunWorker runs the Temporal workers (the sagas' task queue's and the
// draws'), the outbox relay and the re-warmer until ctx is done, after
// making sure the namespace has seckill's search attributes.
func RunWorker(ctx context.Context, cfg Config, d *Deps) error {
	if err := worker.EnsureSearchAttributes(ctx, d.Temporal, cfg.Namespace); err != nil {
		return err
	}
	// A unit released to a waiting buyer becomes a new order: the worker
	// leases an id node of its own, like every API process.
	ids, err := idgen.New(ctx, d.Redis.IDNodes(), cfg.Log)
	if err != nil {
		return err
	}
	provider, _, err := Payments(cfg, d.Store)
	if err != nil {
		return err
	}
	// Reconciliation starts the draws the API could not.
	sagas := saga.New(d.Temporal, saga.Options{TaskQueue: cfg.TaskQueue, DrawTaskQueue: cfg.DrawTaskQueue})
	var opts []activities.Option
	if cfg.EventsURL != "" {
		sender, err := shopevents.New(cfg.EventsURL, cfg.EventsSecret, nil)
		if err != nil {
			return err
		}
		if cfg.EventsRetryFor < 72*time.Hour {
			cfg.Log.Warn("SECKILL_EVENTS_RETRY_FOR is under the 3 days docs/API.md promises the shop", "retryFor", cfg.EventsRetryFor.String())
		}
		opts = append(opts, activities.WithShop(saga.NewShopClient(sagas, cfg.EventsRetryFor), sender))
	}
	if cfg.BeaconURLs != nil {
		opts = append(opts, activities.WithBeacon(beacon.NewClient(cfg.BeaconURLs, &http.Client{Timeout: 5 * time.Second}), cfg.BeaconChain))
	}
	opts = append(opts, activities.WithSettleSlice(activities.DrawSettleSlice))
	acts := activities.New(d.Store, d.Redis, d.Redis.ForDraw(), provider, ids, cfg.StockTx, opts...)
	// The sticky cache is the SDK's, one per process: sized before the
	// first worker of the process starts, which creates it.
	sdkworker.SetStickyWorkflowCacheSize(cfg.WorkflowCache)
	w := worker.New(d.Temporal, cfg.TaskQueue, acts, worker.Options{MaxConcurrentActivities: cfg.WorkerActivities, StopTimeout: cfg.ShutdownTimeout})
	draws := worker.NewDraws(d.Temporal, cfg.DrawTaskQueue, acts, worker.DrawOptions(cfg.ShutdownTimeout))
	rec := &reconcile.Reconciler{
		Store: d.Store, Redis: d.Redis, Sagas: sagas,
		Log: cfg.Log.With("component", "reconcile"), Grace: cfg.ReconcileGrace,
		Delivery: &delivery.Deliverer{Store: d.Store, Redis: d.Redis, Sagas: sagas, Log: cfg.Log, Hold: cfg.PaymentHold},
		IDs:      ids,
		Draws:    &reconcile.Draws{Store: d.Store, Sagas: sagas, WaitlistMax: cfg.WaitlistMax},
	}
	if err := rec.Register(d.Metrics); err != nil {
		return err
	}
	// The gauges the alerts read (deploy/prometheus/alerts.yml), read from
	// Redis and PostgreSQL at each scrape.
	health := opsmetrics.New(d.Store, d.Redis, opsmetrics.Options{Log: cfg.Log.With("component", "opsmetrics")})
	if err := health.Register(d.Metrics); err != nil {
		return err
	}
	w.RegisterActivity(&reconcile.Activities{R: rec})
	if err := worker.EnsureReconcileSchedule(ctx, d.Temporal, cfg.TaskQueue, cfg.ReconcileEvery); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if err := draws.Start(); err != nil {
		w.Stop()
		return fmt.Errorf("start the draws' worker: %w", err)
	}
	// On the way out: the relay stops first (it marks itself gone, so the
	// other relays take its pending outbox entries at once), then the
	// workers (the sagas' and the draws', side by side, so the stop takes
	// one StopTimeout at most) stop polling and finish their tasks in
	// flight, and only then does the id node's lease stop being renewed
	// (an activity may still make an order; one the worker gave up on may
	// even after, until Next refuses at the lease's confirmed expiry).
	idsCtx, stopIDs := context.WithCancel(context.WithoutCancel(ctx))
	idsDone := make(chan error, 1)
	go func() { idsDone <- ids.Run(idsCtx) }()
	defer func() { stopIDs(); <-idsDone }()
	defer func() {
		began := time.Now()
		stopAll(w, draws)
		took := time.Since(began)
		cfg.Log.Info("worker stopped", "after", took.Round(time.Millisecond).String())
	}()
	host, _ := os.Hostname()
	// The relay shares this process's client with the worker: with eager
	// start, the server hands each new saga's first workflow task straight
	// back to this worker with the start answer.
	starter := saga.New(d.Temporal, saga.Options{TaskQueue: cfg.TaskQueue, EagerStart: cfg.EagerStart})
	r := relay.New(d.Redis, starter, relay.Config{
		Consumer:  host + "-" + strconv.Itoa(os.Getpid()) + "-" + randomSuffix(),
		ClaimIdle: cfg.RelayClaimIdle,
		Parallel:  cfg.RelayParallel,
		Rate:      cfg.RelayRate,
	}, cfg.Log.With("component", "relay"))
	if err := r.Register(d.Metrics); err != nil {
		return err
	}
	warmer := warmup.New(d.Store, d.Redis, cfg.RewarmEvery, cfg.Log.With("component", "warmup"))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.Run(gctx) })
	g.Go(func() error { return warmer.Run(gctx) })
	return g.Wait()
}

// Migrate creates the database if it is missing and applies the
// migrations, telling progress when it is not nil.
func Migrate(ctx context.Context, cfg Config, progress io.Writer) error {
	return migrate(ctx, cfg, newProgress(progress), "database migrated")
}

// migrate creates the database if it is missing and applies the
// migrations over a connection of its own, as one progress step.
func migrate(ctx context.Context, cfg Config, step func(string) func(string), doneMsg string) error {
	done := step("creating (if missing) and migrating the database " + redact(cfg.DatabaseURL))
	if err := store.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return postgresError(cfg.DatabaseURL, err)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return postgresError(cfg.DatabaseURL, err)
	}
	defer func() { _ = st.Close() }()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	done(doneMsg)
	return nil
}

// Listen opens a listener on addr; setting names the environment variable
// that chose it, for the error message.
func Listen(addr, setting string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError(addr, setting, err)
	}
	return ln, nil
}

// shutdownErr is err, or nil when ctx is done: once asked to stop, a step
// that fails because it was interrupted (a gRPC call answering Canceled,
// say, which does not wrap context.Canceled) is a clean shutdown.
func shutdownErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// stopAll stops the workers at once and returns when every one has
// stopped.
func stopAll(workers ...interface{ Stop() }) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.Stop() }()
	}
	wg.Wait()
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
