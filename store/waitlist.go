package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

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
// was served, or left, and joined again: places are never given twice,
// WaitlistHighPlace), or whose order id has become an order (a re-warm
// served them), is replaced. Nothing is saved while the buyer holds an
// active order of the sale: Redis refuses a join to a buyer holding a
// claim, so such a buyer was served after Redis answered the join and
// before this save (their order was written, and its StartOrder found no
// row to delete); a row saved now would put them back in line at the next
// re-warm. Bad input is an error naming the field.
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
			(sale_id, user_id, sku, quantity, order_id, place, joined_at)
		SELECT ?, ?, ?, ?, ?, ?, ?
		WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = ? AND o.user_id = ? AND o.status <> ?)
		ON CONFLICT (sale_id, user_id) DO UPDATE SET
			sku = excluded.sku, quantity = excluded.quantity, order_id = excluded.order_id,
			place = excluded.place, joined_at = excluded.joined_at
		WHERE w.place <> excluded.place OR EXISTS (SELECT 1 FROM orders o WHERE o.id = w.order_id)`,
		e.SaleID, e.UserID, item.SKU, item.Quantity, e.OrderID, e.Place, e.JoinedAt.UTC(),
		e.SaleID, e.UserID, string(seckill.StatusClosed)).Error
	if err != nil {
		return fmt.Errorf("save the waitlist entry of %s in sale %d: %w", e.UserID, e.SaleID, err)
	}
	return nil
}

// DeleteWaitlistEntry forgets userID's place in saleID's line: they left
// it, for good, and a rebuilt line must not bring them back. Deleting a
// row that does not exist is no error.
func (s *Store) DeleteWaitlistEntry(ctx context.Context, saleID int64, userID string) error {
	if err := forgetWaitlistPlace(s.db.WithContext(ctx), saleID, userID); err != nil {
		return fmt.Errorf("delete the waitlist entry of %s in sale %d: %w", userID, saleID, err)
	}
	return nil
}

// forgetWaitlistPlace deletes userID's row of saleID's lines, if any, and
// keeps its place in waitlist_places (migration 00021) when it is the
// highest deleted yet, so the places a re-warm numbers new joins after
// (WaitlistHighPlace) do not go down.
func forgetWaitlistPlace(tx *gorm.DB, saleID int64, userID string) error {
	return tx.Exec(`WITH d AS (DELETE FROM waitlist_entries WHERE sale_id = ? AND user_id = ? RETURNING sale_id, place)
		INSERT INTO waitlist_places AS p (sale_id, high) SELECT sale_id, place FROM d
		ON CONFLICT (sale_id) DO UPDATE SET high = excluded.high WHERE p.high < excluded.high`,
		saleID, userID).Error
}

// WaitlistHighPlace returns the highest place saleID's lines ever gave
// that the database recorded: its rows' and its deleted rows' (served or
// left). A re-warm numbers the joins after it (seckill.WarmSpec.LastPlace),
// so a place is never given twice: a buyer who joins again is given a new
// place and SaveWaitlistEntry replaces their old row. 0 when none.
func (s *Store) WaitlistHighPlace(ctx context.Context, saleID int64) (int64, error) {
	var high int64
	err := s.db.WithContext(ctx).Raw(`SELECT GREATEST(
			COALESCE((SELECT MAX(place) FROM waitlist_entries WHERE sale_id = ?), 0),
			COALESCE((SELECT high FROM waitlist_places WHERE sale_id = ?), 0))`, saleID, saleID).Scan(&high).Error
	if err != nil {
		return 0, fmt.Errorf("load the highest waitlist place of sale %d: %w", saleID, err)
	}
	return high, nil
}

// WaitlistEntries returns the places of saleID's lines that are still
// waiting, in join order (place, then user id): what a re-warm rebuilds
// the lines from. A buyer's row is deleted when the line serves them (the
// transaction of StartOrder that writes their order, as admit.lua takes
// any admitted buyer out of their line) or they leave, so the rows are
// returned as they are, with no clock compared; but a row whose order id
// has an order is left out (a re-warm served them with it).
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
