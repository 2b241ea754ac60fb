package relay

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the relay's Prometheus metrics; nil until Register.
type metrics struct {
	started  prometheus.Counter
	failures prometheus.Counter
	lag      prometheus.Histogram
}

// Register adds the relay's metrics to reg:
//   - seckill_relay_started_total: sagas started (or found started);
//   - seckill_relay_start_errors_total: workflow starts that failed (each
//     is retried with the same workflow ID);
//   - seckill_relay_lag_seconds: from admission to the saga's start;
//   - seckill_relay_backlog: outbox entries not yet relayed, over the sales
//     being relayed, read from Redis at each scrape.
func (r *Relay) Register(reg prometheus.Registerer) error {
	m := &metrics{
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_relay_started_total", Help: "Order sagas the relay started (or found already started).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_relay_start_errors_total",
			Help: "Workflow starts of order sagas that failed (Temporal unreachable, refusing or timing out); each is retried with the same workflow ID.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_relay_lag_seconds",
			Help:    "Time from a claim's admission to its saga's start.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
	}
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_relay_backlog", Help: "Admitted claims in the Redis outboxes whose saga has not been started yet.",
	}, r.backlog)
	for _, c := range []prometheus.Collector{m.started, m.failures, m.lag, backlog} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	r.metrics = m
	return nil
}

// backlog sums the outbox lengths of the sales being relayed (-1 when
// Redis does not answer, so a dashboard shows the gap).
func (r *Relay) backlog() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sales, err := r.rstore.ActiveSales(ctx)
	if err != nil {
		return -1
	}
	n, err := r.rstore.OutboxBacklog(ctx, sales)
	if err != nil {
		return -1
	}
	return float64(n)
}

func (m *metrics) observeStart(admittedAt time.Time) {
	if m == nil {
		return
	}
	m.started.Inc()
	m.lag.Observe(time.Since(admittedAt).Seconds())
}

func (m *metrics) startFailed() {
	if m == nil {
		return
	}
	m.failures.Inc()
}
