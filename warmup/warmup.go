// Package warmup keeps Redis able to admit claims: when Redis restarts
// empty (our dev Redis keeps nothing; a production one may lose its last
// second), every open sale reads "not warmed" and its claims fail closed
// with 503. The Warmer notices and loads such sales again from Postgres,
// the source of truth: the units available minus the orders written but not
// yet holding a unit, and the claims of the orders still active. It never
// overwrites a live counter.
//
// A lost sale is loaded only once it has been seen lost for Settle: by
// then every running process has taken its order-id node back (package
// idgen renews every idgen.RenewEvery), so no node number serves both a
// process that leased it before the loss and one started since, while
// claims are admitted.
package warmup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// Settle is how long a sale must have been seen lost before it is loaded
// again: one id-node renewal and a margin.
const Settle = idgen.RenewEvery + 2*time.Second

// Warmer re-warms open sales whose Redis keys are gone.
type Warmer struct {
	store  *store.Store
	rstore *redisstore.Store
	every  time.Duration
	log    *slog.Logger
	// lostSince is when each sale was first seen lost (used by Check's
	// goroutine only).
	lostSince map[int64]time.Time
	// adopted are the sales this process has brought to the v4 layout
	// (redisstore.Adopt), so each is adopted once per process.
	adopted map[int64]bool
}

// New returns a warmer that checks every interval.
func New(st *store.Store, rstore *redisstore.Store, every time.Duration, log *slog.Logger) *Warmer {
	return &Warmer{store: st, rstore: rstore, every: every, log: log, lostSince: map[int64]time.Time{}, adopted: map[int64]bool{}}
}

// Run checks every interval until ctx is done, and every second while a
// lost sale waits out Settle.
func (w *Warmer) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := w.Check(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("re-warm check", "error", err)
		}
		next := w.every
		if len(w.lostSince) > 0 {
			next = min(next, time.Second)
		}
		t.Reset(next)
	}
}

// Check re-warms every open sale that has been seen not warmed for Settle
// and returns their ids; a sale seen lost for the first time is noted.
// Not safe for concurrent use.
func (w *Warmer) Check(ctx context.Context) ([]int64, error) {
	sales, err := w.store.OpenSales(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	open := make(map[int64]bool, len(sales))
	for _, s := range sales {
		open[s.ID] = true
	}
	for id := range w.lostSince {
		if !open[id] { // ended while lost: nothing to re-warm
			delete(w.lostSince, id)
		}
	}
	if len(sales) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(sales))
	for i, s := range sales {
		ids[i] = s.ID
		// Every segment is checked, whatever Redis still knows of the sale.
		w.rstore.KnowSegments(s.ID, s.StockSegments)
		w.rstore.KnowSKUs(s.ID, s.SKUs())
	}
	// A sale that failed to adopt or to open does not keep the others from
	// being re-warmed: its error is returned after the pass.
	errs := w.adopt(ctx, ids)
	live, err := w.rstore.RemainingMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	// A drawn sale is open to claims in every loaded segment. A segment a
	// re-warm loaded held back, from a snapshot read just before the draw
	// finished (whose opening found it missing), is opened here at the
	// next pass. Idempotent: one HSET per segment of each drawn sale. A
	// sale whose opening fails (its shard without a replica, say) does not
	// keep the others from being re-warmed: its error is returned after
	// the pass.
	for _, s := range sales {
		if s.LobbyOpensAt != nil && s.Drawn != nil {
			if err := w.rstore.OpenClaims(ctx, s.ID, s.StartsAt); err != nil {
				errs = append(errs, fmt.Errorf("open the claims of drawn sale %d: %w", s.ID, err))
			}
		}
	}
	rewarmed, err := w.rewarm(ctx, ids, live)
	return rewarmed, errors.Join(append(errs, err)...)
}

