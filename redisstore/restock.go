package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// restockChunk bounds the waiting buyers one restock script serves, in
// segment 0 and through the moves it parks for the other segments, so
// one script stays short however long the line is: a longer line is
// served over several scripts, first come first served.
const restockChunk = 1000

// restockSlack is the order ids a restock script gets beyond the buyers
// the caller saw waiting in segment 0, for those who join between the
// caller's read and the script: served at once rather than left waiting
// while the rest of the units go to the stock.
const restockSlack = 8

// restockStalls bounds the scripts in a row that place nothing (the
// buyers planned for left the line meanwhile, or another call placed the
// units the plan was for) before Restock gives up and says so; a retry
// goes on where it stopped.
const restockStalls = 8

// errRestockStalled is Restock's answer when restockStalls scripts in a
// row placed nothing.
var errRestockStalled = errors.New("redisstore: the restock's waitlist kept changing under it; try again")

// Restock is the Redis half of restock r of variant r.SKU (the database
// counts its units already), once per r.ID however often it is run: its
// units go to the buyers waiting in the variant's line first, each as a
// new order numbered by nextID on terms (an admission the outbox relay
// starts, as a release's), and the rest to the stock for open claims,
// telling every API process the sale has stock again (RestockChannel).
//
// On a sale of one segment each script is release.lua's loop. On a sale
// of several, the buyers who joined first are found across the segments;
// the units owed to those of segment p > 0 are parked in segment 0 as a
// move aimed at p (counted in flight, so no unit is ever nowhere) and
// landed there (give.lua, the move protocol of moves.go), and the rest
// are placed in segment 0: the stock of the others borrows from it as
// claims come. A line longer than one script's share is served by
// several scripts in turn.
//
// RestockNotWarmed: segment 0 does not hold the variant's stock; nothing
// happened, and the caller runs it again once re-warm has loaded the sale
// (without this restock's units: store.WarmSnapshot). On an error the
// outcome is unknown, as with Claim: run it again. Outcome is set to an
// applied one as soon as every unit is placed, even when landing a move
// then failed (its units are in flight, counted, and FinishMoves lands
// them).
func (s *Store) Restock(ctx context.Context, r seckill.Restock, terms seckill.Terms, nextID func() (int64, error)) (seckill.Restocked, error) {
	return s.restock(ctx, r, terms, nextID, restockChunk)
}

// restock is Restock serving at most chunk waiting buyers per script.
func (s *Store) restock(ctx context.Context, r seckill.Restock, terms seckill.Terms, nextID func() (int64, error), chunk int64) (seckill.Restocked, error) {
	if r.Added <= 0 || r.ID <= 0 {
		return seckill.Restocked{}, fmt.Errorf("restock %d of sale %d: %d units", r.ID, r.SaleID, r.Added)
	}
	sku := seckill.Item{SKU: r.SKU}.OrDefault().SKU
	n, err := s.Segments(ctx, r.SaleID)
	if err != nil {
		return seckill.Restocked{}, err
	}
	var out seckill.Restocked
	for stalls := 0; ; {
		step, err := s.restockStep(ctx, r, sku, n, terms, nextID, chunk)
		out.HandedTo = append(out.HandedTo, step.handed...)
		switch {
		case step.code == 1:
			out.Outcome = seckill.RestockAppliedNow
		case step.before:
			out.Outcome = seckill.RestockAppliedBefore
		}
		if err != nil || out.Applied() {
			return out, err
		}
		if step.code == 3 {
			out.Outcome = seckill.RestockNotWarmed
			return out, nil
		}
		// 2: more to place; 4: another run placed some since the read.
		if step.progress {
			stalls = 0
		} else if stalls++; stalls >= restockStalls {
			return out, errRestockStalled
		}
	}
}

// restockStepped is what one restock script did: code as restock.lua
// answers, whether every unit had been placed before it (no script then),
// whether it placed units, and the buyers it (and the landing of moves)
// gave one to.
type restockStepped struct {
	code     int64
	before   bool
	progress bool
	handed   []seckill.Admission
}

