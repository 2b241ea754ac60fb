// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// variables (docs/API.md "Tracing") and carries a trace from one process
// to another where no library does it for seckill: through the outbox
// entry of an admission, from the claim's request to the relay's start of
// the order's saga. It also gives Temporal's tracing interceptor loggers
// that name the span as the rest of seckill's log lines do. Unset, nothing
// is installed: the global tracer provider stays OpenTelemetry's no-op one
// and no library is instrumented, so tracing costs nothing.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
)

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_SDK_DISABLED is not true.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs a tracer provider exporting over OTLP as the OTEL_*
// variables say (protocol http/protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL
// or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL says grpc; sampler from
// OTEL_TRACES_SAMPLER; service name from OTEL_SERVICE_NAME, else service)
// and the W3C trace-context propagator. The returned function flushes and
// stops it.
func Setup(ctx context.Context, getenv func(string) string, service string) (func(context.Context) error, error) {
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: seckill exports traces over http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(),
		// Schemaless: the SDK's default resource carries the SDK's own
		// semantic-conventions schema, and merging two different schema
		// URLs is an error.
		resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, err
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return tp.Shutdown, nil
}

// Install makes tp the global tracer provider, with the W3C trace-context
// propagator (tests install one with an in-memory exporter).
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
}

// Tracer is seckill's own tracer, for the spans no library makes.
func Tracer() trace.Tracer { return otel.Tracer("github.com/seckill/seckill") }

// TraceParent is ctx's span as a W3C traceparent value, "" without a
// sampled or valid span (tracing off): what an outbox entry carries.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// WithTraceParent is ctx carrying the remote span named by a traceparent
// value ("" or malformed: ctx as it is).
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// LogHandler adds trace_id and span_id to every record logged with a
// context that holds a span.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(attrs)}
}

func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }

// TemporalInterceptor is the Temporal SDK's OpenTelemetry interceptor for
// a client and the workers built on it: starts and signals carry the
// caller's span in the workflow's headers, and workflows and activities
// continue it. Its loggers (workflow.GetLogger, activity.GetLogger) add
// trace_id and span_id as the rest of seckill's log lines do.
func TemporalInterceptor() (interceptor.Interceptor, error) {
	t, err := temporalotel.NewTracer(temporalotel.TracerOptions{})
	if err != nil {
		return nil, err
	}
	return interceptor.NewTracingInterceptor(temporalTracer{t}), nil
}

type temporalTracer struct{ interceptor.Tracer }

func (t temporalTracer) GetLogger(logger log.Logger, ref interceptor.TracerSpanRef) log.Logger {
	span, ok := ref.(interface{ SpanContext() trace.SpanContext })
	if !ok || !span.SpanContext().IsValid() {
		return logger
	}
	sc := span.SpanContext()
	return log.With(logger, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
}