// adopt brings each sale Redis holds as warmed before variants (an
// upgrade while it was live) to the v4 layout, once per process
// (redisstore.Adopt: its claims count a unit each of the variant
// "default"): the open sales of ids, and the sales ended but still
// settling that the relay watches, whose claims the stranded-units gauge
// and the audit count too (docs/OPERATIONS.md, Upgrading).
func (w *Warmer) adopt(ctx context.Context, ids []int64) []error {
	settling, err := w.rstore.ActiveSales(ctx)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, id := range append(slices.Clone(ids), settling...) {
		if w.adopted[id] {
			continue
		}
		n, err := w.rstore.Adopt(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("adopt sale %d: %w", id, err))
			continue
		}
		if n > 0 {
			w.log.Info("adopted a sale warmed before variants: one variant, a unit per claim", "saleID", id, "segments", n)
		}
		w.adopted[id] = true
	}
	return errs
}

// rewarm loads the sales of ids that are not live and have been seen lost
// for Settle.
func (w *Warmer) rewarm(ctx context.Context, ids []int64, live map[int64]int64) ([]int64, error) {
	now := time.Now()
	for id := range w.lostSince {
		if _, ok := live[id]; ok {
			delete(w.lostSince, id)
		}
	}
	var rewarmed []int64
	for _, id := range ids {
		if _, ok := live[id]; ok {
			continue
		}
		since, seen := w.lostSince[id]
		if !seen {
			w.lostSince[id] = now
			w.log.Warn("a sale's Redis keys are gone: its claims fail closed until it is re-warmed", "saleID", id, "in", Settle.String())
		}
		if !seen || now.Sub(since) < Settle {
			continue
		}
		snap, err := w.store.WarmSnapshot(ctx, id)
		if err != nil {
			return rewarmed, err
		}
		claims := make([]seckill.ActiveClaim, len(snap.Claims))
		for i, c := range snap.Claims {
			claims[i] = seckill.ActiveClaim{UserID: c.UserID, OrderID: c.OrderID, Item: c.Item}
		}
		// A drawn sale's entrants told an order that Redis lost before its
		// saga wrote it are admitted again, with that order, in the same
		// script as the load: their units are theirs, not the first
		// claimer's.
		var again []seckill.ActiveClaim
		if snap.Sale.LobbyOpensAt != nil {
			unwritten, err := w.store.UnwrittenDrawOrders(ctx, id)
			if err != nil {
				return rewarmed, err
			}
			for _, e := range unwritten {
				again = append(again, seckill.ActiveClaim{UserID: e.UserID, OrderID: e.OrderID, Item: e.Item})
			}
		}
		// Every buyer answered 201 WAITING (and every entrant the draw
		// queued) and not served since goes back to their line, at their
		// place (docs/DESIGN.md invariant 10).
		waiting, err := w.store.WaitlistEntries(ctx, id)
		if err != nil {
			return rewarmed, err
		}
		spec := seckill.WarmSpecOf(snap.Sale, snap.Units)
		spec.Restocks = snap.Restocks // placed in Redis already, or not: the re-warm counts each once
		// New joins are numbered after every place the lines ever gave.
		if spec.LastPlace, err = w.store.WaitlistHighPlace(ctx, id); err != nil {
			return rewarmed, err
		}
		r, err := w.rstore.RewarmRebuilding(ctx, spec, claims, again, waiting, seckill.TermsBySKU(*snap.Sale))
		if err != nil {
			return rewarmed, fmt.Errorf("re-warm sale %d: %w", id, err)
		}
		if len(again) > 0 {
			w.log.Warn("admitted again the draw's entrants whose admissions Redis lost before their orders were written",
				"saleID", id, "admitted", r.Admitted, "of", len(again))
		}
		if r.Waiting > 0 {
			w.log.Warn("rebuilt the waiting lines Redis lost from the database", "saleID", id,
				"waiting", r.Waiting, "servedFromReloadedUnits", r.Served)
		}
		delete(w.lostSince, id)
		if r.Loaded {
			w.log.Warn("re-warmed a sale Redis had lost", "saleID", id, "units", snap.Units, "activeClaims", len(claims))
			rewarmed = append(rewarmed, id)
		}
	}
	return rewarmed, nil
}
