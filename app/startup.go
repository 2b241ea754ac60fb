package app

import (
	"fmt"
	"io"
	"net/url"
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
