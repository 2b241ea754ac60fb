package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill"
)

// Unavailable lets this package's tests check how an error is classified,
// for the SQLSTATEs a shared test server cannot be made to send.
func Unavailable(err error) error { return unavailable(err) }

// OpenTraced is Open with tracer on every connection's statements, for
// tests that count what the store sends.
func OpenTraced(ctx context.Context, dsn string, opts Options, tracer pgx.QueryTracer) (*Store, error) {
	return open(ctx, dsn, opts, tracer)
}

// EntryAsked is one buyer's entry for EnterBatch.
type EntryAsked struct {
	UserID string
	Item   seckill.Item
}

// EntryAnswer is what EnterBatch answered one buyer.
type EntryAnswer struct {
	Entry   *LobbyEntry
	Created bool
	Err     error
}

// EnterBatch writes asked as one batch of the group commit, as the
// committer does with entries that queued while others were written.
func (s *Store) EnterBatch(ctx context.Context, saleID int64, asked []EntryAsked) []EntryAnswer {
	reqs := make([]*entryRequest, len(asked))
	for i, a := range asked {
		reqs[i] = &entryRequest{ctx: ctx, saleID: saleID, userID: a.UserID, item: a.Item, done: make(chan entryResult, 1)}
	}
	s.entries.writeSale(saleID, reqs)
	out := make([]EntryAnswer, len(reqs))
	for i, r := range reqs {
		res := <-r.done
		out[i] = EntryAnswer{res.entry, res.created, res.err}
	}
	return out
}

// SetEntryQueueMax bounds the entries waiting for one sale to n.
func (s *Store) SetEntryQueueMax(n int) {
	s.entries.mu.Lock()
	defer s.entries.mu.Unlock()
	s.entries.queueMax = n
}

// EntryWritersBusy reports whether writers are writing or entries are
// waiting for the sale.
func (s *Store) EntryWritersBusy(saleID int64) bool {
	s.entries.mu.Lock()
	defer s.entries.mu.Unlock()
	return s.entries.sales[saleID] != nil
}

// EntriesQueued is how many entries wait for the sale's writers.
func (s *Store) EntriesQueued(saleID int64) int {
	s.entries.mu.Lock()
	defer s.entries.mu.Unlock()
	if q := s.entries.sales[saleID]; q != nil {
		return len(q.queue)
	}
	return 0
}

// EntryWriters is how many writers the sale's entries have.
func (s *Store) EntryWriters(saleID int64) int {
	s.entries.mu.Lock()
	defer s.entries.mu.Unlock()
	if q := s.entries.sales[saleID]; q != nil {
		return q.writers
	}
	return 0
}
