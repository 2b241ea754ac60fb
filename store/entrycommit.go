package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
)

// Group commit of lobby entries (issue 34): at the peak every entry is a
// buyer waiting for one commit, and a commit costs PostgreSQL a WAL flush
// whatever it holds. Entries that arrive while others are being written
// wait, and are written together, in one statement per sale: one round
// trip, one share lock on the sale's row, one flush for hundreds of
// buyers. Nobody is answered before their entry is committed, so an
// entry answered 201 survives a SIGKILL of the API or of PostgreSQL's
// connections, as a single commit does.
//
// There is no timer: an entry that finds fewer than entryWriters batches
// of its sale in flight is written at once (alone, at low load); the
// others queue, and each writer takes the whole queue (up to
// entryBatchMax) when its batch is done. Batches grow with the load and
// never wait on a clock. Each sale has its own queue and writers, so a
// sale whose row is held (the draw closing it) delays no other sale.
const (
	// entryWriters bounds the batches of one sale in flight, i.e. the
	// pool's connections one sale's lobby can hold at once.
	entryWriters = 4
	// entryBatchMax bounds one statement's entries.
	entryBatchMax = 1024
	// entryQueueMax bounds the entries waiting for a sale: beyond it an
	// entry is refused at once (ErrUnavailable, a 503 the buyer retries)
	// rather than queued behind a backlog PostgreSQL is not draining.
	entryQueueMax = 16 * entryBatchMax
	// entryBatchTimeout bounds one batch's statement: it is nobody's
	// request, so no request's deadline applies to it (each buyer still
	// stops waiting at their own).
	entryBatchTimeout = 10 * time.Second
)

// entryRequest is one buyer's entry waiting to be written.
type entryRequest struct {
	ctx    context.Context
	saleID int64
	userID string
	item   seckill.Item
	done   chan entryResult // buffered: the writer never waits on a buyer who left
}

type entryResult struct {
	entry   *LobbyEntry
	created bool
	err     error
}

// answer gives r its result; a request is answered once, and a second
// answer (after a writer's panic) is dropped.
func (r *entryRequest) answer(res entryResult) {
	select {
	case r.done <- res:
	default:
	}
}

// entryCommitter queues entries, per sale, and writes them in batches.
type entryCommitter struct {
	st    *Store
	mu    sync.Mutex
	sales map[int64]*saleEntries
	// queueMax bounds each sale's queue [entryQueueMax].
	queueMax int
}

// saleEntries are one sale's queue and the writers draining it.
type saleEntries struct {
	queue   []*entryRequest
	writers int
}

// enter queues r and waits for its batch, or for r's context.
func (c *entryCommitter) enter(r *entryRequest) (*LobbyEntry, bool, error) {
	r.done = make(chan entryResult, 1)
	c.mu.Lock()
	if c.sales == nil {
		c.sales = make(map[int64]*saleEntries)
	}
	q := c.sales[r.saleID]
	if q == nil {
		q = &saleEntries{}
		c.sales[r.saleID] = q
	}
	if limit := cmp.Or(c.queueMax, entryQueueMax); len(q.queue) >= limit {
		c.mu.Unlock()
		return nil, false, fmt.Errorf("enter the lobby of sale %d: %d entries already wait for the database: %w", r.saleID, limit, seckill.ErrUnavailable)
	}
	q.queue = append(q.queue, r)
	start := q.writers < entryWriters
	if start {
		q.writers++
	}
	c.mu.Unlock()
	if start {
		go c.write(r.saleID, q)
	}
	select {
	case res := <-r.done:
		return res.entry, res.created, res.err
	case <-r.ctx.Done():
		// The entry may still be written, if its batch was taken: the
		// buyer's retry finds it and is answered 200 with it, as after
		// any statement cut short.
		return nil, false, unavailable(fmt.Errorf("enter the lobby of sale %d: %w", r.saleID, r.ctx.Err()))
	}
}

