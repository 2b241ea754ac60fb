package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
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
// re-warm. A pending row (PendWaitlistEntry) is replaced. Bad input is an
// error naming the field.
func (s *Store) SaveWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) error {
	return s.SaveWaitlistEntries(ctx, e.SaleID, []seckill.WaitlistEntry{e})
}

// SaveWaitlistEntries is SaveWaitlistEntry for places of one sale
// together, in one statement (the draw queues up to its waitlist's bound,
// a hundred thousand entrants by default: one commit each took the draw
// minutes). A buyer named twice keeps the last. Bad input saves nothing.
func (s *Store) SaveWaitlistEntries(ctx context.Context, saleID int64, es []seckill.WaitlistEntry) error {
	byUser := make(map[string]seckill.WaitlistEntry, len(es))
	for _, e := range es {
		switch {
		case e.SaleID != saleID:
			return fmt.Errorf("save waitlist entry: sale %d is not sale %d", e.SaleID, saleID)
		case e.UserID == "":
			return fmt.Errorf("save waitlist entry: user_id is empty")
		case e.Item.Quantity < 0:
			return fmt.Errorf("save waitlist entry: quantity %d is below 1", e.Item.Quantity)
		case e.OrderID <= 0:
			return fmt.Errorf("save waitlist entry: order_id %d is not an order id", e.OrderID)
		case e.JoinedAt.IsZero():
			return fmt.Errorf("save waitlist entry: joined_at is not set")
		}
		byUser[e.UserID] = e
	}
	if len(byUser) == 0 {
		return nil
	}
	// In one order of buyers, so two saves of the same buyers never
	// wait for each other's rows in opposite orders.
	users := slices.Sorted(maps.Keys(byUser))
	skus := make([]string, len(users))
	quantities := make([]int32, len(users))
	orders := make([]int64, len(users))
	places := make([]int64, len(users))
	joined := make([]time.Time, len(users))
	for i, u := range users {
		e := byUser[u]
		item := e.Item.OrDefault()
		skus[i], quantities[i], orders[i], places[i], joined[i] = item.SKU, int32(item.Quantity), e.OrderID, e.Place, e.JoinedAt.UTC()
	}
	err := s.freshPlan(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO waitlist_entries AS w
				(sale_id, user_id, sku, quantity, order_id, place, joined_at)
			SELECT $1, v.user_id, v.sku, v.quantity, v.order_id, v.place, v.joined_at
			FROM unnest($2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[], $7::timestamptz[])
				AS v(user_id, sku, quantity, order_id, place, joined_at)
			WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = $1 AND o.user_id = v.user_id AND o.status <> $8)
			ORDER BY v.user_id
			ON CONFLICT (sale_id, user_id) DO UPDATE SET
				sku = excluded.sku, quantity = excluded.quantity, order_id = excluded.order_id,
				place = excluded.place, joined_at = excluded.joined_at
			WHERE w.place IS DISTINCT FROM excluded.place OR EXISTS (SELECT 1 FROM orders o WHERE o.id = w.order_id)`,
			pgx.QueryExecModeExec, saleID, users, skus, quantities, orders, places, joined, string(seckill.StatusClosed))
		return err
	})
	if err != nil {
		return fmt.Errorf("save %d waitlist entries in sale %d: %w", len(users), saleID, unavailable(err))
	}
	return nil
}

// PendWaitlistEntry writes userID's pending row of saleID's lines (no
// place, no order id: migration 00022) before the join asks Redis, so a
// buyer Redis puts in line always has a row, and a waiting buyer with none
// is a loss the audit reports (invariant 10). A row that is there already
// stays as it is: a retry of a buyer whose row has a place keeps it, and a
// join in flight keeps its own. Only e's sale, user, item and joined_at
// are read; bad input is an error naming the field.
func (s *Store) PendWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) error {
	item := e.Item.OrDefault()
	switch {
	case e.UserID == "":
		return fmt.Errorf("pend waitlist entry: user_id is empty")
	case e.Item.Quantity < 0:
		return fmt.Errorf("pend waitlist entry: quantity %d is below 1", e.Item.Quantity)
	case e.JoinedAt.IsZero():
		return fmt.Errorf("pend waitlist entry: joined_at is not set")
	}
	err := s.db.WithContext(ctx).Exec(`INSERT INTO waitlist_entries (sale_id, user_id, sku, quantity, joined_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (sale_id, user_id) DO NOTHING`,
		e.SaleID, e.UserID, item.SKU, item.Quantity, e.JoinedAt.UTC()).Error
	if err != nil {
		return fmt.Errorf("pend the waitlist entry of %s in sale %d: %w", e.UserID, e.SaleID, err)
	}
	return nil
}

// FillWaitlistEntry gives the buyer's row the place e Redis gave them (a
// join answered WAITING or ALREADY_WAITING), before they are told 201.
// It only fills a row that is there, by the rules of SaveWaitlistEntry: a
// pending row, or a row of another place (they were served, or left, and
// joined again), or whose order id has become an order, is filled with e;
// a row of the same place keeps its order id, item and time (a retry).
// false when the buyer has no row since the join wrote it (a leave
// deleted it, or the order the line gave them was written: StartOrder),
// or holds an active order of the sale (served since the join; the row is
// a later join's): the buyer must not be told 201 then. Bad input is an
// error naming the field.
func (s *Store) FillWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) (bool, error) {
	item := e.Item.OrDefault()
	switch {
	case e.UserID == "":
		return false, fmt.Errorf("fill waitlist entry: user_id is empty")
	case e.Item.Quantity < 0:
		return false, fmt.Errorf("fill waitlist entry: quantity %d is below 1", e.Item.Quantity)
	case e.OrderID <= 0:
		return false, fmt.Errorf("fill waitlist entry: order_id %d is not an order id", e.OrderID)
	case e.JoinedAt.IsZero():
		return false, fmt.Errorf("fill waitlist entry: joined_at is not set")
	}
	// Nothing is filled while the buyer holds an active order of the
	// sale: the line served them after Redis told this join their place,
	// and their order's write deleted the row; the row there now is a
	// later join's pending one, and a place kept in it would put them back
	// in line at the next re-warm.
	res := s.db.WithContext(ctx).Exec(`UPDATE waitlist_entries w SET sku = ?, quantity = ?, order_id = ?, place = ?, joined_at = ?
		WHERE w.sale_id = ? AND w.user_id = ?
		  AND (w.place IS DISTINCT FROM ? OR EXISTS (SELECT 1 FROM orders o WHERE o.id = w.order_id))
		  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = ? AND o.user_id = ? AND o.status <> ?)`,
		item.SKU, item.Quantity, e.OrderID, e.Place, e.JoinedAt.UTC(),
		e.SaleID, e.UserID, e.Place,
		e.SaleID, e.UserID, string(seckill.StatusClosed))
	if res.Error != nil {
		return false, fmt.Errorf("fill the waitlist entry of %s in sale %d: %w", e.UserID, e.SaleID, res.Error)
	}
	if res.RowsAffected > 0 {
		return true, nil
	}
	// Filled already with this place (a retry, or a concurrent join of the
	// same buyer): read in a statement of its own, whose snapshot sees a
	// fill committed while the UPDATE waited for its row lock.
	var kept bool
	err := s.db.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM waitlist_entries WHERE sale_id = ? AND user_id = ? AND place = ?)
		AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = ? AND o.user_id = ? AND o.status <> ?)`,
		e.SaleID, e.UserID, e.Place, e.SaleID, e.UserID, string(seckill.StatusClosed)).Scan(&kept).Error
	if err != nil {
		return false, fmt.Errorf("fill the waitlist entry of %s in sale %d: %w", e.UserID, e.SaleID, err)
	}
	return kept, nil
}

