package app

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdkclient "go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// latencyBuckets (seconds) for the Temporal SDK's timers: OpenTelemetry's
// default buckets are made for milliseconds.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// temporalMetrics is a Temporal SDK metrics handler whose metrics land in
// reg, next to seckill's own: the SDK's client and worker metrics
// (temporal_request_total, temporal_workflow_task_schedule_to_start_latency_seconds,
// ...) and the saga's, which count through the workflow's replay-safe
// handler (seckill_saga_outcomes_total, seckill_saga_compensations_total).
func temporalMetrics(reg prometheus.Registerer, log *slog.Logger) (sdkclient.MetricsHandler, error) {
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("temporal metrics: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Unit: "s"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: latencyBuckets}},
		)),
	)
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(err error) { log.Warn("temporal metrics", "error", err) },
	}), nil
}
