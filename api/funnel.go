package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// funnelFlushEvery is how often an API process adds its claim counts to
// the database.
const funnelFlushEvery = time.Second

// funnel counts this process's claim answers per sale and outcome in
// memory, and adds them to the database about once a second, so the sale
// statistics cost the claim path a map update, not a query. A process
// that dies loses at most its last second of counts.
type funnel struct {
	mu      sync.Mutex
	counts  map[int64]map[seckill.Outcome]int64
	soldOut map[int64]time.Time // first SOLD_OUT from the script, not yet stored
	stored  map[int64]bool      // sales whose sold-out time is stored
}

func newFunnel() *funnel {
	return &funnel{counts: map[int64]map[seckill.Outcome]int64{}, soldOut: map[int64]time.Time{}, stored: map[int64]bool{}}
}

func (f *funnel) add(sale int64, outcome seckill.Outcome) {
	f.mu.Lock()
	m := f.counts[sale]
	if m == nil {
		m = map[seckill.Outcome]int64{}
		f.counts[sale] = m
	}
	m[outcome]++
	f.mu.Unlock()
}

// markSoldOut notes when the script first refused a claim as sold out.
func (f *funnel) markSoldOut(sale int64, at time.Time) {
	f.mu.Lock()
	if _, ok := f.soldOut[sale]; !ok && !f.stored[sale] {
		f.soldOut[sale] = at
	}
	f.mu.Unlock()
}

// flush adds the counts to the database; on failure they are kept for the
// next flush, so none is lost while the database is away.
func (f *funnel) flush(ctx context.Context, st Store) error {
	f.mu.Lock()
	counts, soldOut := f.counts, f.soldOut
	f.counts, f.soldOut = map[int64]map[seckill.Outcome]int64{}, map[int64]time.Time{}
	f.mu.Unlock()
	// The sold-out time goes first: a reader who sees this flush's counts
	// (a SOLD_OUT among them) sees the sell-out too.
	var err error
	for sale, at := range soldOut {
		if serr := st.MarkSoldOut(ctx, sale, at); serr != nil {
			err = serr
			f.markSoldOut(sale, at)
			continue
		}
		f.mu.Lock()
		f.stored[sale] = true
		f.mu.Unlock()
	}
	if cerr := st.AddClaimCounts(ctx, counts); cerr != nil {
		err = cerr
		f.mu.Lock()
		for sale, m := range counts {
			for o, n := range m {
				if f.counts[sale] == nil {
					f.counts[sale] = map[seckill.Outcome]int64{}
				}
				f.counts[sale][o] += n
			}
		}
		f.mu.Unlock()
	}
	return err
}

// run flushes every funnelFlushEvery until ctx is done, then once more.
func (f *funnel) run(ctx context.Context, st Store, log *slog.Logger) {
	t := time.NewTicker(funnelFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := f.flush(fctx, st); err != nil {
				log.Warn("sale statistics: last flush failed; counts of the last second are lost", "error", err)
			}
			cancel()
			return
		case <-t.C:
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := f.flush(fctx, st); err != nil {
				log.Warn("sale statistics: flush failed; retrying with the next", "error", err)
			}
			cancel()
		}
	}
}