// restockStep plans the next share of restock r's units and places it:
// one restock.lua, then the landing of the moves it parked.
//
// The moves of the restock still parked (another run's, running or
// stopped, or an earlier call's) are landed first: the plan then reads a
// line without the buyers they are owed to, or a second run would plan
// units for them too, and those units would land where nobody waits for
// them while a buyer elsewhere does. A run that parks after this one read
// the count makes this one's script refuse (4): it plans again.
func (s *Store) restockStep(ctx context.Context, r seckill.Restock, sku string, n int, terms seckill.Terms, nextID func() (int64, error), chunk int64) (restockStepped, error) {
	k := s.SaleKeys(r.SaleID).Variant(sku)
	restocks := restocksKey(k)
	placed, err := s.rdb.HGet(ctx, restocks, strconv.FormatInt(r.ID, 10)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return restockStepped{}, fmt.Errorf("read restock %d: %w", r.ID, err)
	}
	left := r.Added - placed
	step := restockStepped{before: left <= 0}
	if step.handed, err = s.landRestockMoves(ctx, r, sku, n, terms, nextID); err != nil {
		return step, err
	}
	step.progress = len(step.handed) > 0
	if step.before {
		return step, nil
	}
	owed, served, final, err := s.restockPlan(ctx, r.SaleID, sku, n, left, chunk)
	if err != nil {
		return step, err
	}
	type parked struct {
		id    string
		dest  int
		units int64
	}
	var moves []parked
	var inMoves int64
	for p := 1; p < n; p++ {
		if owed[p] > 0 {
			moves = append(moves, parked{id: restockMoveID(r.ID, placed, p), dest: p, units: owed[p]})
			inMoves += owed[p]
		}
	}
	// Segment 0 gets the units planned for its buyers, an order id for
	// each of them, or, when the plan covers everyone, every unit left
	// (-1) and ids for those who join meanwhile too.
	here, ids := owed[0], served[0]
	if final {
		here, ids = -1, ids+restockSlack
	}
	args := append([]any{r.ID, r.Added, placed, s.RestockChannel(), r.SaleID}, termArgs(terms)...)
	args = append(args, sku, here, len(moves))
	for _, m := range moves {
		args = append(args, m.id, m.dest, m.units)
	}
	for range ids {
		id, err := nextID()
		if err != nil {
			return step, err
		}
		args = append(args, id)
	}
	var res []any
	// Waits for the replicas like a release: lost in a failover, the
	// units would be missing from Redis (or from the buyers they went to)
	// while the restock's count says they were placed. On ErrNotReplicated
	// the caller runs it again, which finds what survived.
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if res, err = restockScript.Run(ctx, c,
			[]string{k.Stock, k.Claims, k.Meta, k.Outbox, k.Admitted, k.Wait, k.Waited, k.Moves, restocks, k.Units, k.Lines, k.Held},
			args...).Slice(); err != nil {
			return false, fmt.Errorf("restock script: %w", err)
		}
		code, _ := res[0].(int64)
		return code == 1 || code == 2, nil
	})
	if err != nil {
		return step, err
	}
	step.code, _ = res[0].(int64)
	if step.code != 1 && step.code != 2 {
		return step, nil
	}
	if len(res) < 2 || (len(res)-2)%3 != 0 {
		return step, fmt.Errorf("restock script: unexpected reply %v", res)
	}
	handed, err := parseHanded(r.SaleID, sku, res[2:])
	if err != nil {
		return step, fmt.Errorf("restock script: %w", err)
	}
	step.handed = append(step.handed, handed...)
	step.progress = step.progress || step.code == 1 || len(handed) > 0 || len(moves) > 0
	// The moves land before the next share is planned, so the buyers
	// they are owed to are out of the line by then.
	for _, m := range moves {
		handed, err := s.landRestockMove(ctx, r.SaleID, n, sku, m.id, move{Units: m.units, Dest: m.dest}, terms, nextID)
		step.handed = append(step.handed, handed...)
		if err != nil {
			return step, err
		}
	}
	return step, nil
}

