//go:build !slim

// Dev mode links the embedded Temporal server and its Web UI; the slim
// build (-tags slim) of api and worker leaves them out.

package app

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/store"
)

// DevInfo is what `seckill dev` prints once everything runs.
type DevInfo struct {
	APIURL          string
	UIURL           string
	TemporalAddress string
	AdminToken      string
	WebhookSecret   string
}

// DevOptions adjust dev mode (tests use free ports and no UI).
type DevOptions struct {
	// DBFile persists Temporal's state; empty keeps it in memory.
	DBFile string
	// NoUI skips the Temporal Web UI.
	NoUI bool
	// TemporalLogLevel of the embedded server (debug, info, warn, error,
	// fatal) [error].
	TemporalLogLevel string
	// ExtraNamespaces are created on the embedded server too.
	ExtraNamespaces []string
	// TemporalAddress, when set, is a running Temporal server to use
	// instead of starting one (TemporalUIURL is then its Web UI, if any).
	TemporalAddress string
	TemporalUIURL   string
}

// StartDevServer starts the embedded Temporal server with seckill's search
// attributes registered.
func StartDevServer(cfg Config, opts DevOptions) (*devserver.Server, error) {
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range seckill.SearchAttributeNames {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	uiPort := cfg.DevUIPort
	if opts.NoUI {
		uiPort = -1
	}
	return devserver.Start(devserver.Config{
		Port: cfg.DevTemporalPort, UIPort: uiPort, DBFile: opts.DBFile,
		Namespace: cfg.Namespace, ExtraNamespaces: opts.ExtraNamespaces, SearchAttributes: attrs, LogLevel: opts.TemporalLogLevel,
		PProfPort: cfg.DevPProfPort,
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
	if cfg.TemporalAddress == "" {
		ts, err := StartDevServer(cfg, opts)
		if err != nil {
			return err
		}
		defer func() { _ = ts.Stop() }()
		cfg.TemporalAddress, uiURL = ts.Address(), ts.UIURL()
	}

	if err := store.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	d, err := Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Store.Migrate(ctx); err != nil {
		return err
	}
	ln, err := Listen(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	token, err := api.SignToken(cfg.JWTSecret, "admin", true, 30*24*time.Hour)
	if err != nil {
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
		ready(DevInfo{
			APIURL: apiURL, UIURL: uiURL, TemporalAddress: cfg.TemporalAddress,
			AdminToken: token, WebhookSecret: string(cfg.WebhookSecret),
		})
		return nil
	})
	return ignoreCanceled(g.Wait())
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
