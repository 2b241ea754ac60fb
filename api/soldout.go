package api

import (
	"sync"
	"time"
)

// SoldOutTTL is how long one process answers SOLD_OUT for a sale without
// asking Redis, after the admission script last said so. A unit that
// returns clears the flag at once through pub/sub; the expiry is the safety
// net for a message missed while the subscription was down.
const SoldOutTTL = time.Second

// soldOutFlags remembers, per sale, until when this process may answer
// SOLD_OUT without a Redis call. After a sale sells out nearly every claim
// is a loser's, and this keeps them off Redis.
type soldOutFlags struct {
	mu    sync.RWMutex
	until map[int64]time.Time
	ttl   time.Duration
}

func newSoldOutFlags(ttl time.Duration) *soldOutFlags {
	return &soldOutFlags{until: map[int64]time.Time{}, ttl: ttl}
}

// soldOut reports whether sale is flagged at now.
func (f *soldOutFlags) soldOut(sale int64, now time.Time) bool {
	f.mu.RLock()
	u, ok := f.until[sale]
	f.mu.RUnlock()
	return ok && now.Before(u)
}

// set flags sale until now + ttl.
func (f *soldOutFlags) set(sale int64, now time.Time) {
	f.mu.Lock()
	f.until[sale] = now.Add(f.ttl)
	f.mu.Unlock()
}

func (f *soldOutFlags) clear(sale int64) {
	f.mu.Lock()
	delete(f.until, sale)
	f.mu.Unlock()
}

func (f *soldOutFlags) clearAll() {
	f.mu.Lock()
	clear(f.until)
	f.mu.Unlock()
}
