package api

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	claims       *prometheus.CounterVec
	claimSeconds prometheus.Histogram
	webhooks     *prometheus.CounterVec
	signalErrors prometheus.Counter
	streams      prometheus.Gauge
	joins        *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_claims_total", Help: "Claims answered, by outcome.",
		}, []string{"outcome"}),
		claimSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_claim_duration_seconds",
			Help:    "Time to answer a claim.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, 1},
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_payment_events_total", Help: "Payment webhook events, by outcome.",
		}, []string{"outcome"}),
		signalErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_payment_signal_errors_total",
			Help: "Payment events the webhook could not hand to Temporal (the signal to the order's saga, or the start of its refund); each stays recorded, is answered 200 RECEIVED and is delivered by reconciliation.",
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_order_streams", Help: "Open order event streams (GET /orders/{id}/events).",
		}),
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitlist_joins_total", Help: "Waitlist joins answered, by status or error code.",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.claims, m.claimSeconds, m.webhooks, m.signalErrors, m.streams, m.joins)
	return m
}
