package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// AddClaimCounts adds counts[sale][outcome] to the sales' claim counters,
// in one statement. The API processes call it about once a second with
// what they answered since.
func (s *Store) AddClaimCounts(ctx context.Context, counts map[int64]map[seckill.Outcome]int64) error {
	var values []string
	var args []any
	sales := make([]int64, 0, len(counts))
	for sale := range counts {
		sales = append(sales, sale)
	}
	// A fixed order, so two processes' upserts never lock rows in
	// opposite orders.
	sort.Slice(sales, func(i, j int) bool { return sales[i] < sales[j] })
	for _, sale := range sales {
		outcomes := make([]seckill.Outcome, 0, len(counts[sale]))
		for o := range counts[sale] {
			outcomes = append(outcomes, o)
		}
		slices.Sort(outcomes)
		for _, o := range outcomes {
			if n := counts[sale][o]; n > 0 {
				values = append(values, "(?, ?, ?)")
				args = append(args, sale, o, n)
			}
		}
	}
	if len(values) == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO sale_claims (sale_id, outcome, count) VALUES `+strings.Join(values, ", ")+
		` ON CONFLICT (sale_id, outcome) DO UPDATE SET count = sale_claims.count + EXCLUDED.count`, args...).Error
	if err != nil {
		return fmt.Errorf("add claim counts: %w", err)
	}
	return nil
}

// MarkSoldOut records at as the moment sale first sold out, unless an
// earlier one is recorded.
func (s *Store) MarkSoldOut(ctx context.Context, saleID int64, at time.Time) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE sales SET sold_out_at = ? WHERE id = ? AND (sold_out_at IS NULL OR sold_out_at > ?)`,
		at.UTC(), saleID, at.UTC()).Error
	if err != nil {
		return fmt.Errorf("mark sale %d sold out: %w", saleID, err)
	}
	return nil
}

// SaleStats reads the funnel of sale id: its stock in units, summed over
// its variants and per variant (Sale.Variants), its claims, and its orders
// (counted as orders; PaidCents sums their amounts, each quantity x
// price). seckill.ErrNotFound for an unknown sale.
func (s *Store) SaleStats(ctx context.Context, id int64) (*seckill.SaleStats, error) {
	sale, row, err := saleByID(s.db.WithContext(ctx), id)
	if err != nil {
		return nil, err
	}
	st := &seckill.SaleStats{
		Sale: sale, SoldOutAt: row.SoldOutAt,
		Claims: map[seckill.Outcome]int64{}, Orders: map[seckill.OrderStatus]int64{},
		Closed: map[seckill.CloseReason]int64{}, Refunds: map[string]int64{},
	}
	if st.SoldOutAt != nil {
		t := st.SoldOutAt.UTC()
		st.SoldOutAt = &t
	}
	db := s.db.WithContext(ctx)

	var claims []struct {
		Outcome seckill.Outcome
		Count   int64
	}
	if err := db.Raw(`SELECT outcome, count FROM sale_claims WHERE sale_id = ?`, id).Scan(&claims).Error; err != nil {
		return nil, fmt.Errorf("claim counts of sale %d: %w", id, err)
	}
	for _, c := range claims {
		st.Claims[c.Outcome] = c.Count
	}

	var orders []struct {
		Status      string
		CloseReason *string
		N           int64
		Cents       int64
	}
	if err := db.Raw(`SELECT status, close_reason, count(*) AS n, coalesce(sum(amount_cents), 0) AS cents
		FROM orders WHERE sale_id = ? GROUP BY status, close_reason`, id).Scan(&orders).Error; err != nil {
		return nil, fmt.Errorf("orders of sale %d: %w", id, err)
	}
	for _, o := range orders {
		st.Orders[seckill.OrderStatus(o.Status)] += o.N
		if o.CloseReason != nil {
			st.Closed[seckill.CloseReason(*o.CloseReason)] += o.N
		}
		if o.Status == string(seckill.StatusPaid) {
			st.PaidCents += o.Cents
		}
	}

	var refunds []struct {
		Status string
		N      int64
		Cents  int64
	}
	if err := db.Raw(`SELECT r.status, count(*) AS n, coalesce(sum(r.amount_cents), 0) AS cents
		FROM refunds r JOIN orders o ON o.id = r.order_id WHERE o.sale_id = ? GROUP BY r.status`, id).Scan(&refunds).Error; err != nil {
		return nil, fmt.Errorf("refunds of sale %d: %w", id, err)
	}
	for _, r := range refunds {
		st.Refunds[r.Status] = r.N
		st.RefundsCents += r.Cents
	}
	return st, nil
}

// OrderCounts counts the orders of the given sales by status.
func (s *Store) OrderCounts(ctx context.Context, saleIDs []int64) (map[int64]map[seckill.OrderStatus]int64, error) {
	out := make(map[int64]map[seckill.OrderStatus]int64, len(saleIDs))
	if len(saleIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		SaleID int64
		Status string
		N      int64
	}
	err := s.db.WithContext(ctx).Raw(`SELECT sale_id, status, count(*) AS n FROM orders WHERE sale_id IN ? GROUP BY sale_id, status`,
		saleIDs).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count orders: %w", err)
	}
	for _, r := range rows {
		if out[r.SaleID] == nil {
			out[r.SaleID] = map[seckill.OrderStatus]int64{}
		}
		out[r.SaleID][seckill.OrderStatus(r.Status)] = r.N
	}
	return out, nil
}
