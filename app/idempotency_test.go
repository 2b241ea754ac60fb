//go:build !slim

package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
)

// TestClaim_IdempotencyKeyReplaysAcrossAPIRestart: the same user sending the
// same Idempotency-Key gets the first answer byte for byte, also from a new
// API process.
func TestClaim_IdempotencyKeyReplaysAcrossAPIRestart(t *testing.T) {
	cfg := testConfig(t)

	// startAPI runs one API "process" with connections of its own.
	startAPI := func() (string, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		d, err := app.Connect(ctx, cfg)
		require.NoError(t, err)
		ln, err := app.Listen("127.0.0.1:0", "SECKILL_HTTP_ADDR")
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- app.RunAPI(ctx, cfg, d, ln) }()
		base := "http://" + ln.Addr().String()
		require.Eventually(t, func() bool { return getStatus(base+"/healthz") == 200 }, 10*time.Second, 20*time.Millisecond)
		return base, func() {
			cancel()
			require.NoError(t, ignoreClosed(<-done))
			d.Close()
		}
	}
	admin, _ := auth.SignToken(cfg.JWTSecret, "admin", true, time.Hour)
	alice, _ := auth.SignToken(cfg.JWTSecret, "alice", false, time.Hour)
	client := checkedClient(t, 30*time.Second, nil)
	post := func(base, path, token, key, body string) (int, http.Header, string) {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(b)
	}

	base, stop := startAPI()
	now := time.Now().UTC()
	status, _, body := post(base, "/api/v1/sales", admin, "", `{"name":"idem","price_cents":100,"stock":1,"starts_at":"`+
		now.Add(-time.Minute).Format(time.RFC3339)+`","ends_at":"`+now.Add(time.Hour).Format(time.RFC3339)+`"}`)
	require.Equal(t, 201, status, body)
	claims := "/api/v1/sales/1/claims"

	// Invalid keys are refused before anything happens.
	for _, bad := range []string{strings.Repeat("k", 256), "tab\tkey", "ünïcode"} {
		status, _, body = post(base, claims, alice, bad, "")
		require.Equal(t, 400, status, "key %q: %s", bad, body)
		require.Contains(t, body, `"code":"INVALID_REQUEST"`)
		require.Contains(t, body, "Idempotency-Key")
	}

	status, hdr, first := post(base, claims, alice, "order-attempt-1", "")
	require.Equal(t, 202, status, first)
	location := hdr.Get("Location")
	status, hdr, again := post(base, claims, alice, "order-attempt-1", "")
	require.Equal(t, 202, status)
	require.Equal(t, first, again)
	require.Equal(t, location, hdr.Get("Location"))
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	stop()

	// A new API process answers the same.
	base, stop = startAPI()
	defer stop()
	status, hdr, afterRestart := post(base, claims, alice, "order-attempt-1", "")
	require.Equal(t, 202, status)
	require.Equal(t, first, afterRestart)
	require.Equal(t, location, hdr.Get("Location"))
	// Another key from the same user is a new request.
	status, _, body = post(base, claims, alice, "order-attempt-2", "")
	require.Equal(t, 409, status, body)
	require.Contains(t, body, `"code":"ALREADY_CLAIMED"`)
}

func getStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
