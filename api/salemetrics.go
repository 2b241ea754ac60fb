package api

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill"
)

// saleCollector exposes the live sales at each scrape, so a dashboard can
// follow one sale: its Redis counter and its orders by status. Only the
// sales being relayed (warmed and not long over) are read, with one Redis
// round trip and one query.
type saleCollector struct {
	s         *Server
	remaining *prometheus.Desc
	waiting   *prometheus.Desc
	handed    *prometheus.Desc
	orders    *prometheus.Desc
	up        *prometheus.Desc
}

func newSaleCollector(s *Server) *saleCollector {
	return &saleCollector{
		s: s,
		remaining: prometheus.NewDesc("seckill_sale_remaining",
			"Admissions still possible for the sale (its Redis counter).", []string{"sale"}, nil),
		waiting: prometheus.NewDesc("seckill_sale_waitlist_length",
			"Buyers waiting on the sale's waitlist.", []string{"sale"}, nil),
		handed: prometheus.NewDesc("seckill_sale_waitlist_admissions_total",
			"Units the sale's waitlist gave to waiting buyers (released units, and joins that found one in stock).", []string{"sale"}, nil),
		orders: prometheus.NewDesc("seckill_sale_orders",
			"The sale's orders by status (database).", []string{"sale", "status"}, nil),
		up: prometheus.NewDesc("seckill_sale_scrape_ok",
			"1 when the live sales could be read at this scrape, 0 when Redis or the database did not answer.", nil, nil),
	}
}

func (c *saleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.remaining
	ch <- c.waiting
	ch <- c.handed
	ch <- c.orders
	ch <- c.up
}

func (c *saleCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ok := 1.0
	defer func() { ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok) }()
	sales, err := c.s.cfg.Redis.ActiveSales(ctx)
	if err != nil {
		ok = 0
		return
	}
	counts, err := c.s.cfg.Redis.Counts(ctx, sales)
	if err != nil {
		ok = 0
	}
	for id, n := range counts {
		sale := strconv.FormatInt(id, 10)
		ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, float64(max(0, n.Remaining)), sale)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(n.Waiting), sale)
		ch <- prometheus.MustNewConstMetric(c.handed, prometheus.CounterValue, float64(n.FromWaitlist), sale)
	}
	orders, err := c.s.cfg.Store.OrderCounts(ctx, sales)
	if err != nil {
		ok = 0
		return
	}
	for _, id := range sales {
		for _, st := range []seckill.OrderStatus{seckill.StatusQueued, seckill.StatusAwaitingPayment, seckill.StatusPaid, seckill.StatusClosed} {
			ch <- prometheus.MustNewConstMetric(c.orders, prometheus.GaugeValue, float64(orders[id][st]), strconv.FormatInt(id, 10), string(st))
		}
	}
}
