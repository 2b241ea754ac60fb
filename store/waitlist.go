package store

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill"
)

// The durable waitlist (docs/DESIGN.md invariant 10; migration 00018):
// Redis holds each variant's line, and every place it gives is written
// here before the buyer is told, so a re-warm of a sale whose keys Redis
// lost rebuilds its lines (warmup).

// SaveWaitlistEntry records e, a place Redis gave (a join answered WAITING
// or ALREADY_WAITING, or an entrant the draw queued). Idempotent: a row of
// the same place (a retry, which Redis answers ALREADY_WAITING) keeps the
// order id, item and time of the first; a row of another place (the buyer
// was served, or left, and joined again) is replaced. Bad input is an
// error naming the field.
func (s *Store) SaveWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) error {
	item := e.Item.OrDefault()
	switch {
	case e.UserID == "":
		return fmt.Errorf("save waitlist entry: user_id is empty")
	case e.Item.Quantity < 0:
		return fmt.Errorf("save waitlist entry: quantity %d is below 1", e.Item.Quantity)
	case e.OrderID <= 0:
		return fmt.Errorf("save waitlist entry: order_id %d is not an order id", e.OrderID)
	case e.JoinedAt.IsZero():
		return fmt.Errorf("save waitlist entry: joined_at is not set")
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO waitlist_entries AS w
			(sale_id, user_id, sku, quantity, order_id, place, joined_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (sale_id, user_id) DO UPDATE SET
			sku = excluded.sku, quantity = excluded.quantity, order_id = excluded.order_id,
			place = excluded.place, joined_at = excluded.joined_at
		WHERE w.place <> excluded.place`,
		e.SaleID, e.UserID, item.SKU, item.Quantity, e.OrderID, e.Place, e.JoinedAt.UTC()).Error
	if err != nil {
		return fmt.Errorf("save the waitlist entry of %s in sale %d: %w", e.UserID, e.SaleID, err)
	}
	return nil
}

// DeleteWaitlistEntry forgets userID's place in saleID's line: they left
// it, for good, and a rebuilt line must not bring them back. Deleting a
// row that does not exist is no error.
func (s *Store) DeleteWaitlistEntry(ctx context.Context, saleID int64, userID string) error {
	if err := s.db.WithContext(ctx).Exec(`DELETE FROM waitlist_entries WHERE sale_id = ? AND user_id = ?`,
		saleID, userID).Error; err != nil {
		return fmt.Errorf("delete the waitlist entry of %s in sale %d: %w", userID, saleID, err)
	}
	return nil
}

// WaitlistEntries returns the places of saleID's lines that are still
// waiting, in join order (place, then user id): the rows of buyers the line
// has not served, those with no order of the sale created at or after
// they joined (the line served them, whether that order is still active
// or not), and whose order id has no order row (the row's id became an
// order: a re-warm served them). What a re-warm rebuilds the
// lines from.
func (s *Store) WaitlistEntries(ctx context.Context, saleID int64) ([]seckill.WaitlistEntry, error) {
	var rows []struct {
		UserID   string
		SKU      string `gorm:"column:sku"`
		Quantity int
		OrderID  int64
		Place    int64
		JoinedAt time.Time
	}
	err := s.db.WithContext(ctx).Raw(`SELECT w.user_id, w.sku, w.quantity, w.order_id, w.place, w.joined_at
		FROM waitlist_entries w
		WHERE w.sale_id = ?
		  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = w.sale_id AND o.user_id = w.user_id
		                  AND o.created_at >= w.joined_at)
		  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = w.order_id)
		ORDER BY w.place, w.user_id`, saleID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("load the waitlist of sale %d: %w", saleID, err)
	}
	out := make([]seckill.WaitlistEntry, len(rows))
	for i, r := range rows {
		out[i] = seckill.WaitlistEntry{SaleID: saleID, UserID: r.UserID, Item: seckill.Item{SKU: r.SKU, Quantity: r.Quantity},
			OrderID: r.OrderID, Place: r.Place, JoinedAt: r.JoinedAt.UTC()}
	}
	return out, nil
}