// write writes batches from the sale's queue until it is empty. Requests
// whose buyer stopped waiting are dropped, not written: after an outage
// the writers do not spend the recovery on a backlog nobody waits for.
func (c *entryCommitter) write(saleID int64, q *saleEntries) {
	for {
		c.mu.Lock()
		var batch []*entryRequest
		for len(batch) < entryBatchMax && len(q.queue) > 0 {
			r := q.queue[0]
			q.queue[0] = nil
			q.queue = q.queue[1:]
			if r.ctx.Err() == nil {
				batch = append(batch, r)
			}
		}
		if len(q.queue) == 0 {
			q.queue = nil // let the backing array go
		}
		if len(batch) == 0 {
			q.writers--
			if q.writers == 0 && len(q.queue) == 0 {
				delete(c.sales, saleID)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.writeSafely(saleID, batch)
	}
}

// writeSafely is writeSale; a panic in it answers the batch with an
// error instead of taking the process down (fiber's recover does not
// reach a writer's goroutine).
func (c *entryCommitter) writeSafely(saleID int64, batch []*entryRequest) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("enter the lobby of sale %d: %v", saleID, p)
			for _, r := range batch {
				r.answer(entryResult{err: err})
			}
		}
	}()
	c.writeSale(saleID, batch)
}

// writeSale writes the entries of one sale in one statement. A buyer
// asking twice in one batch gets one entry: the first request made it
// (created), the others are answered with it.
func (c *entryCommitter) writeSale(saleID int64, reqs []*entryRequest) {
	first := make(map[string]*entryRequest, len(reqs))
	var users []string
	for _, r := range reqs {
		if _, ok := first[r.userID]; !ok {
			first[r.userID] = r
			users = append(users, r.userID)
		}
	}
	// Every batch inserts its buyers in one order: two batches holding
	// the same two buyers (two API processes, a retry) then wait on each
	// other in turn instead of deadlocking.
	slices.Sort(users)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqs[0].ctx), entryBatchTimeout)
	defer cancel()
	got, err := c.st.enterMany(ctx, saleID, users, func(u string) seckill.Item { return first[u].item })
	if isViolation(err, "23503", "") || isDataException(err) {
		// A row the database refuses (a variant the sale does not have, a
		// value out of range: the API checks both first, so this is
		// rare) fails the statement: write each alone, within its own
		// buyer's deadline, so that only that one is refused.
		for _, r := range reqs {
			e, created, err := c.st.enterOne(r.ctx, saleID, r.userID, r.item)
			r.answer(entryResult{e, created, err})
		}
		return
	}
	for _, r := range reqs {
		switch res, ok := got[r.userID]; {
		case err != nil:
			r.answer(entryResult{err: err})
		case !ok:
			r.answer(entryResult{err: fmt.Errorf("enter the lobby of sale %d: no answer for %s", saleID, r.userID)})
		case first[r.userID] != r: // the same buyer twice in the batch
			r.answer(entryResult{entry: res.entry, created: false, err: res.err})
		default:
			r.answer(res)
		}
	}
}

// entrySQL enters many buyers of one sale (enterMany's arguments).
const entrySQL = `WITH s AS (
			SELECT draw_state = $1 AND now() < starts_at AS open FROM sales WHERE id = $2 FOR SHARE
		), req AS (
			SELECT * FROM unnest($3::text[], $4::bytea[], $5::text[], $6::int[]) AS r(user_id, entry, sku, quantity)
		), prev AS (
			-- One look-up of the primary key per buyer (LATERAL), whatever
			-- the statistics of a lobby filling fast say of its size.
			SELECT req.user_id, p.entry, p.sku, p.quantity, p.rank, p.fits, p.outcome, p.order_id
			FROM req CROSS JOIN LATERAL (
				SELECT entry, sku, quantity, rank, fits, outcome, order_id
				FROM lobby_entries l WHERE l.sale_id = $2 AND l.user_id = req.user_id
			) p
		), ins AS (
			INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
			SELECT $2, req.user_id, req.entry, req.sku, req.quantity FROM req, s
			WHERE s.open AND NOT EXISTS (SELECT 1 FROM prev WHERE prev.user_id = req.user_id)
			ORDER BY req.user_id
			ON CONFLICT DO NOTHING
			RETURNING user_id, entry, sku, quantity
		)
		SELECT req.user_id, (SELECT open FROM s),
			i.entry, i.sku, i.quantity,
			p.entry, p.sku, p.quantity, p.rank, p.fits, p.outcome, p.order_id
		FROM req LEFT JOIN ins i ON i.user_id = req.user_id LEFT JOIN prev p ON p.user_id = req.user_id`

