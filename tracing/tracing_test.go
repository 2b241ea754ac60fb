package tracing_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/seckill/seckill/tracing"
)

func TestEnabled_OnlyWithAnEndpoint(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	require.False(t, tracing.Enabled(env(nil)))
	require.True(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})))
	require.True(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})))
	require.False(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})))
}

// A span travels as a traceparent (what an outbox entry holds) and comes
// back as the same trace; no span, no traceparent.
func TestTraceParent_RoundTrip(t *testing.T) {
	require.Empty(t, tracing.TraceParent(context.Background()))
	require.Equal(t, context.Background(), tracing.WithTraceParent(context.Background(), ""))

	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("t").Start(context.Background(), "claim")
	defer span.End()
	parent := tracing.TraceParent(ctx)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, parent)
	_, child := tp.Tracer("t").Start(tracing.WithTraceParent(context.Background(), parent), "relay")
	defer child.End()
	require.Equal(t, span.SpanContext().TraceID(), child.SpanContext().TraceID())

	// A line logged in a span carries its ids; one logged without, none.
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	log.InfoContext(ctx, "in a span")
	require.Contains(t, buf.String(), `"trace_id":"`+span.SpanContext().TraceID().String()+`"`)
	require.Contains(t, buf.String(), `"span_id":"`+span.SpanContext().SpanID().String()+`"`)
	buf.Reset()
	log.Info("no span")
	require.NotContains(t, buf.String(), "trace_id")
}

// An activity's log lines (activity.GetLogger, Temporal's logger) carry the
// activity's span as trace_id and span_id, as the API's lines do.
func TestTemporalInterceptor_ActivityLogsCarryTheTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracing.Install(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		_ = tp.Shutdown(context.Background())
	})
	ti, err := tracing.TemporalInterceptor()
	require.NoError(t, err)

	var buf bytes.Buffer
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{ti}})
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		activity.GetLogger(ctx).Info("in an activity")
		return nil
	}, activity.RegisterOptions{Name: "Logs"})
	_, err = env.ExecuteActivity("Logs")
	require.NoError(t, err)

	spans := exp.GetSpans()
	require.Len(t, spans, 1, "the activity's span")
	sc := spans[0].SpanContext
	var line string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "in an activity") {
			line = l
		}
	}
	require.Contains(t, line, `"trace_id":"`+sc.TraceID().String()+`"`, buf.String())
	require.Contains(t, line, `"span_id":"`+sc.SpanID().String()+`"`)
}

// Setup builds a working tracer provider from the OTEL_* variables (no
// collector needs to answer: the exporter connects when it exports).
// It once failed on every start, merging two schema URLs.
func TestSetup_FromTheEnvironment(t *testing.T) {
	for _, protocol := range []string{"", "http/protobuf", "grpc"} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			var rec otlpReceiver
			endpoint := rec.serveHTTP(t)
			if protocol == "grpc" {
				endpoint = rec.serveGRPC(t)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "")
			shutdown, err := tracing.Setup(context.Background(), os.Getenv, "seckill-test")
			require.NoError(t, err)
			t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
			_, span := otel.Tracer("test").Start(context.Background(), "a claim")
			span.End()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, shutdown(ctx), "the stop flushes the span")

			require.Equal(t, []string{"seckill-test: a claim"}, rec.got(), "the span reached the endpoint the environment names, over its protocol, as the service named")
		})
	}
	_, err := tracing.Setup(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}[k]
	}, "seckill-test")
	require.ErrorContains(t, err, "http/protobuf or grpc")
}

// otlpReceiver is an OTLP trace endpoint on loopback, over HTTP
// (protobuf) or gRPC, that keeps "<service.name>: <span name>" of each
// span it is sent.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []string
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, service+": "+sp.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

func (r *otlpReceiver) serveHTTP(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var export coltracepb.ExportTraceServiceRequest
		if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &export) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		resp, _ := r.Export(req.Context(), &export)
		b, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (r *otlpReceiver) serveGRPC(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String()
}
