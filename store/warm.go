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
	// Units are the admissible units of each of the sale's variants, by
	// sku (every variant of Sale has its key; Sale.SKUs gives their
	// order): the variant's available units less the quantities of its
	// QUEUED orders that hold none yet (none but a retired saga's:
	// StartOrder takes an order's units in the transaction that writes
	// it), which will take theirs from available, and less the units of
	// its restocks not applied yet, which their Redis half adds (or re-warm
	// adds back): below zero when orders hold units of those restocks.
	Units map[string]int64
	// Restocks are the restocks not applied yet that Units leave out,
	// oldest first: re-warm adds back what Redis placed of them
	// (seckill.WarmSpec's Restocks).
	Restocks []seckill.Restock
	// Claims are the users' active (not CLOSED) orders, each with the
	// units of the variant it holds.
	Claims []ActiveOrder
}

// TotalUnits is the sum of the variants' admissible units.
func (w *WarmSnapshot) TotalUnits() int64 {
	var n int64
	for _, u := range w.Units {
		n += u
	}
	return n
}

// ActiveOrder is one user's active order of a sale and the units it
// holds: Item's Quantity units of its variant are the claim's in Redis.
type ActiveOrder struct {
	UserID  string
	OrderID int64
	Item    seckill.Item
}

// OpenSales returns the sales, with their variants, whose window has not
// ended at now: the ones whose Redis keys must exist for claims to be
// admitted.
func (s *Store) OpenSales(ctx context.Context, now time.Time) ([]*seckill.Sale, error) {
	var rows []saleRow
	db := s.db.WithContext(ctx)
	if err := db.Where("ends_at > ?", now.UTC()).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list open sales: %w", err)
	}
	return withVariants(db, rows)
}

// WarmSnapshot reads the sale, its variants' admissible units and its
// active orders in one repeatable-read transaction, so the three agree
// with each other.
func (s *Store) WarmSnapshot(ctx context.Context, saleID int64) (*WarmSnapshot, error) {
	var snap *WarmSnapshot
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		sale, _, err := saleByID(tx, saleID)
		if err != nil {
			return err
		}
		pending, err := pendingUnits(tx, saleID)
		if err != nil {
			return err
		}
		restocks, err := unappliedUnits(tx, saleID)
		if err != nil {
			return err
		}
		snap = &WarmSnapshot{Sale: sale, Units: make(map[string]int64, len(sale.Variants))}
		for _, v := range sale.Variants {
			// Below zero when orders hold units of the unapplied restocks
			// already: re-warm adds the restocks back before it clamps.
			snap.Units[v.SKU] = max(0, v.Stock.Available-pending[v.SKU]) - restocks[v.SKU]
		}
		if snap.Restocks, err = unappliedRestocks(tx, saleID); err != nil {
			return err
		}
		snap.Claims, err = activeOrders(tx, saleID)
		return err
	}, &sqlTxOptionsRepeatableRead)
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// pendingUnits are the units, by sku, of the sale's orders still QUEUED
// that hold none: they will take theirs when their saga runs. Only a run
// of the retired saga (docs/OPERATIONS.md, Upgrading) ever committed such
// a row, but one it left must not be sold twice.
func pendingUnits(tx *gorm.DB, saleID int64) (map[string]int64, error) {
	var rows []struct {
		SKU   string `gorm:"column:sku"`
		Units int64
	}
	if err := tx.Raw(`SELECT sku, sum(quantity) AS units FROM orders
		WHERE sale_id = ? AND status = ? AND NOT stock_locked GROUP BY sku`, saleID, string(seckill.StatusQueued)).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count the pending units of sale %d: %w", saleID, err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.SKU] = r.Units
	}
	return out, nil
}

// activeOrders are the sale's orders that are not CLOSED, with their items.
func activeOrders(tx *gorm.DB, saleID int64) ([]ActiveOrder, error) {
	var rows []struct {
		UserID   string
		OrderID  int64
		SKU      string `gorm:"column:sku"`
		Quantity int
	}
	if err := tx.Raw(`SELECT user_id, id AS order_id, sku, quantity FROM orders WHERE sale_id = ? AND status <> ?`,
		saleID, string(seckill.StatusClosed)).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("load active orders of sale %d: %w", saleID, err)
	}
	out := make([]ActiveOrder, len(rows))
	for i, r := range rows {
		out[i] = ActiveOrder{UserID: r.UserID, OrderID: r.OrderID, Item: seckill.Item{SKU: r.SKU, Quantity: r.Quantity}}
	}
	return out, nil
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