// restockPlan plans units of variant sku of saleID (of n segments) for
// the first buyers waiting for it, at most buyers of them, first come
// first served across the segments, each for their outstanding quantity
// (the quantity they wait for, less the units held for them when they
// head their segment's line): owed is the units planned for each
// segment, served the buyers of each it plans for (the order ids it
// needs), and final is true when the plan covers every buyer waiting and
// units are left over (for the stock).
func (s *Store) restockPlan(ctx context.Context, saleID int64, sku string, n int, units, buyers int64) (owed, served []int64, final bool, err error) {
	heads := make([]*redis.ZSliceCmd, n)
	held := make([]*redis.StringCmd, n)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range n {
			k := s.SegmentKeys(saleID, q).Variant(sku)
			heads[q] = p.ZRangeWithScores(ctx, k.Wait, 0, buyers)
			held[q] = p.Get(ctx, k.Held)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, false, fmt.Errorf("read the waitlists: %w", err)
	}
	type waiter struct {
		user string
		seq  float64
		seg  int
		head bool
		q    int64
	}
	var all []waiter
	lines := make([]*redis.SliceCmd, n)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q, h := range heads {
			var users []string
			for i, z := range h.Val() {
				u := fmt.Sprint(z.Member)
				users = append(users, u)
				all = append(all, waiter{user: u, seq: z.Score, seg: q, head: i == 0, q: 1})
			}
			if len(users) > 0 {
				lines[q] = p.HMGet(ctx, s.SegmentKeys(saleID, q).Lines, users...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("read the waiting buyers' quantities: %w", err)
	}
	at := make([]int, n)
	for i := range all {
		w := &all[i]
		if c := lines[w.seg]; c != nil {
			if v, ok := c.Val()[at[w.seg]].(string); ok {
				if _, q, ok := lineOf(v); ok {
					w.q = int64(q)
				}
			}
		}
		at[w.seg]++
	}
	// Segment 0 numbers the joins of every segment: one order.
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	owed, served = make([]int64, n), make([]int64, n)
	left := units
	for i := int64(0); i < buyers && i < int64(len(all)) && left > 0; i++ {
		w := all[i]
		need := w.q
		if w.head {
			h, _ := held[w.seg].Int64()
			need = max(need-h, 0)
		}
		give := min(need, left)
		owed[w.seg] += give
		served[w.seg]++
		left -= give
	}
	return owed, served, left > 0 && int64(len(all)) <= buyers, nil
}

// landRestockMove lands restock move id (m, parked in segment 0 of a sale
// of n segments) in its segment, with an order id for each of its units.
func (s *Store) landRestockMove(ctx context.Context, saleID int64, n int, sku, id string, m move, terms seckill.Terms, nextID func() (int64, error)) ([]seckill.Admission, error) {
	orders := make([]int64, m.Units)
	for i := range orders {
		var err error
		if orders[i], err = nextID(); err != nil {
			return nil, err
		}
	}
	return s.land(ctx, saleID, n, 0, sku, id, m, orders, terms)
}

// landRestockMoves lands the moves restock r parked in segment 0 that are
// still there: a run that parked them is landing them now, or stopped
// before it did. Each lands once (give.lua's moved set).
func (s *Store) landRestockMoves(ctx context.Context, r seckill.Restock, sku string, n int, terms seckill.Terms, nextID func() (int64, error)) ([]seckill.Admission, error) {
	if n <= 1 {
		return nil, nil
	}
	records, err := s.rdb.HGetAll(ctx, s.SaleKeys(r.SaleID).Variant(sku).Moves).Result()
	if err != nil {
		return nil, fmt.Errorf("read the moves of restock %d: %w", r.ID, err)
	}
	prefix := restockMoveID(r.ID, -1, 0)
	ids := make([]string, 0, len(records))
	for id := range records {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out []seckill.Admission
	for _, id := range ids {
		m, err := parseMove(records[id])
		if err != nil {
			return out, err
		}
		handed, err := s.landRestockMove(ctx, r.SaleID, n, sku, id, m, terms, nextID)
		out = append(out, handed...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// restockMoveID names the move restock id parks for segment dest when
// placed of its units were placed before: "k<id>.<placed>.<dest>", one
// name per script and segment. With placed < 0 it is the prefix of every
// move of the restock, "k<id>.".
func restockMoveID(id, placed int64, dest int) string {
	prefix := "k" + strconv.FormatInt(id, 10) + "."
	if placed < 0 {
		return prefix
	}
	return prefix + strconv.FormatInt(placed, 10) + "." + strconv.Itoa(dest)
}

// restocksKey is the hash of segment k's restocks (restock id -> units
// placed), kept with the sale's keys.
func restocksKey(k Keys) string { return k.tag() + "restocks" }

// RestocksPlaced reads how many units of each of saleID's restocks Redis
// has placed (restock id -> units; restock.lua's record in segment 0,
// and re-warm's): a restock the database counts and this map does not
// cover whole is in flight between its halves.
func (s *Store) RestocksPlaced(ctx context.Context, saleID int64) (map[int64]int64, error) {
	raw, err := s.rdb.HGetAll(ctx, restocksKey(s.SaleKeys(saleID))).Result()
	if err != nil {
		return nil, fmt.Errorf("read the restocks placed: %w", err)
	}
	out := make(map[int64]int64, len(raw))
	for id, v := range raw {
		i, err1 := strconv.ParseInt(id, 10, 64)
		u, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("restocks of sale %d: malformed %q: %q", saleID, id, v)
		}
		out[i] = u
	}
	return out, nil
}
