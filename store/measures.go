package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/seckill/seckill"
)

// The reads behind the load generator's report (package bench): what the
// orders and a sale's draw did, read back from the source of truth once a
// run has made them.

// OrderTimeline is when an order reached each of its stages; its
// admission's time is in its id (idgen.Time).
type OrderTimeline struct {
	ID          int64
	CloseReason seckill.CloseReason // "" unless CLOSED
	AwaitingAt  *time.Time          // when it became AWAITING_PAYMENT, its units locked; nil if it never did
	PayBy       *time.Time
	ClosedAt    *time.Time
}

// OrderTimelines reads the timeline of every order of the sales, in no
// particular order.
func (s *Store) OrderTimelines(ctx context.Context, saleIDs []int64) ([]OrderTimeline, error) {
	if len(saleIDs) == 0 {
		return nil, nil
	}
	var rows []struct {
		ID          int64
		CloseReason *string
		AwaitingAt  *time.Time
		PayBy       *time.Time
		ClosedAt    *time.Time
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT id, close_reason, awaiting_at, pay_by, closed_at FROM orders WHERE sale_id IN ?`,
		saleIDs).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the orders' timelines of sales %v: %w", saleIDs, err)
	}
	out := make([]OrderTimeline, len(rows))
	for i, r := range rows {
		out[i] = OrderTimeline{ID: r.ID, AwaitingAt: r.AwaitingAt, PayBy: r.PayBy, ClosedAt: r.ClosedAt}
		if r.CloseReason != nil {
			out[i].CloseReason = seckill.CloseReason(*r.CloseReason)
		}
	}
	return out, nil
}

// LastMissedPayBy reads the latest deadline an order of the sales missed:
// the largest pay_by of their orders closed PAYMENT_TIMEOUT, the zero
// time when none was.
func (s *Store) LastMissedPayBy(ctx context.Context, saleIDs []int64) (time.Time, error) {
	if len(saleIDs) == 0 {
		return time.Time{}, nil
	}
	// max() over no row is NULL.
	var last sql.NullTime
	if err := s.db.WithContext(ctx).Raw(`SELECT max(pay_by) FROM orders WHERE sale_id IN ? AND close_reason = ?`,
		saleIDs, seckill.ClosePaymentTimeout).Row().Scan(&last); err != nil {
		return time.Time{}, fmt.Errorf("read the last missed deadline of sales %v: %w", saleIDs, err)
	}
	if !last.Valid {
		return time.Time{}, nil
	}
	return last.Time.UTC(), nil
}

// LobbyTableSize is the on-disk size of the lobby_entries table, in
// bytes: Total is Heap (the rows, with their TOAST) plus Indexes.
type LobbyTableSize struct {
	Total, Heap, Indexes int64
}

// LobbySize reads the size of the lobby_entries table, every sale's
// entries together.
func (s *Store) LobbySize(ctx context.Context) (LobbyTableSize, error) {
	var z LobbyTableSize
	if err := s.db.WithContext(ctx).Raw(`SELECT pg_total_relation_size('lobby_entries'), pg_table_size('lobby_entries'),
		pg_indexes_size('lobby_entries')`).Row().Scan(&z.Total, &z.Heap, &z.Indexes); err != nil {
		return LobbyTableSize{}, fmt.Errorf("read the size of the lobby: %w", err)
	}
	return z, nil
}

// LobbyCount counts the entries in the sale's lobby.
func (s *Store) LobbyCount(ctx context.Context, saleID int64) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM lobby_entries WHERE sale_id = ?`, saleID).Row().Scan(&n); err != nil {
		return 0, fmt.Errorf("count the lobby of sale %d: %w", saleID, err)
	}
	return n, nil
}

// EntryOutcomes counts the entries of the sale's lobby by outcome
// (seckill.EntryWon, ...); "" counts those the draw has not settled.
func (s *Store) EntryOutcomes(ctx context.Context, saleID int64) (map[string]int64, error) {
	var rows []struct {
		Outcome *string
		N       int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT outcome, count(*) AS n FROM lobby_entries WHERE sale_id = ? GROUP BY outcome`,
		saleID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count the outcomes of sale %d's draw: %w", saleID, err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		k := ""
		if r.Outcome != nil {
			k = *r.Outcome
		}
		out[k] = r.N
	}
	return out, nil
}

// WinnersNotYetPayable counts the sale's entries WON whose order has not
// left QUEUED (it has no row yet, or its row is still QUEUED): the
// winners whose saga has not yet made their order payable.
func (s *Store) WinnersNotYetPayable(ctx context.Context, saleID int64) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM lobby_entries e WHERE e.sale_id = ? AND e.outcome = ?
		AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = e.order_id AND o.status <> ?)`,
		saleID, seckill.EntryWon, seckill.StatusQueued).Row().Scan(&n); err != nil {
		return 0, fmt.Errorf("count the winners of sale %d not yet payable: %w", saleID, err)
	}
	return n, nil
}
