// Package opsmetrics exports the gauges seckill's alerts
// (deploy/prometheus/alerts.yml, docs/runbook.md) are built on: what
// waits too long, read from Redis and PostgreSQL at each scrape of the
// worker's metrics.
//
//   - seckill_outbox_oldest_age_seconds{sale}: how long the oldest
//     admitted claim in the sale's outbox has waited for its saga (0:
//     none waits);
//   - seckill_orders_payment_overdue and
//     seckill_orders_payment_overdue_seconds: AWAITING_PAYMENT orders more
//     than a minute past their deadline (pay_by, plus
//     seckill.OwnPaymentWait for an order with a payment object), and how
//     far past it the most overdue one is;
//   - seckill_refunds_pending and seckill_refunds_pending_oldest_seconds;
//   - seckill_payment_events_undelivered{order} and
//     seckill_payment_events_undelivered_oldest_seconds{order}: payment
//     events recorded and never delivered to a saga, order="written" when
//     their order has a row, "unwritten" when it has none (yet);
//   - seckill_redis_replicas and seckill_redis_min_replicas: the replicas
//     the Redis primary has connected (the fewest over a Cluster's
//     primaries), and SECKILL_REDIS_MIN_REPLICAS;
//   - seckill_sale_stranded_units{sale}: units of a live sale neither in
//     Redis' stock, nor held by an order (claimed and not closed, or
//     written and not closed: awaiting payment or sold);
//   - seckill_health_scrape_ok{check}: 0 when one check's read failed or
//     timed out (its gauges are then missing from the scrape).
//
// Every worker replica exports the same values: alerts take max() or
// min() over them.
package opsmetrics

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// The checks, as seckill_health_scrape_ok's check label names them.
const (
	CheckOutbox        = "outbox"
	CheckOrders        = "orders"
	CheckRefunds       = "refunds"
	CheckPayments      = "payments"
	CheckRedisReplicas = "redis_replicas"
	CheckStranded      = "stranded_units"
)

// Checks lists every check.
var Checks = []string{CheckOutbox, CheckOrders, CheckRefunds, CheckPayments, CheckRedisReplicas, CheckStranded}

// Options tune the collector. Zero values take the defaults in brackets.
type Options struct {
	// Timeout bounds each check's reads at a scrape [2s].
	Timeout time.Duration
	// OverdueGrace is how far past its deadline an order awaiting payment
	// must be to count in seckill_orders_payment_overdue [1m].
	OverdueGrace time.Duration
	// MoveGrace is how long units may be in flight between the segments
	// of a sale before they count as stranded (reconciliation lands them
	// past its grace) [1m].
	MoveGrace time.Duration
	// StrandedEvery is how often the stranded units are counted; scrapes
	// in between export the last count. The count reads every claim of
	// every live sale, so it is not repeated at every scrape [30s].
	StrandedEvery time.Duration
	// Log receives a warning when a check fails, at most once a minute
	// per check; nil logs nothing.
	Log *slog.Logger
}

// Collector is the prometheus.Collector of the health gauges.
type Collector struct {
	store *store.Store
	redis *redisstore.Store
	opts  Options

	outboxAge, overdue, overdueAge, refunds, refundAge *prometheus.Desc
	undelivered, undeliveredAge, replicas, minReplicas *prometheus.Desc
	stranded, ok                                       *prometheus.Desc

	logMu  sync.Mutex
	logged map[string]time.Time // check -> when its last failure was logged

	mu         sync.Mutex
	strandedAt time.Time       // when strandedBy was counted (zero: never)
	strandedBy map[int64]int64 // sale -> stranded units
}