// DropPendingWaitlistEntry deletes userID's row of saleID's lines if it
// is still pending: their join ended without a place (admitted at once,
// refused), so nothing is in flight. A row with a place is never touched
// (a retry of a buyer answered 201 keeps it). No row is no error.
func (s *Store) DropPendingWaitlistEntry(ctx context.Context, saleID int64, userID string) error {
	err := s.db.WithContext(ctx).Exec(`DELETE FROM waitlist_entries WHERE sale_id = ? AND user_id = ? AND place IS NULL`,
		saleID, userID).Error
	if err != nil {
		return fmt.Errorf("drop the pending waitlist entry of %s in sale %d: %w", userID, saleID, err)
	}
	return nil
}

// WithdrawWaitlistEntry takes back the place userID's row keeps in
// saleID's lines, leaving the row pending (no place, no order id), as a
// leave's first step: from then on a rebuilt line does not bring them
// back, and a buyer still in Redis' line (the leave's Redis step failed,
// answered 503) is a join in flight, not a lost place (the audit's
// invariant 10). The place is kept in waitlist_places when it is the
// highest taken back yet (WaitlistHighPlace). A pending row, or none, is
// left as it is.
func (s *Store) WithdrawWaitlistEntry(ctx context.Context, saleID int64, userID string) error {
	// The row is locked whatever its place: a fill of it in flight (a
	// pending row in this statement's snapshot) is waited for, and its
	// place taken back, not missed.
	err := s.db.WithContext(ctx).Exec(`WITH old AS (
			SELECT sale_id, user_id, place FROM waitlist_entries
			WHERE sale_id = ? AND user_id = ? FOR UPDATE),
		u AS (UPDATE waitlist_entries w SET place = NULL, order_id = NULL
			FROM old WHERE w.sale_id = old.sale_id AND w.user_id = old.user_id)
		INSERT INTO waitlist_places AS p (sale_id, high) SELECT sale_id, place FROM old WHERE place IS NOT NULL
		ON CONFLICT (sale_id) DO UPDATE SET high = excluded.high WHERE p.high < excluded.high`,
		saleID, userID).Error
	if err != nil {
		return fmt.Errorf("withdraw the waitlist entry of %s in sale %d: %w", userID, saleID, err)
	}
	return nil
}

