package api

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
)

// negativeTTL is how long "no such sale" is remembered, so a flood of
// claims for an unknown id costs one query per second, not one per claim.
const (
	negativeTTL = time.Second
	maxMisses   = 10_000
)

// saleCache keeps the immutable part of sales (window, price, timeout) in
// process: the claim path reads it without touching Postgres.
type saleCache struct {
	store Store
	group singleflight.Group
	mu    sync.RWMutex
	sales map[int64]*seckill.Sale
	miss  map[int64]time.Time // id -> until when it is known missing
	// loaded is told every sale the cache learns (nil: nobody).
	loaded func(*seckill.Sale)
}

func newSaleCache(st Store, loaded func(*seckill.Sale)) *saleCache {
	return &saleCache{store: st, sales: map[int64]*seckill.Sale{}, miss: map[int64]time.Time{}, loaded: loaded}
}

// get returns a copy of the sale's immutable fields (its Stock is not
// current), or seckill.ErrNotFound. A copy: the caller may change it without
// touching what other requests read.
func (sc *saleCache) get(ctx context.Context, id int64) (seckill.Sale, error) {
	sc.mu.RLock()
	sale, ok := sc.sales[id]
	missUntil, missing := sc.miss[id]
	sc.mu.RUnlock()
	if ok {
		return *sale, nil
	}
	if missing && time.Now().Before(missUntil) {
		return seckill.Sale{}, seckill.ErrNotFound
	}
	v, err, _ := sc.group.Do(strconv.FormatInt(id, 10), func() (any, error) {
		sale, err := sc.store.Sale(ctx, id)
		sc.mu.Lock()
		defer sc.mu.Unlock()
		switch {
		case err == nil:
			sc.sales[id] = sale
			delete(sc.miss, id)
			if sc.loaded != nil {
				sc.loaded(sale)
			}
		case isNotFound(err):
			now := time.Now()
			if len(sc.miss) >= maxMisses { // garbage ids must not grow memory
				for k, until := range sc.miss {
					if now.After(until) {
						delete(sc.miss, k)
					}
				}
			}
			if len(sc.miss) < maxMisses {
				sc.miss[id] = now.Add(negativeTTL)
			}
		}
		return sale, err
	})
	if err != nil {
		return seckill.Sale{}, err
	}
	return *v.(*seckill.Sale), nil
}

// put records (a copy of) a sale just created.
func (sc *saleCache) put(sale *seckill.Sale) {
	own := *sale
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.sales[sale.ID] = &own
	delete(sc.miss, sale.ID)
	if sc.loaded != nil {
		sc.loaded(&own)
	}
}