// New returns the collector reading st and rs.
func New(st *store.Store, rs *redisstore.Store, opts Options) *Collector {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.OverdueGrace <= 0 {
		opts.OverdueGrace = time.Minute
	}
	if opts.MoveGrace <= 0 {
		opts.MoveGrace = time.Minute
	}
	if opts.StrandedEvery <= 0 {
		opts.StrandedEvery = 30 * time.Second
	}
	return &Collector{
		store: st, redis: rs, opts: opts, logged: map[string]time.Time{},
		outboxAge: prometheus.NewDesc("seckill_outbox_oldest_age_seconds",
			"How long the oldest admitted claim in the sale's Redis outbox has waited for its saga (0: none waits).", []string{"sale"}, nil),
		overdue: prometheus.NewDesc("seckill_orders_payment_overdue",
			"AWAITING_PAYMENT orders more than a minute past their deadline (pay_by, plus OwnPaymentWait with a payment object).", nil, nil),
		overdueAge: prometheus.NewDesc("seckill_orders_payment_overdue_seconds",
			"How far past its deadline the most overdue AWAITING_PAYMENT order is (0: none is past).", nil, nil),
		refunds: prometheus.NewDesc("seckill_refunds_pending",
			"Refunds started and not yet confirmed by the payment provider.", nil, nil),
		refundAge: prometheus.NewDesc("seckill_refunds_pending_oldest_seconds",
			"How long ago the oldest PENDING refund was started (0: none is pending).", nil, nil),
		undelivered: prometheus.NewDesc("seckill_payment_events_undelivered",
			"Payment events recorded and never delivered to their order's saga, by whether the order has a row (written) or not (unwritten).", []string{"order"}, nil),
		undeliveredAge: prometheus.NewDesc("seckill_payment_events_undelivered_oldest_seconds",
			"How long ago the oldest undelivered payment event was received (0: none).", []string{"order"}, nil),
		replicas: prometheus.NewDesc("seckill_redis_replicas",
			"Replicas the Redis primary has connected (INFO replication; on a Cluster the fewest of any primary).", nil, nil),
		minReplicas: prometheus.NewDesc("seckill_redis_min_replicas",
			"Replicas every admission must reach (SECKILL_REDIS_MIN_REPLICAS, resolved).", nil, nil),
		stranded: prometheus.NewDesc("seckill_sale_stranded_units",
			"Units of a live sale neither in Redis' stock nor held by an order (claimed or written, and not closed); negative: Redis holds more than the database.", []string{"sale"}, nil),
		ok: prometheus.NewDesc("seckill_health_scrape_ok",
			"1 when the check's gauges could be read at this scrape, 0 when Redis or the database failed or timed out.", []string{"check"}, nil),
	}
}

// Register adds the collector to reg.
func (c *Collector) Register(reg prometheus.Registerer) error { return reg.Register(c) }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.outboxAge, c.overdue, c.overdueAge, c.refunds, c.refundAge,
		c.undelivered, c.undeliveredAge, c.replicas, c.minReplicas, c.stranded, c.ok} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the checks run at once, each
// within Options.Timeout.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	checks := map[string]func(context.Context) ([]prometheus.Metric, error){
		CheckOutbox:        c.outbox,
		CheckOrders:        c.orders,
		CheckRefunds:       c.pendingRefunds,
		CheckPayments:      c.payments,
		CheckRedisReplicas: c.redisReplicas,
		CheckStranded:      c.strandedUnits,
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, name := range Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
			defer cancel()
			ms, err := checks[name](ctx)
			ok := 1.0
			if err != nil {
				ok, ms = 0, nil
				c.warn(name, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				ch <- m
			}
			ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, ok, name)
		}()
	}
	wg.Wait()
}

