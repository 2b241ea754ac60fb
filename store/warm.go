package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// WarmSnapshot is what Redis needs to admit claims for a sale again after
// losing its keys, read in one consistent snapshot.
type WarmSnapshot struct {
	Sale *seckill.Sale
	// Units is the sale's available units less the QUEUED orders (none
	// but a retired saga's: StartOrder takes an order's unit in the
	// transaction that writes it), which will take theirs from available.
	Units int64
	// Claims are the users' active (not CLOSED) orders.
	Claims []ActiveOrder
}

// ActiveOrder is one user's active order of a sale.
type ActiveOrder struct {
	UserID  string
	OrderID int64
}

// OpenSales returns the sales whose window has not ended at now: the ones
// whose Redis keys must exist for claims to be admitted.
func (s *Store) OpenSales(ctx context.Context, now time.Time) ([]*seckill.Sale, error) {
	var rows []saleRow
	if err := s.db.WithContext(ctx).Where("ends_at > ?", now.UTC()).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list open sales: %w", err)
	}
	sales := make([]*seckill.Sale, len(rows))
	for i := range rows {
		sales[i] = rows[i].sale()
	}
	return sales, nil
}

// WarmSnapshot reads the sale, its admissible units and its active orders
// in one repeatable-read transaction, so the three agree with each other.
func (s *Store) WarmSnapshot(ctx context.Context, saleID int64) (*WarmSnapshot, error) {
	var snap *WarmSnapshot
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var row saleRow
		if err := tx.Where("id = ?", saleID).Take(&row).Error; err != nil {
			return fmt.Errorf("load sale %d: %w", saleID, err)
		}
		// An order row still QUEUED holds no unit yet and will take one
		// when its saga runs: only a run of the retired saga
		// (docs/OPERATIONS.md, Upgrading) ever committed one, but one it
		// left must not be sold twice.
		var pending int64
		if err := tx.Model(&orderRow{}).Where("sale_id = ? AND status = ? AND NOT stock_locked", saleID, string(seckill.StatusQueued)).
			Count(&pending).Error; err != nil {
			return fmt.Errorf("count pending orders of sale %d: %w", saleID, err)
		}
		snap = &WarmSnapshot{Sale: row.sale(), Units: max(0, row.Available-pending)}
		if err := tx.Model(&orderRow{}).Select("user_id", "id AS order_id").
			Where("sale_id = ? AND status <> ?", saleID, string(seckill.StatusClosed)).
			Scan(&snap.Claims).Error; err != nil {
			return fmt.Errorf("load active orders of sale %d: %w", saleID, err)
		}
		return nil
	}, &sqlTxOptionsRepeatableRead)
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// SettlingSales returns the sales that ended no earlier than since or are
// still open: the ones whose orders may still be settling.
func (s *Store) SettlingSales(ctx context.Context, since time.Time) ([]*seckill.Sale, error) {
	return s.OpenSales(ctx, since)
}

// ActiveOrders returns the sale's orders that are not CLOSED: QUEUED,
// AWAITING_PAYMENT and PAID, each its user's one active order.
func (s *Store) ActiveOrders(ctx context.Context, saleID int64) ([]*seckill.Order, error) {
	var rows []orderRow
	if err := s.db.WithContext(ctx).Where("sale_id = ? AND status <> ?", saleID, string(seckill.StatusClosed)).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list active orders of sale %d: %w", saleID, err)
	}
	out := make([]*seckill.Order, len(rows))
	for i := range rows {
		out[i] = rows[i].order()
	}
	return out, nil
}

// OrderExists reports whether order id has a row.
func (s *Store) OrderExists(ctx context.Context, id int64) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&orderRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return false, fmt.Errorf("look up order %d: %w", id, err)
	}
	return n == 1, nil
}
