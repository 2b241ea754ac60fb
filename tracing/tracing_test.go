package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

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
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "")
			shutdown, err := tracing.Setup(context.Background(), os.Getenv, "seckill-test")
			require.NoError(t, err)
			t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_ = shutdown(ctx) // nothing listens: the flush may fail, the stop must return
		})
	}
	_, err := tracing.Setup(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}[k]
	}, "seckill-test")
	require.ErrorContains(t, err, "http/protobuf or grpc")
}
