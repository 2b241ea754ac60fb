package bench_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// The yardstick answers a claim as the API does, by status and code, from
// the admission script alone: winners 202 with their order, the rest 409
// SOLD_OUT, a winner again 409 ALREADY_CLAIMED (unless an Idempotency-Key
// makes it the first answer again); a token it cannot verify
// 401, any other path 404.
func TestYardstick_AnswersClaimsFromTheScript(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	secret := []byte("yardstick-test-secret")
	cfg := app.Config{RedisURL: testenv.RedisURL(), RedisPrefix: prefix, JWTSecret: secret}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- bench.ServeYardstick(ctx, cfg, ln, bench.YardstickTerms(time.Minute)) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})

	now := time.Now()
	_, err = redisstore.New(rdb, prefix).Warm(context.Background(), seckill.WarmSpec{SaleID: 7,
		Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 2}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
	require.NoError(t, err)

	base := "http://" + ln.Addr().String()
	claim := func(path, user string, key ...string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, base+path, nil)
		require.NoError(t, err)
		if len(key) > 0 {
			req.Header.Set("Idempotency-Key", key[0])
		}
		if user != "" {
			tok, err := auth.SignToken(secret, user, false, time.Hour)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(b, &body), "%s", b)
		return resp.StatusCode, body
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)

	status, first := claim("/api/v1/sales/7/claims", "alice")
	require.Equal(t, http.StatusAccepted, status)
	require.NotEmpty(t, first["order_id"])
	status, _ = claim("/api/v1/sales/7/claims", "bob")
	require.Equal(t, http.StatusAccepted, status)
	status, body := claim("/api/v1/sales/7/claims", "carol")
	require.Equal(t, []any{http.StatusConflict, string(seckill.CodeSoldOut)}, []any{status, body["code"]})
	status, body = claim("/api/v1/sales/7/claims", "alice")
	require.Equal(t, []any{http.StatusConflict, string(seckill.CodeAlreadyClaimed)}, []any{status, body["code"]})

	// The key reaches the script: the same key again is the first answer
	// again, not ALREADY_CLAIMED.
	_, err = redisstore.New(rdb, prefix).Warm(context.Background(), seckill.WarmSpec{SaleID: 9,
		Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: 1}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
	require.NoError(t, err)
	status, first = claim("/api/v1/sales/9/claims", "erin", "key-1")
	require.Equal(t, http.StatusAccepted, status)
	status, again := claim("/api/v1/sales/9/claims", "erin", "key-1")
	require.Equal(t, []any{http.StatusAccepted, first["order_id"]}, []any{status, again["order_id"]})

	status, body = claim("/api/v1/sales/7/claims", "")
	require.Equal(t, []any{http.StatusUnauthorized, string(seckill.CodeUnauthenticated)}, []any{status, body["code"]})
	status, _ = claim("/api/v1/sales/seven/claims", "alice")
	require.Equal(t, http.StatusNotFound, status)
	status, body = claim("/api/v1/sales/8/claims", "alice")
	require.Equal(t, []any{http.StatusServiceUnavailable, string(seckill.CodeUnavailable)}, []any{status, body["code"]},
		"a sale it never warmed is refused closed, as the API refuses one whose stock is not loaded")
}

// A yardstick comparison in which either side answered anything but a
// claim's 202 or 409 gives no ratio and fails the run: a yardstick that
// refuses every token (401) must not read as a fast one.
func TestYardstickRatio_UnexpectedAnswersGiveNoRatioAndFailTheRun(t *testing.T) {
	medians := map[string]float64{"api p50": 1, "api p99": 2, "api per_second": 900, "api script": 900,
		"yardstick p50": 1, "yardstick p99": 2, "yardstick per_second": 1000, "yardstick script": 1000}
	clean := &bench.Report{YardstickRatio: &bench.YardstickRatio{Median: medians, Unexpected: map[string]int{}}}
	clean.ComputeRatios()
	require.InDelta(t, 0.9, clean.Ratios["claims_throughput_vs_yardstick"], 1e-9)
	require.InDelta(t, 1.0, clean.Ratios["claims_p99_vs_yardstick"], 1e-9)
	require.True(t, clean.OK())

	bad := &bench.Report{YardstickRatio: &bench.YardstickRatio{Median: medians, Unexpected: map[string]int{"yardstick": 1}}}
	bad.ComputeRatios()
	for k := range bad.Ratios {
		require.NotContains(t, k, "yardstick", "a ratio of a comparison with unexpected answers")
	}
	require.False(t, bad.OK())
}
