package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
