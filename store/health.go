package store

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill"
)

// The reads behind the worker's health gauges (package opsmetrics), made
// at every scrape: each is one statement on a partial index
// (migrations/00012_health_indexes.sql), so it reads only the rows it
// counts, never a whole table. The statuses are written into the SQL, not
// passed as parameters: a prepared statement's generic plan can use a
// partial index only when its WHERE names the index's predicate itself.
// Ages are measured on the database's clock, the one that wrote the
// timestamps.

// Backlog is how many rows wait for something, and how long the one
// waiting longest has (0 when none waits).
type Backlog struct {
	Count  int64
	Oldest time.Duration
}

type backlogRow struct {
	N      int64
	Oldest float64
}

func (r backlogRow) backlog() Backlog {
	return Backlog{Count: r.N, Oldest: time.Duration(r.Oldest * float64(time.Second))}
}

// OverdueOrders reads the AWAITING_PAYMENT orders past their deadline:
// pay_by, or pay_by plus seckill.OwnPaymentWait for an order the provider
// made a payment object for (its saga waits that long for the payment's
// event). Count is those more than grace past it; Oldest how far past
// the most overdue is.
func (s *Store) OverdueOrders(ctx context.Context, grace time.Duration) (Backlog, error) {
	var row backlogRow
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FILTER (WHERE deadline < now() - make_interval(secs => ?)) AS n,
			COALESCE(EXTRACT(EPOCH FROM now() - min(deadline)), 0)::float8 AS oldest
		FROM (SELECT o.pay_by + CASE WHEN EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.order_id = o.id)
				THEN make_interval(secs => ?) ELSE interval '0' END AS deadline
			FROM orders o WHERE o.status = 'AWAITING_PAYMENT' AND o.pay_by < now()) d
		WHERE deadline < now()`,
		grace.Seconds(), seckill.OwnPaymentWait.Seconds()).Scan(&row).Error
	if err != nil {
		return Backlog{}, fmt.Errorf("count overdue orders: %w", err)
	}
	return row.backlog(), nil
}

// LateBeacons reads, per sale whose draw waits for a beacon round and has
// not ranked its entries yet, how long past the round's time it is (only
// the sales whose round's time has passed; by the database's clock): the
// round not read (the beacon down, a chain the worker does not trust, no
// beacon read at all), or read and the ranking refused (the entries are
// not those committed).
func (s *Store) LateBeacons(ctx context.Context) (map[int64]time.Duration, error) {
	var rows []struct {
		ID   int64
		Late float64
	}
	err := s.db.WithContext(ctx).Raw(`SELECT id, EXTRACT(EPOCH FROM now() - draw_beacon_round_at)::float8 AS late FROM sales
		WHERE draw_beacon_chain IS NOT NULL AND draw_state IN (?, ?) AND draw_beacon_round_at < now()`,
		seckill.DrawOpen, seckill.DrawClosed).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the draws waiting for their beacon: %w", err)
	}
	out := make(map[int64]time.Duration, len(rows))
	for _, r := range rows {
		out[r.ID] = time.Duration(r.Late * float64(time.Second))
	}
	return out, nil
}

// PendingRefunds reads the refunds still PENDING, and how long since the
// oldest was started.
func (s *Store) PendingRefunds(ctx context.Context) (Backlog, error) {
	var row backlogRow
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) AS n, COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest
		FROM refunds WHERE status = 'PENDING'`).Scan(&row).Error
	if err != nil {
		return Backlog{}, fmt.Errorf("count pending refunds: %w", err)
	}
	return row.backlog(), nil
}

// UndeliveredPayments reads the payment events recorded and never
// delivered to a saga (outcome RECEIVED, delivered_at empty: what
// reconciliation's payment_undelivered delivers), split by whether their
// order has a row (true) or not yet, or never (false: delivery holds
// those for SECKILL_PAYMENT_HOLD, then refunds them). Both keys are
// always present.
func (s *Store) UndeliveredPayments(ctx context.Context) (map[bool]Backlog, error) {
	var rows []struct {
		Written bool
		N       int64
		Oldest  float64
	}
	err := s.db.WithContext(ctx).Raw(`SELECT (o.id IS NOT NULL) AS written, count(*) AS n,
			COALESCE(EXTRACT(EPOCH FROM now() - min(e.received_at)), 0)::float8 AS oldest
		FROM payment_events e LEFT JOIN orders o ON o.id = e.order_id
		WHERE e.delivered_at IS NULL AND e.outcome = 'RECEIVED'
		GROUP BY 1`).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count undelivered payment events: %w", err)
	}
	out := map[bool]Backlog{true: {}, false: {}}
	for _, r := range rows {
		out[r.Written] = backlogRow{N: r.N, Oldest: r.Oldest}.backlog()
	}
	return out, nil
}

// SaleTotals reads the total stock, in units, of each of ids that is a
// sale here (ids of another database's sales are absent): the sum of its
// variants' totals, one statement on the variants' primary key, however
// many orders the sales have.
func (s *Store) SaleTotals(ctx context.Context, ids []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct{ SaleID, Total int64 }
	if err := s.db.WithContext(ctx).Raw(`SELECT sale_id, sum(total) AS total FROM sale_variants WHERE sale_id IN ? GROUP BY sale_id`,
		ids).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the sales' totals: %w", err)
	}
	for _, r := range rows {
		out[r.SaleID] = r.Total
	}
	return out, nil
}

// VariantTotals reads the total stock, in units, of each variant of each
// of ids that is a sale here, by sale and sku: SaleTotals per variant,
// for a gauge of the units stranded in one variant.
func (s *Store) VariantTotals(ctx context.Context, ids []int64) (map[int64]map[string]int64, error) {
	out := make(map[int64]map[string]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		SaleID int64
		SKU    string `gorm:"column:sku"`
		Total  int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT sale_id, sku, total FROM sale_variants WHERE sale_id IN ?`, ids).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the variants' totals: %w", err)
	}
	for _, r := range rows {
		if out[r.SaleID] == nil {
			out[r.SaleID] = make(map[string]int64)
		}
		out[r.SaleID][r.SKU] = r.Total
	}
	return out, nil
}