// enterMany is Enter's statement for many buyers of one sale at once:
// the share lock on the sale's row, the lobby's state, each buyer's
// entry, and an insert for each who has none while the lobby is open.
// users are distinct. It answers each user: their entry and whether this
// statement made it, or ErrLobbyClosed.
func (s *Store) enterMany(ctx context.Context, saleID int64, users []string, itemOf func(string) seckill.Item) (map[string]entryResult, error) {
	entries := make([][]byte, len(users))
	skus := make([]string, len(users))
	quantities := make([]int32, len(users))
	for i, u := range users {
		it := itemOf(u).OrDefault()
		if it.Quantity < 1 || it.Quantity > math.MaxInt32 {
			// Refused by the table's CHECK, as enterOne would be: the
			// batch falls back to writing each alone.
			return nil, &pgconn.PgError{Code: "22003", Message: fmt.Sprintf("quantity %d out of range", it.Quantity)}
		}
		entries[i], skus[i], quantities[i] = draw.NewEntry(), it.SKU, int32(it.Quantity)
	}
	out := make(map[string]entryResult, len(users))
	var raced []string
	err := s.freshPlan(ctx, func(conn *pgx.Conn) error {
		// Planned at each batch: a lobby fills at thousands a second, far
		// faster than autovacuum updates what the planner knows of it.
		// pgx takes Go slices as PostgreSQL arrays.
		rows, err := conn.Query(ctx, entrySQL, pgx.QueryExecModeExec,
			seckill.DrawOpen, saleID, users, entries, skus, quantities)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				user                      string
				open                      *bool
				newEntry, prevEntry       []byte
				newSKU, prevSKU           *string
				newQuantity, prevQuantity *int
				prev                      lobbyEntryRow
			)
			if err := rows.Scan(&user, &open, &newEntry, &newSKU, &newQuantity,
				&prevEntry, &prevSKU, &prevQuantity, &prev.Rank, &prev.Fits, &prev.Outcome, &prev.OrderID); err != nil {
				return err
			}
			switch {
			case newEntry != nil:
				row := lobbyEntryRow{SaleID: saleID, UserID: user, Entry: newEntry, SKU: *newSKU, Quantity: *newQuantity}
				out[user] = entryResult{entry: row.entry(), created: true}
			case prevEntry != nil:
				prev.SaleID, prev.UserID, prev.Entry, prev.SKU, prev.Quantity = saleID, user, prevEntry, *prevSKU, *prevQuantity
				out[user] = entryResult{entry: prev.entry()}
			case open == nil || !*open:
				out[user] = entryResult{err: seckill.ErrLobbyClosed}
			default:
				raced = append(raced, user)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, unavailable(fmt.Errorf("enter the lobby of sale %d: %w", saleID, err))
	}
	// A first entry of the same buyer from elsewhere (another API
	// process), committed after this statement's snapshot: its entry is
	// the buyer's.
	for _, u := range raced {
		e, err := s.LobbyEntryOf(ctx, saleID, u)
		if err != nil {
			err = fmt.Errorf("enter the lobby of sale %d: %w", saleID, err)
		}
		out[u] = entryResult{entry: e, err: err}
	}
	return out, nil
}
