package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/tracing"
)

// BenchmarkClaim is the claim path in-process (Fiber, auth, the admission
// script on the real Redis, every claim a winner) with tracing off (as
// before tracing existed: nothing installed, nothing instrumented) and on,
// sampling 1% and 100% of claims into a discarding exporter:
//
//	go test ./api -run '^$' -bench Claim -benchtime 20000x -count 5
func BenchmarkClaim(b *testing.B) {
	for _, mode := range []struct {
		name  string
		on    bool
		ratio float64
	}{{"tracing=off", false, 0}, {"tracing=1%", true, 0.01}, {"tracing=100%", true, 1}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(mode.ratio))))
				tracing.Install(tp)
				defer func() {
					otel.SetTracerProvider(noop.NewTracerProvider())
					_ = tp.Shutdown(context.Background())
				}()
			}
			benchClaims(b, mode.on, "")
		})
	}
}

// BenchmarkClaimBody is the claim path with and without a body naming the
// variant and the quantity (docs/API.md v4), in the same run, tracing off:
// the body costs a JSON decode and two more script arguments:
//
//	go test ./api -run '^$' -bench ClaimBody -benchtime 20000x -count 5
func BenchmarkClaimBody(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"body=none", ""},
		{"body=sku+quantity", `{"sku":"default","quantity":1}`},
	} {
		b.Run(c.name, func(b *testing.B) { benchClaims(b, false, c.body) })
	}
}

// benchClaims creates a sale of b.N+1 units and times b.N winning claims,
// each sending body.
func benchClaims(b *testing.B, tracingOn bool, body string) {
	st, _ := testenv.Store(b)
	_, prefix := testenv.Redis(b)
	rs, err := redisstore.Open(testenv.RedisURL(), prefix, redisstore.Options{PoolSize: 16, Tracing: tracingOn})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rs.Close() }()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(context.Background(), rs.IDNodes(), log)
	if err != nil {
		b.Fatal(err)
	}
	secret := []byte("bench-secret")
	srv := api.New(api.Config{Store: st, Redis: rs, IDs: ids, Log: log, JWTSecret: secret,
		Sagas: &fakeSagas{}, Delivery: &fakeDelivery{}, Tracing: tracingOn})
	admin, _ := auth.SignToken(secret, "admin", true, time.Hour)
	now := time.Now().UTC()
	saleBody := `{"name":"bench","price_cents":990,"stock":` + strconv.Itoa(b.N+1) + `,"payment_timeout_seconds":600,"starts_at":"` +
		now.Add(-time.Minute).Format(time.RFC3339) + `","ends_at":"` + now.Add(time.Hour).Format(time.RFC3339) + `"}`
	req := httptest.NewRequest("POST", "/api/v1/sales", strings.NewReader(saleBody))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.App().Test(req, -1)
	if err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("create sale: %v %v", err, resp)
	}
	var sale struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&sale)
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i], _ = auth.SignToken(secret, "buyer-"+strconv.Itoa(i), false, time.Hour)
	}
	path := "/api/v1/sales/" + sale.ID + "/claims"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tokens[i])
		resp, err := srv.App().Test(req, -1)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			b.Fatalf("claim %d: %v %v", i, err, resp)
		}
	}
}
