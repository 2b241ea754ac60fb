package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Start-up errors say what failed and how to fix it, naming the setting.

func redisError(redisURL string, err error) error {
	return fmt.Errorf("Redis not reachable at %s: start it (make services, or docker compose up -d redis) or set REDIS_URL: %w", redact(redisURL), err)
}

func postgresError(dsn string, err error) error {
	return fmt.Errorf("PostgreSQL not usable at %s: start it (make services, or docker compose up -d postgres), or fix DATABASE_URL: %w", redact(dsn), err)
}

func temporalError(addr string, err error) error {
	return fmt.Errorf("Temporal not reachable at %s: start it (seckill devserver, or docker compose up -d temporal), or set TEMPORAL_ADDRESS; `seckill dev` runs its own: %w", addr, err)
}

// temporalDialError is temporalError, or when TLS is what failed, the
// settings to check.
func temporalDialError(cfg Config, err error) error {
	msg := err.Error()
	switch {
	case cfg.TemporalTLS.Enabled() && (strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") || strings.Contains(msg, "authentication handshake failed")):
		return fmt.Errorf("Temporal at %s: the TLS handshake failed: check TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (a client certificate the server trusts), TEMPORAL_TLS_CA (the CA of the server's certificate) and TEMPORAL_TLS_SERVER_NAME (a name in the server's certificate): %w", cfg.TemporalAddress, err)
	case cfg.TemporalTLS.Enabled() && (strings.Contains(msg, "broken pipe") || strings.Contains(msg, "connection reset by peer")):
		// Under TLS 1.3 the client's side of the handshake completes
		// before the server checks the client's certificate: a server
		// refusing it closes the connection, and the client sees its
		// first write fail rather than the server's alert.
		return fmt.Errorf("Temporal at %s: the TLS handshake failed, or the server closed the connection right after it (as a server refusing the client certificate does under TLS 1.3): check TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (a client certificate the server trusts), TEMPORAL_TLS_CA and TEMPORAL_TLS_SERVER_NAME: %w", cfg.TemporalAddress, err)
	case !cfg.TemporalTLS.Enabled() && (strings.Contains(msg, "server preface") || strings.Contains(msg, "tls:")):
		return fmt.Errorf("Temporal at %s did not answer in plaintext: if it requires TLS, set TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY, or TEMPORAL_API_KEY (docs/OPERATIONS.md, Temporal beyond loopback); or check TEMPORAL_ADDRESS: %w", cfg.TemporalAddress, err)
	}
	return temporalError(cfg.TemporalAddress, err)
}

func listenError(addr, setting string, err error) error {
	return fmt.Errorf("cannot listen on %s (another process there?): stop it or set %s to a free address: %w", addr, setting, err)
}

// redact hides a URL's password, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// newProgress returns step: step(what) prints "what ..." and returns
// done(result), which prints the result and the time taken. Silent when w
// is nil.
func newProgress(w io.Writer) func(string) func(string) {
	return func(what string) func(string) {
		if w == nil {
			return func(string) {}
		}
		start := time.Now()
		fmt.Fprintf(w, "• %s ...\n", what)
		return func(result string) {
			fmt.Fprintf(w, "  ✓ %s (%.1fs)\n", result, time.Since(start).Seconds())
		}
	}
}

// holdLogs returns log with its records held back until release is
// called, then written in order, and the release function (safe to call
// more than once). `seckill dev` holds the logs of its start-up so they do
// not land between a progress step and its check mark; a start-up that
// fails releases them too, so its warnings are seen. Past maxHeldLogs
// records, the held ones are written and the rest pass at once.
func holdLogs(log *slog.Logger) (*slog.Logger, func()) {
	if log == nil {
		return nil, func() {}
	}
	h := &heldLogs{}
	return slog.New(&holdHandler{inner: log.Handler(), held: h}), h.release
}

const maxHeldLogs = 10_000

type heldLogs struct {
	released atomic.Bool
	mu       sync.Mutex
	records  []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

func (h *heldLogs) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushLocked()
}

func (h *heldLogs) flushLocked() {
	for _, rec := range h.records {
		_ = rec.h.Handle(context.Background(), rec.r)
	}
	h.records = nil
	h.released.Store(true)
}

// holdHandler passes records to inner once its heldLogs are released.
type holdHandler struct {
	inner slog.Handler
	held  *heldLogs
}

func (h *holdHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *holdHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.held.released.Load() {
		h.held.mu.Lock()
		if !h.held.released.Load() {
			if len(h.held.records) < maxHeldLogs {
				h.held.records = append(h.held.records, heldRecord{h: h.inner, r: r.Clone()})
				h.held.mu.Unlock()
				return nil
			}
			h.held.flushLocked()
		}
		h.held.mu.Unlock()
	}
	return h.inner.Handle(ctx, r)
}

func (h *holdHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &holdHandler{inner: h.inner.WithAttrs(attrs), held: h.held}
}

func (h *holdHandler) WithGroup(name string) slog.Handler {
	return &holdHandler{inner: h.inner.WithGroup(name), held: h.held}
}
