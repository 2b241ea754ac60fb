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
//   - seckill_sale_stranded_units{sale}: units of a live sale that Redis
//     holds nowhere: the sale's total less Redis' stock (units stuck
//     between segments left out) and its claims (one unit each, queued,
//     awaiting payment or paid); negative when Redis holds more;
//   - seckill_draw_beacon_late_seconds{sale}: how long past its time the
//     beacon round a sale's draw waits for is, while the draw has not
//     ranked (the beacon is down, no worker reads or trusts it, or the
//     ranking is refused): the sale stays DRAWING meanwhile;
//   - seckill_health_scrape_ok{check}: 0 when one check's read failed or
//     timed out (its gauges are then missing from the scrape).
//
// Every worker replica exports the same values: alerts take max() or
// min() over them.
package opsmetrics

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill"
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
	CheckBeacons       = "draw_beacons"
)

// Checks lists every check.
var Checks = []string{CheckOutbox, CheckOrders, CheckRefunds, CheckPayments, CheckRedisReplicas, CheckStranded, CheckBeacons}

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
	// in between export the last count. The count reads a few keys per
	// segment of every live sale, never its claims one by one: like the
	// other checks, it can run at every scrape [0: at every scrape].
	StrandedEvery time.Duration
	// Log receives a warning when a check fails, at most once a minute
	// per check; nil logs nothing.
	Log *slog.Logger
}

// Database is what the gauges read of PostgreSQL (store.Store implements
// it). Each method returns the database's error as it is.
type Database interface {
	OverdueOrders(ctx context.Context, grace time.Duration) (store.Backlog, error)
	PendingRefunds(ctx context.Context) (store.Backlog, error)
	UndeliveredPayments(ctx context.Context) (map[bool]store.Backlog, error)
	SaleTotals(ctx context.Context, ids []int64) (map[int64]int64, error)
	LateBeacons(ctx context.Context) (map[int64]time.Duration, error)
}

// Redis is what the gauges read of Redis (redisstore.Store implements it).
// Each method returns Redis' error as it is.
type Redis interface {
	ActiveSales(ctx context.Context) ([]int64, error)
	OldestAdmissions(ctx context.Context, saleIDs []int64) (map[int64]time.Time, error)
	Replicas(ctx context.Context) (int, error)
	MinReplicas() int
	UnitsHeld(ctx context.Context, saleIDs []int64, stuckBefore time.Time) (map[int64]seckill.Held, error)
}

// Collector is the prometheus.Collector of the health gauges.
type Collector struct {
	store Database
	redis Redis
	opts  Options

	outboxAge, overdue, overdueAge, refunds, refundAge *prometheus.Desc
	undelivered, undeliveredAge, replicas, minReplicas *prometheus.Desc
	stranded, beaconLate, ok                           *prometheus.Desc

	logMu  sync.Mutex
	logged map[string]time.Time // check -> when its last failure was logged

	mu         sync.Mutex
	strandedAt time.Time       // when strandedBy was counted (zero: never)
	strandedBy map[int64]int64 // sale -> stranded units
}

// New returns the collector reading st and rs.
func New(st Database, rs Redis, opts Options) *Collector {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.OverdueGrace <= 0 {
		opts.OverdueGrace = time.Minute
	}
	if opts.MoveGrace <= 0 {
		opts.MoveGrace = time.Minute
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
			"Units of a live sale Redis holds nowhere: the sale's total less Redis' stock (units stuck between segments left out) and its claims; negative: Redis holds more units than the sale has.", []string{"sale"}, nil),
		beaconLate: prometheus.NewDesc("seckill_draw_beacon_late_seconds",
			"How long past its time the beacon round the sale's draw waits for is, while the draw has not ranked (the sale stays DRAWING).", []string{"sale"}, nil),
		ok: prometheus.NewDesc("seckill_health_scrape_ok",
			"1 when the check's gauges could be read at this scrape, 0 when Redis or the database failed or timed out.", []string{"check"}, nil),
	}
}

// Register adds the collector to reg.
func (c *Collector) Register(reg prometheus.Registerer) error { return reg.Register(c) }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.outboxAge, c.overdue, c.overdueAge, c.refunds, c.refundAge,
		c.undelivered, c.undeliveredAge, c.replicas, c.minReplicas, c.stranded, c.beaconLate, c.ok} {
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
		CheckBeacons:       c.lateBeacons,
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

// lateBeacons: the draws waiting for a beacon round past its time.
func (c *Collector) lateBeacons(ctx context.Context) ([]prometheus.Metric, error) {
	late, err := c.store.LateBeacons(ctx)
	if err != nil {
		return nil, err
	}
	ms := make([]prometheus.Metric, 0, len(late))
	for _, id := range slices.Sorted(maps.Keys(late)) {
		ms = append(ms, gauge(c.beaconLate, late[id].Seconds(), sale(id)))
	}
	return ms, nil
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

// strandedUnits counts each live sale's units that Redis holds nowhere
// (countStranded), at most every StrandedEvery.
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

// countStranded is, for each live sale, its total (which never changes)
// less the units Redis holds, each once (seckill.Held): its stock, less
// the units stuck between segments past MoveGrace, and its claims. The
// claims are counted, never read, and no order is read, so the count costs
// a few reads per segment however many claims a sale has. From admission
// to release a unit is in a claim whatever its order's state (queued,
// awaiting payment, paid), and it goes from the stock to a claim and back
// in one script each: a claim admitted, paid or released never moves the
// count. On one Redis server (or a Sentinel group) the stock and the claims
// are read in one MULTI; on a Cluster a claim or a release that runs
// between two reads of a segment can show a unit too many or too few for
// one count.
//
// Two drifts the count leaves to reconciliation, which repairs them within
// a pass or two, since telling them needs every claim's order: a claim
// naming a CLOSED order (its release lost) still counts as holding its
// unit (stale_claim releases it), and an order whose claim Redis lost
// counts as stranded until claim_missing writes the claim back.
func (c *Collector) countStranded(ctx context.Context) (map[int64]int64, error) {
	sales, err := c.redis.ActiveSales(ctx)
	if err != nil {
		return nil, err
	}
	held, err := c.redis.UnitsHeld(ctx, sales, time.Now().Add(-c.opts.MoveGrace))
	if err != nil {
		return nil, err
	}
	totals, err := c.store.SaleTotals(ctx, slices.Collect(maps.Keys(held))) // warmed sales only
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(held))
	for id, h := range held {
		total, ok := totals[id]
		if !ok {
			continue // not this database's sale
		}
		out[id] = total - (h.Stock - h.Stuck) - h.ForWaiting - h.Claimed
	}
	return out, nil
}