// warn logs check's failure, unless it was logged within the minute.
func (c *Collector) warn(check string, err error) {
	if c.opts.Log == nil {
		return
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if time.Since(c.logged[check]) < time.Minute {
		return
	}
	c.logged[check] = time.Now()
	c.opts.Log.Warn("health metrics: check failed; its gauges are missing from the scrape", "check", check, "error", err)
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func sale(id int64) string { return strconv.FormatInt(id, 10) }

// outbox: the oldest admission waiting in each live sale's outbox.
func (c *Collector) outbox(ctx context.Context) ([]prometheus.Metric, error) {
	sales, err := c.redis.ActiveSales(ctx)
	if err != nil {
		return nil, err
	}
	oldest, err := c.redis.OldestAdmissions(ctx, sales)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ms := make([]prometheus.Metric, 0, len(sales))
	for _, id := range sales {
		age := 0.0
		if at, ok := oldest[id]; ok {
			age = max(0, now.Sub(at).Seconds())
		}
		ms = append(ms, gauge(c.outboxAge, age, sale(id)))
	}
	return ms, nil
}

func (c *Collector) orders(ctx context.Context) ([]prometheus.Metric, error) {
	b, err := c.store.OverdueOrders(ctx, c.opts.OverdueGrace)
	if err != nil {
		return nil, err
	}
	return []prometheus.Metric{gauge(c.overdue, float64(b.Count)), gauge(c.overdueAge, b.Oldest.Seconds())}, nil
}

func (c *Collector) pendingRefunds(ctx context.Context) ([]prometheus.Metric, error) {
	b, err := c.store.PendingRefunds(ctx)
	if err != nil {
		return nil, err
	}
	return []prometheus.Metric{gauge(c.refunds, float64(b.Count)), gauge(c.refundAge, b.Oldest.Seconds())}, nil
}

func (c *Collector) payments(ctx context.Context) ([]prometheus.Metric, error) {
	bs, err := c.store.UndeliveredPayments(ctx)
	if err != nil {
		return nil, err
	}
	var ms []prometheus.Metric
	for _, written := range []bool{true, false} {
		label := "unwritten"
		if written {
			label = "written"
		}
		ms = append(ms, gauge(c.undelivered, float64(bs[written].Count), label), gauge(c.undeliveredAge, bs[written].Oldest.Seconds(), label))
	}
	return ms, nil
}

func (c *Collector) redisReplicas(ctx context.Context) ([]prometheus.Metric, error) {
	n, err := c.redis.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	return []prometheus.Metric{gauge(c.replicas, float64(n)), gauge(c.minReplicas, float64(c.redis.MinReplicas()))}, nil
}

// strandedUnits counts, at most every StrandedEvery, each live sale's
// units that are nowhere: total - (Redis' stock, less the units stuck
// between segments past MoveGrace) - units held by orders. Redis is read
// first, then the database in one statement, so a claim or a release
// under way between the two reads can show a unit too many or too few
// for one count; only a count that stays is a unit lost.
func (c *Collector) strandedUnits(ctx context.Context) ([]prometheus.Metric, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.strandedAt.IsZero() || time.Since(c.strandedAt) >= c.opts.StrandedEvery {
		by, err := c.countStranded(ctx)
		if err != nil {
			return nil, err
		}
		c.strandedBy, c.strandedAt = by, time.Now()
	}
	ms := make([]prometheus.Metric, 0, len(c.strandedBy))
	for id, n := range c.strandedBy {
		ms = append(ms, gauge(c.stranded, float64(n), sale(id)))
	}
	return ms, nil
}

func (c *Collector) countStranded(ctx context.Context) (map[int64]int64, error) {
	sales, err := c.redis.ActiveSales(ctx)
	if err != nil {
		return nil, err
	}
	remaining, err := c.redis.RemainingMany(ctx, sales)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(remaining))
	for id, left := range remaining { // warmed sales only
		moves, err := c.redis.Moves(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, m := range moves {
			if !m.Given && time.Since(m.At) > c.opts.MoveGrace {
				left -= m.Units
			}
		}
		claimed, err := c.redis.ClaimedOrders(ctx, id)
		if err != nil {
			return nil, err
		}
		total, held, err := c.store.HeldUnits(ctx, id, claimed)
		if errors.Is(err, seckill.ErrNotFound) {
			continue // not this database's sale
		}
		if err != nil {
			return nil, err
		}
		out[id] = total - left - held
	}
	return out, nil
}
