package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/internal/proc"
	"github.com/seckill/seckill/store"
)

// LaunchOptions say how to start a system to benchmark.
type LaunchOptions struct {
	// Binary is the seckill binary (default: this executable); it runs
	// the Temporal dev server, so it must be the full build.
	Binary string
	// SlimBinary, when set, runs the API and the worker: the slim build
	// (-tags slim), which leaves the embedded server out and so most of
	// the memory. Production runs api and worker from it.
	SlimBinary string
	// Base is the configuration to start from (REDIS_URL, the server of
	// DATABASE_URL, tuning); Launch replaces the database name, the Redis
	// prefix, the addresses and the secrets with fresh ones.
	Base app.Config
	// Env is added to the children's environment (tuning variables);
	// WorkerEnv to the worker's only (after Env: it wins), e.g. the Go
	// runtime's GOMEMLIMIT.
	Env       []string
	WorkerEnv []string
	// Log receives the children's output.
	Log io.Writer
	// Keep leaves the database and the Redis keys in place after Stop.
	Keep bool
	// PProf serves Go's profiler from every child on a loopback port of
	// its own (System.PProf).
	PProf bool
	// TemporalStore is the Temporal dev server's --temporal-store
	// (postgres or memory) [postgres].
	TemporalStore string
}

// System is a running seckill of child processes: the Temporal dev
// server, the worker (with the relay) and the API, each separate so that
// each one's memory can be read.
type System struct {
	APIURL string
	Config app.Config
	// PProf is each child's profiler URL, with LaunchOptions.PProf.
	PProf map[string]string
	procs []*proc.Proc
	keep  bool
	// beacon is the development beacon the system's draws read their
	// rounds from, as `seckill dev` serves its own.
	beacon *httptest.Server
}

// Launch starts a fresh system on a new database and Redis prefix.
func Launch(ctx context.Context, o LaunchOptions) (*System, error) {
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Binary = exe
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	cfg := o.Base
	runID := strconv.FormatInt(time.Now().Unix(), 36)
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/seckill_bench_" + runID
	cfg.DatabaseURL = u.String()
	cfg.RedisPrefix = "seckill-bench-" + runID
	temporalPort, uiPort, apiPort := proc.FreePort(), proc.FreePort(), proc.FreePort()
	cfg.TemporalAddress = "127.0.0.1:" + strconv.Itoa(temporalPort)
	// The launched Temporal is a dev server on loopback, without TLS.
	cfg.TemporalTLS = app.TemporalTLS{}
	cfg.HTTPAddr = "127.0.0.1:" + strconv.Itoa(apiPort)
	cfg.JWTSecret, cfg.WebhookSecret = []byte(secret()), []byte("whsec_"+secret())

	devBeacon := httptest.NewServer(beacon.NewServer(beacon.DevSigner()))
	env := append([]string{
		"SECKILL_BEACON_URLS=" + devBeacon.URL, "SECKILL_BEACON_CHAIN=dev", // o.Env may name another
		"DATABASE_URL=" + cfg.DatabaseURL,
		"REDIS_URL=" + cfg.RedisURL,
		"SECKILL_REDIS_PREFIX=" + cfg.RedisPrefix,
		"TEMPORAL_ADDRESS=" + cfg.TemporalAddress,
		"TEMPORAL_NAMESPACE=" + cfg.Namespace,
		"TEMPORAL_TLS_CERT=", "TEMPORAL_TLS_KEY=", "TEMPORAL_TLS_CA=", "TEMPORAL_TLS_SERVER_NAME=", "TEMPORAL_API_KEY=",
		"SECKILL_DEV_TEMPORAL_PORT=" + strconv.Itoa(temporalPort),
		"SECKILL_DEV_UI_PORT=" + strconv.Itoa(uiPort),
		"SECKILL_HTTP_ADDR=" + cfg.HTTPAddr,
		"SECKILL_JWT_SECRET=" + string(cfg.JWTSecret),
		"SECKILL_WEBHOOK_SECRET=" + string(cfg.WebhookSecret),
		"SECKILL_LOG_LEVEL=warn",
	}, o.Env...)
	migrate := exec.CommandContext(ctx, o.Binary, "migrate")
	migrate.Env = append(os.Environ(), env...)
	migrate.Stdout, migrate.Stderr = o.Log, o.Log
	if err := migrate.Run(); err != nil {
		devBeacon.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	s := &System{APIURL: "http://" + cfg.HTTPAddr, Config: cfg, keep: o.Keep, PProf: map[string]string{}, beacon: devBeacon}
	for _, name := range []string{"temporal", "worker", "api"} {
		args := []string{name}
		if name == "temporal" {
			args = []string{"devserver"}
			if o.TemporalStore != "" {
				args = append(args, "--temporal-store", o.TemporalStore)
			}
		}
		childEnv := env
		if name == "worker" {
			childEnv = append(append([]string(nil), env...), o.WorkerEnv...)
		}
		if o.PProf {
			port := strconv.Itoa(proc.FreePort())
			key := "SECKILL_PPROF_ADDR=127.0.0.1:"
			if name == "temporal" {
				key = "SECKILL_DEV_PPROF_PORT="
			}
			childEnv = append(append([]string(nil), childEnv...), key+port)
			s.PProf[name] = "http://127.0.0.1:" + port + "/debug/pprof/"
		}
		bin := o.Binary
		if name != "temporal" && o.SlimBinary != "" {
			bin = o.SlimBinary
		}
		child := proc.New(name, o.Log, childEnv, append([]string{bin}, args...)...)
		if err := child.Start(); err != nil {
			s.Stop()
			return nil, err
		}
		s.procs = append(s.procs, child)
	}
	if err := proc.WaitHTTP(s.APIURL+"/readyz", 3*time.Minute); err != nil {
		s.Stop()
		return nil, fmt.Errorf("the system did not become ready (see its log): %w", err)
	}
	return s, nil
}

// Processes are the children's pids by name.
func (s *System) Processes() map[string]int {
	out := map[string]int{}
	for _, p := range s.procs {
		if pid := p.Pid(); pid != 0 {
			out[p.Name()] = pid
		}
	}
	return out
}

// Stop stops the children (the API first) and, unless kept, drops the
// database and the Redis keys.
func (s *System) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
	s.beacon.Close()
	if s.keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = store.DropDatabase(ctx, s.Config.DatabaseURL)
	if history, visibility, err := store.TemporalDatabaseURLs(s.Config.DatabaseURL); err == nil {
		_ = store.DropDatabase(ctx, history)
		_ = store.DropDatabase(ctx, visibility)
	}
	if r, err := app.OpenRedis(s.Config); err == nil {
		defer func() { _ = r.Close() }()
		_ = r.DropAll(ctx)
	}
}

func secret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}
