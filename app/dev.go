//go:build !slim

// Dev mode links the embedded Temporal server and its Web UI; the slim
// build (-tags slim) of api and worker leaves them out.

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/saga"
)

// serveDevBeacon serves the development beacon (beacon.DevSigner) over
// drand's HTTP API on a free loopback port.
func serveDevBeacon() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("serve the development beacon: %w", err)
	}
	srv := &http.Server{Handler: beacon.NewServer(beacon.DevSigner()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// DevInfo is what `seckill dev` prints once everything runs.
type DevInfo struct {
	APIURL          string
	UIURL           string
	TemporalAddress string
	AdminToken      string
	WebhookSecret   string
	RedisPrefix     string // the installation's Redis key prefix
}

// DevOptions adjust dev mode (tests use free ports and no UI).
type DevOptions struct {
	// TemporalStore is where the embedded server keeps its state:
	// StorePostgres (the default: databases of its own beside seckill's,
	// so orders in flight survive a restart) or StoreMemory.
	TemporalStore string
	// DBFile keeps Temporal's state in this SQLite file instead.
	DBFile string
	// NoUI skips the Temporal Web UI.
	NoUI bool
	// TemporalLogLevel of the embedded server (debug, info, warn, error,
	// fatal) [error].
	TemporalLogLevel string
	// TemporalLogFile, when set, receives the embedded server's own logs
	// instead of stderr (they are noisy at start-up failures and at stop).
	TemporalLogFile string
	// ExtraNamespaces are created on the embedded server too.
	ExtraNamespaces []string
	// TemporalAddress, when set, is a running Temporal server to use
	// instead of starting one (TemporalUIURL is then its Web UI, if any).
	TemporalAddress string
	TemporalUIURL   string
	// Progress, when set, is told each start-up step as it happens; the
	// logs written meanwhile are held back until ready has returned, so
	// none lands inside the progress.
	Progress io.Writer
	// DemoSale opens a demo sale when no sale is open, so the shop page
	// has something to buy at once.
	DemoSale bool
}

// DemoSaleSpec is the sale `seckill dev` opens when none is open.
var DemoSaleSpec = map[string]any{
	"name": "Demo flash sale: 1 coupon per buyer", "price_cents": 990, "currency": "usd", "stock": 100,
	"payment_timeout_seconds": 120,
}

// Where the embedded Temporal server keeps its state (--temporal-store).
const (
	StorePostgres = "postgres"
	StoreMemory   = "memory"
)

// validStore fails, naming the accepted values, for an unknown --temporal-store.
func validStore(store string) error {
	switch store {
	case "", StorePostgres, StoreMemory:
		return nil
	}
	return fmt.Errorf("--temporal-store must be %s or %s, got %q", StorePostgres, StoreMemory, store)
}

// temporalStoreName says where the embedded server keeps its state, for
// the start-up progress line.
func temporalStoreName(cfg Config, opts DevOptions) string {
	switch {
	case opts.DBFile != "":
		return "state in " + opts.DBFile
	case opts.TemporalStore == StoreMemory:
		return "state in memory"
	}
	pg, err := devserver.PostgresFromURL(cfg.DatabaseURL)
	if err != nil {
		return "state in PostgreSQL"
	}
	history, visibility := pg.Names()
	return "state in PostgreSQL: " + history + ", " + visibility
}

// StartDevServer starts the embedded Temporal server with seckill's search
// attributes registered.
func StartDevServer(cfg Config, opts DevOptions) (*devserver.Server, error) {
	if err := validStore(opts.TemporalStore); err != nil {
		return nil, err
	}
	if err := portFree(cfg.DevTemporalPort, "SECKILL_DEV_TEMPORAL_PORT"); err != nil {
		return nil, err
	}
	if !opts.NoUI {
		if err := portFree(cfg.DevUIPort, "SECKILL_DEV_UI_PORT"); err != nil {
			return nil, err
		}
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range saga.SearchAttributeNames {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	uiPort := cfg.DevUIPort
	if opts.NoUI {
		uiPort = -1
	}
	var pg *devserver.Postgres
	if opts.DBFile == "" && opts.TemporalStore != StoreMemory {
		var err error
		if pg, err = devserver.PostgresFromURL(cfg.DatabaseURL); err != nil {
			return nil, err
		}
	}
	return devserver.Start(devserver.Config{
		Port: cfg.DevTemporalPort, UIPort: uiPort, DBFile: opts.DBFile, Postgres: pg,
		Namespace: cfg.Namespace, ExtraNamespaces: opts.ExtraNamespaces, SearchAttributes: attrs, LogLevel: opts.TemporalLogLevel,
		LogFile: opts.TemporalLogFile, PProfPort: cfg.DevPProfPort,
	})
}

// Dev runs the whole system in one process: the embedded Temporal server
// and UI, the database (created and migrated), the worker, the relay and
// the API. ready is called with the URLs once all of it answers. It
// returns when ctx is done and everything has stopped.
func Dev(ctx context.Context, cfg Config, opts DevOptions, ready func(DevInfo)) error {
	cfg.WithDevSecrets()
	cfg.DevTools = true
	cfg.TemporalAddress = opts.TemporalAddress
	uiURL := opts.TemporalUIURL
	step := newProgress(opts.Progress)
	// The logs of the start-up wait until its progress is shown (ready
	// has printed), so no log line lands between a step and its check
	// mark.
	releaseLogs := func() {}
	if opts.Progress != nil {
		cfg.Log, releaseLogs = holdLogs(cfg.Log)
		defer releaseLogs()
	}
	if err := validStore(opts.TemporalStore); err != nil {
		return err
	}
	// PostgreSQL first: seckill's database and, by default, Temporal's
	// state live there, and a wrong DATABASE_URL is best said at once.
	if err := migrate(ctx, cfg, step, "database ready"); err != nil {
		return err
	}
	// Then the other cheap things, before Temporal takes its seconds: the
	// API's port and Redis.
	ln, err := Listen(cfg.HTTPAddr, "SECKILL_HTTP_ADDR")
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }()
	if err := checkRedis(ctx, cfg, step); err != nil {
		return err
	}
	if cfg.BeaconLocal {
		// No internet needed: draws wait for rounds of seckill's own
		// development chain, served here (`seckill draw verify` names it).
		url, stop, err := serveDevBeacon()
		if err != nil {
			return err
		}
		defer stop()
		cfg.BeaconURLs, cfg.BeaconChain = []string{url}, beacon.Dev
	}
	if cfg.TemporalAddress == "" {
		// Its own server is on loopback, without TLS: settings for a
		// Temporal beyond loopback (like TEMPORAL_ADDRESS) are not its.
		if cfg.TemporalTLS.Enabled() {
			cfg.Log.Warn("seckill dev runs its own Temporal server on loopback, without TLS: TEMPORAL_TLS_* and TEMPORAL_API_KEY are ignored")
			cfg.TemporalTLS = TemporalTLS{}
		}
		done := step("starting the embedded Temporal server and its Web UI (" + temporalStoreName(cfg, opts) + ")")
		ts, err := StartDevServer(cfg, opts)
		if err != nil {
			return err
		}
		defer func() { _ = ts.Stop() }()
		cfg.TemporalAddress, uiURL = ts.Address(), ts.UIURL()
		done("Temporal at " + cfg.TemporalAddress)
	}

	d, err := Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	done := step("starting the worker, the outbox relay and the API")
	// The admin token of the demo sale and of DevInfo: a dev token under
	// the JWT secret, or with the shop's identity provider the provider's
	// own admin token (SECKILL_ADMIN_TOKEN), which a demo sale needs.
	token, err := cfg.AdminBearer("admin", 30*24*time.Hour)
	if err != nil && (opts.DemoSale || !cfg.UsesProvider()) {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return RunWorker(gctx, cfg, d) })
	g.Go(func() error { return RunAPI(gctx, cfg, d, ln) })
	g.Go(func() error {
		apiURL := "http://" + ln.Addr().String()
		if err := waitReady(gctx, apiURL+"/readyz"); err != nil {
			return err
		}
		done("API at " + apiURL)
		if opts.DemoSale {
			if err := openDemoSale(gctx, d, apiURL, token, step); err != nil {
				return err
			}
		}
		ready(DevInfo{
			APIURL: apiURL, UIURL: uiURL, TemporalAddress: cfg.TemporalAddress,
			AdminToken: token, WebhookSecret: string(cfg.WebhookSecret), RedisPrefix: d.Redis.Prefix(),
		})
		releaseLogs()
		return nil
	})
	return shutdownErr(ctx, g.Wait())
}

// openDemoSale creates DemoSaleSpec through the API, open from now for a
// day, unless a sale is open already.
func openDemoSale(ctx context.Context, d *Deps, apiURL, adminToken string, step func(string) func(string)) error {
	now := time.Now().UTC().Truncate(time.Second)
	open, err := d.Store.OpenSales(ctx, now)
	if err != nil {
		return err
	}
	if len(open) > 0 {
		return nil
	}
	done := step("opening a demo sale")
	spec := maps.Clone(DemoSaleSpec)
	spec["starts_at"], spec["ends_at"] = now.Format(time.RFC3339), now.Add(24*time.Hour).Format(time.RFC3339)
	body, _ := json.Marshal(spec)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, apiURL+"/api/v1/sales", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("open the demo sale: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var sale struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&sale) != nil {
		return fmt.Errorf("open the demo sale: %s", resp.Status)
	}
	done("demo sale " + sale.ID + " open for 24 h: 100 units, pay within 2 minutes")
	return nil
}

// portFree fails, naming setting, when port is taken on loopback.
func portFree(port int, setting string) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return listenError(addr, setting, err)
	}
	return ln.Close()
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := getOK(ctx, url); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready after 60s", url)
}

// checkRedis makes sure cfg's Redis answers, as one progress step.
func checkRedis(ctx context.Context, cfg Config, step func(string) func(string)) error {
	done := step("checking Redis at " + redact(cfg.RedisURL))
	r, err := OpenRedis(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.Ping(pctx); err != nil {
		return redisError(cfg.RedisURL, err)
	}
	done("Redis answers")
	return nil
}