// DeleteLeftWaitlistEntry is a leave's last step, once Redis took userID
// out of saleID's line at place (0 when they waited nowhere): it deletes
// their row if it is pending (WithdrawWaitlistEntry) or keeps that place
// or an earlier one (a retry of their join filled it again meanwhile); a
// row of a later place is a join of theirs seated after the leave, and
// answered 201: it stays (hostile review).
func (s *Store) DeleteLeftWaitlistEntry(ctx context.Context, saleID int64, userID string, place int64) error {
	err := s.db.WithContext(ctx).Exec(`WITH d AS (DELETE FROM waitlist_entries
			WHERE sale_id = ? AND user_id = ? AND (place IS NULL OR place <= ?) RETURNING sale_id, place)
		INSERT INTO waitlist_places AS p (sale_id, high) SELECT sale_id, place FROM d WHERE place IS NOT NULL
		ON CONFLICT (sale_id) DO UPDATE SET high = excluded.high WHERE p.high < excluded.high`,
		saleID, userID, place).Error
	if err != nil {
		return fmt.Errorf("delete the left waitlist entry of %s in sale %d: %w", userID, saleID, err)
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

// forgetWaitlistPlace deletes userID's row of saleID's lines, if any
// (pending or not), and keeps its place in waitlist_places (migration
// 00021) when it is the highest deleted yet, so the places a re-warm
// numbers new joins after (WaitlistHighPlace) do not go down.
func forgetWaitlistPlace(tx *gorm.DB, saleID int64, userID string) error {
	return tx.Exec(`WITH d AS (DELETE FROM waitlist_entries WHERE sale_id = ? AND user_id = ? RETURNING sale_id, place)
		INSERT INTO waitlist_places AS p (sale_id, high) SELECT sale_id, place FROM d WHERE place IS NOT NULL
		ON CONFLICT (sale_id) DO UPDATE SET high = excluded.high WHERE p.high < excluded.high`,
		saleID, userID).Error
}

// WaitlistHighPlace returns the highest place saleID's lines ever gave
// that the database recorded: its rows' and its deleted rows' (served or
// left). A re-warm numbers the joins after it (seckill.WarmSpec.LastPlace),
// so a place is never given twice: a buyer who joins again is given a new
// place and SaveWaitlistEntry replaces their old row. A pending row has
// no place yet. 0 when none.
func (s *Store) WaitlistHighPlace(ctx context.Context, saleID int64) (int64, error) {
	var high int64
	err := s.db.WithContext(ctx).Raw(`SELECT GREATEST(
			COALESCE((SELECT MAX(place) FROM waitlist_entries WHERE sale_id = ? AND place IS NOT NULL), 0),
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
// has an order is left out (a re-warm served them with it), and so is a
// pending row (PendWaitlistEntry: never answered 201, and with no place
// to rebuild).
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
		WHERE w.sale_id = ? AND w.place IS NOT NULL
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
