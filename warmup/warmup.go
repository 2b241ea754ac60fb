// Package warmup keeps Redis able to admit claims: when Redis restarts
// empty (our dev Redis keeps nothing; a production one may lose its last
// second), every open sale reads "not warmed" and its claims fail closed
// with 503. The Warmer notices and loads such sales again from Postgres,
// the source of truth: the units available minus the orders written but not
// yet holding a unit, and the claims of the orders still active. It never
// overwrites a live counter.
package warmup

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// Warmer re-warms open sales whose Redis keys are gone.
type Warmer struct {
	store  *store.Store
	rstore *redisstore.Store
	every  time.Duration
	log    *slog.Logger
}

// New returns a warmer that checks every interval.
func New(st *store.Store, rstore *redisstore.Store, every time.Duration, log *slog.Logger) *Warmer {
	return &Warmer{store: st, rstore: rstore, every: every, log: log}
}

// Run checks until ctx is done.
func (w *Warmer) Run(ctx context.Context) error {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		if _, err := w.Check(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("re-warm check", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check re-warms every open sale that is not warmed and returns their ids.
func (w *Warmer) Check(ctx context.Context) ([]int64, error) {
	sales, err := w.store.OpenSales(ctx, time.Now())
	if err != nil || len(sales) == 0 {
		return nil, err
	}
	ids := make([]int64, len(sales))
	for i, s := range sales {
		ids[i] = s.ID
		// Every segment is checked, whatever Redis still knows of the sale.
		w.rstore.KnowSegments(s.ID, s.StockSegments)
	}
	live, err := w.rstore.RemainingMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	// A drawn sale is open to claims in every loaded segment. A segment a
	// re-warm loaded held back, from a snapshot read just before the draw
	// finished (whose opening found it missing), is opened here at the
	// next pass. Idempotent: one HSET per segment of each drawn sale.
	for _, s := range sales {
		if s.LobbyOpensAt != nil && s.Drawn != nil {
			if err := w.rstore.OpenClaims(ctx, s.ID, s.StartsAt); err != nil {
				return nil, err
			}
		}
	}
	var rewarmed []int64
	for _, id := range ids {
		if _, ok := live[id]; ok {
			continue
		}
		snap, err := w.store.WarmSnapshot(ctx, id)
		if err != nil {
			return rewarmed, err
		}
		claims := make([]redisstore.ActiveClaim, len(snap.Claims))
		for i, c := range snap.Claims {
			claims[i] = redisstore.ActiveClaim{UserID: c.UserID, OrderID: c.OrderID}
		}
		loaded, err := w.rstore.Rewarm(ctx, redisstore.WarmSpec{
			SaleID: id, Units: snap.Units, StartsAt: redisstore.ClaimsOpenAt(snap.Sale), EndsAt: snap.Sale.EndsAt, Segments: snap.Sale.StockSegments,
		}, claims)
		if err != nil {
			return rewarmed, fmt.Errorf("re-warm sale %d: %w", id, err)
		}
		if loaded {
			w.log.Warn("re-warmed a sale Redis had lost", "saleID", id, "units", snap.Units, "activeClaims", len(claims))
			rewarmed = append(rewarmed, id)
		}
	}
	return rewarmed, nil
}
