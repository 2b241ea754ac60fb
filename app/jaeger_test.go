//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// jaegerBinary finds the all-in-one `make jaeger` installs.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SECKILL_JAEGER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("jaeger-all-in-one"); err == nil {
		return p
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	require.NoError(t, err)
	p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "jaeger-all-in-one")
	_, err = os.Stat(p)
	require.NoError(t, err, "Jaeger's all-in-one is missing: make jaeger installs it")
	return p
}

// startJaeger runs Jaeger's all-in-one with every listener on a private
// loopback port; it returns the OTLP/HTTP address and the query API's.
func startJaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	otlp, query = freeAddr(t), freeAddr(t)
	cmd := exec.Command(jaegerBinary(t),
		"--collector.otlp.http.host-port="+otlp,
		"--collector.otlp.grpc.host-port="+freeAddr(t),
		"--collector.http-server.host-port="+freeAddr(t),
		"--collector.grpc-server.host-port="+freeAddr(t),
		"--query.http-server.host-port="+query,
		"--query.grpc-server.host-port="+freeAddr(t),
		"--admin.http.host-port="+freeAddr(t),
	)
	log, err := os.CreateTemp(t.TempDir(), "jaeger-*.log")
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + query + "/api/services")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "Jaeger's query API never answered (log: %s)", log.Name())
	return otlp, query
}

// jaegerTrace is a trace as Jaeger's query API returns it.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
	} `json:"spans"`
}

func (j jaegerTrace) operations() []string {
	var ops []string
	for _, s := range j.Spans {
		ops = append(ops, s.OperationName)
	}
	slices.Sort(ops)
	return ops
}

// A paid order's trace, exported over OTLP to a real Jaeger and read back
// through its query API: one trace from the claim's request to
// ConfirmPayment, with the Redis, relay, Temporal and SQL spans between.
func TestTracing_APaidOrderReadBackFromJaeger(t *testing.T) {
	otlpAddr, query := startJaeger(t)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(otlpAddr), otlptracehttp.WithInsecure())
	require.NoError(t, err)
	const service = "seckill-jaeger-test"
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service))))
	installTracing(t, tp)
	tracedClaimPaid(t, "jaeger-buyer", nil)

	var found jaegerTrace
	require.Eventually(t, func() bool {
		require.NoError(t, tp.ForceFlush(context.Background()))
		resp, err := http.Get("http://" + query + "/api/traces?service=" + service + "&operation=" + "%2Fapi%2Fv1%2Fsales%2F%3Aid%2Fclaims&limit=20")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		var body struct{ Data []jaegerTrace }
		if json.NewDecoder(resp.Body).Decode(&body) != nil {
			return false
		}
		for _, tr := range body.Data {
			if slices.Contains(tr.operations(), "RunActivity:ConfirmPayment") {
				found = tr
				return true
			}
		}
		return false
	}, 60*time.Second, 250*time.Millisecond, "the order's trace never reached Jaeger with its ConfirmPayment")
	t.Logf("trace %s in Jaeger: %v", found.TraceID, found.operations())
	for _, op := range []string{"/api/v1/sales/:id/claims", "evalsha", "relay: start OrderSaga", "StartWorkflow:OrderSaga",
		"RunWorkflow:OrderSaga", "RunActivity:StartOrder", "RunActivity:ConfirmPayment", "UPDATE", "INSERT"} {
		require.Contains(t, found.operations(), op)
	}
	for _, sp := range found.Spans {
		for _, ref := range sp.References {
			require.Equal(t, found.TraceID, ref.TraceID, "%s: every parent in the one trace", sp.OperationName)
		}
	}
}
