package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// OpenClaims opens a sale whose draw is done to claims and joins from
// startsAt on, in every loaded segment (one not loaded is loaded open by
// the re-warm, which reads the database's drawn sale). Idempotent.
func (s *Store) OpenClaims(ctx context.Context, saleID int64, startsAt time.Time) error {
	keys, err := s.allKeys(ctx, saleID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		// Waits for the replicas: a failover that lost it would hold the
		// drawn sale's claims back.
		err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
			return true, openScript.Run(ctx, c, []string{k.Meta}, startsAt.UnixMilli()).Err()
		})
		if err != nil {
			return fmt.Errorf("open claims of sale %d: %w", saleID, err)
		}
	}
	return nil
}

// share is segment p's share of units split over n segments: as even as can be,
// the first segments holding one more.
func share(units int64, n, p int) int64 {
	q, r := units/int64(n), units%int64(n)
	if int64(p) < r {
		return q + 1
	}
	return q
}

// Warm loads spec into Redis, each variant's units split evenly over the
// sale's segments, unless the sale is live (a live counter is never
// overwritten), and lists the sale for the relay. It reports whether it
// loaded segment 0 now.
func (s *Store) Warm(ctx context.Context, spec seckill.WarmSpec) (bool, error) {
	if len(spec.Variants) == 0 {
		return false, errors.New("warm: a sale of no variant")
	}
	for _, v := range spec.Variants {
		if v.Units < 0 || !seckill.ValidSKU(v.SKU) {
			return false, fmt.Errorf("warm: bad variant %q with %d units", v.SKU, v.Units)
		}
	}
	n := max(spec.Segments, 1)
	expire := spec.EndsAt.Add(KeyRetention)
	var first bool
	for p := range n {
		k := s.SegmentKeys(spec.SaleID, p)
		keys := []string{k.Meta, k.Outbox}
		args := []any{spec.StartsAt.UnixMilli(), spec.EndsAt.UnixMilli(), expire.UnixMilli(), RelayGroup, n, presaleArg(spec)}
		for _, v := range spec.Variants {
			keys = append(keys, k.Variant(v.SKU).Stock)
			args = append(args, v.SKU, share(v.Units, n, p))
		}
		loaded, err := warmScript.Run(ctx, s.rdb, keys, args...).Int()
		if err != nil {
			return false, fmt.Errorf("warm script: %w", err)
		}
		if p == 0 {
			first = loaded == 1
		}
	}
	s.rememberSegments(spec.SaleID, n)
	s.KnowSKUs(spec.SaleID, spec.SKUs())
	if err := s.listForRelay(ctx, spec); err != nil {
		return false, err
	}
	return first, nil
}

// presaleArg is the presale_ms warm.lua and rewarm.lua write to meta: the
// presale's start in unix milliseconds, or "" for a sale without one.
func presaleArg(spec seckill.WarmSpec) string {
	if spec.PresaleStartsAt.IsZero() {
		return ""
	}
	return strconv.FormatInt(spec.PresaleStartsAt.UnixMilli(), 10)
}

// listForRelay lists the sale for the relay, which watches a sale's outbox
// until every claim of it has been relayed; claims stop at EndsAt, so a day
// past it is ample.
func (s *Store) listForRelay(ctx context.Context, spec seckill.WarmSpec) error {
	if err := s.rdb.ZAdd(ctx, s.ActiveSalesKey(), redis.Z{
		Score:  float64(spec.EndsAt.Add(24 * time.Hour).UnixMilli()),
		Member: strconv.FormatInt(spec.SaleID, 10),
	}).Err(); err != nil {
		return fmt.Errorf("list sale for relay: %w", err)
	}
	return nil
}

// Rewarm loads the segments of a sale whose keys Redis lost (restarted empty,
// or a Cluster primary lost with no replica) from a database snapshot:
// spec.Variants are the units Redis should hold in all, per variant; the
// segments still live keep theirs (and their units in flight), the lost
// ones share the rest, and get back the claims of their buyers' active
// orders. It does nothing when every segment is live, and reports whether
// it loaded any now.
func (s *Store) Rewarm(ctx context.Context, spec seckill.WarmSpec, claims []seckill.ActiveClaim) (bool, error) {
	loaded, _, err := s.RewarmAdmitting(ctx, spec, claims, nil, func(string) seckill.Terms { return seckill.Terms{} })
	return loaded, err
}

// RewarmAdmitting is Rewarm that also admits again, on the terms of their
// variant (termsOf), each with its order and its units of spec's, the
// admissions of again that Redis lost before their orders were written (a
// drawn sale's winners), in the same script as the load of their segment,
// so no claim takes their units first. A buyer who holds a claim already
// keeps it. It reports how many it admitted again.
func (s *Store) RewarmAdmitting(ctx context.Context, spec seckill.WarmSpec, claims, again []seckill.ActiveClaim, termsOf func(sku string) seckill.Terms) (loaded bool, admitted int, err error) {
	r, err := s.RewarmRebuilding(ctx, spec, claims, again, nil, termsOf)
	return r.Loaded, r.Admitted, err
}

// Rewarmed is what RewarmRebuilding did.
type Rewarmed struct {
	// Loaded is set when it loaded a segment now.
	Loaded bool
	// Admitted are the admissions it made again.
	Admitted int
	// Waiting are the buyers it put back in line, and Served those of
	// them the reloaded stock served at once.
	Waiting, Served int
}

// RewarmRebuilding is RewarmAdmitting that also rebuilds, in each segment
// it loads, the lines Redis lost (docs/DESIGN.md invariant 10): each buyer
// of waiting (the database's rows, in join order) whose home segment it
// is, who holds no claim and is not admitted again, goes back to their
// variant's line at their place, and the segment's reloaded stock of the
// variant goes to the line first, as units that came back do: the heads
// it covers are admitted with the order ids their rows carry, and
// units too few for the next head are held for them. A segment still live
// keeps its own lines.
func (s *Store) RewarmRebuilding(ctx context.Context, spec seckill.WarmSpec, claims, again []seckill.ActiveClaim, waiting []seckill.WaitlistEntry, termsOf func(sku string) seckill.Terms) (r Rewarmed, err error) {
	r.Loaded, r.Admitted, r.Waiting, r.Served, err = s.rewarm(ctx, spec, claims, again, waiting, termsOf)
	return r, err
}

func (s *Store) rewarm(ctx context.Context, spec seckill.WarmSpec, claims, again []seckill.ActiveClaim, waiting []seckill.WaitlistEntry, termsOf func(sku string) seckill.Terms) (loaded bool, admitted, back, served int, err error) {
	if len(spec.Variants) == 0 {
		return false, 0, 0, 0, errors.New("rewarm: a sale of no variant")
	}
	n := max(spec.Segments, 1)
	s.rememberSegments(spec.SaleID, n)
	s.KnowSKUs(spec.SaleID, spec.SKUs())
	live, placed, err := s.liveWithRestocks(ctx, spec, n)
	if err != nil {
		return false, 0, 0, 0, err
	}
	// The first variant's counter marks a segment live (warm.lua): the
	// counters of one segment are written, and lost, together.
	var lost []int
	isLost := make([]bool, n)
	for p, st := range live[spec.Variants[0].SKU].stock {
		if st < 0 {
			lost, isLost[p] = append(lost, p), true
		}
	}
	if len(lost) == 0 {
		return false, 0, 0, 0, s.listForRelay(ctx, spec)
	}
	// What the lost segments share of each variant: the database's units
	// less what the live segments hold and have in flight. A move aimed at
	// a lost segment may have reached it or not: its moved set went with
	// it. Either way its units are the database's now, and the lost
	// segment is loaded with them: the record is dropped, so it is neither
	// counted in flight here nor landed again later. A mover may still
	// hold the move in memory (a restock's, a hand-over's or a borrow's
	// give follows its take; FinishMoves lands what it read): its id goes
	// back into the lost segment's moved set first, before the segment is
	// loaded, so that give finds it given (give.lua answers 0) and only
	// forgets the record, rather than handing the units out a second time
	// (hostile review R1).
	//
	// The database's units leave out its restocks not marked applied
	// (spec.Restocks): what Redis placed of them is Redis' already, and
	// is added back. With segment 0 live its restocks hash tells what
	// (and restock.lua places the rest there later); with segment 0 lost
	// the record went with it, so the load counts each such restock whole,
	// wherever its units went, and records it placed in the same script:
	// its Redis half places nothing again. Either way each unit of a
	// restock is counted once.
	restocked := make(map[string]int64, len(spec.Variants))
	var whole []any
	for _, r := range spec.Restocks {
		sku := seckill.Item{SKU: r.SKU}.OrDefault().SKU
		if isLost[0] {
			restocked[sku] += r.Added
			whole = append(whole, r.ID, r.Added)
		} else {
			restocked[sku] += min(placed[r.ID], r.Added)
		}
	}
	units := make(map[string]int64, len(spec.Variants))
	for _, v := range spec.Variants {
		h := live[v.SKU]
		// v.Units may be below zero: orders hold units of a restock the
		// database does not count yet; they come back with restocked.
		u := v.Units + restocked[v.SKU]
		for p, st := range h.stock {
			if !isLost[p] {
				u -= max(st, 0) + h.held[p]
			}
		}
		for i := range h.moves {
			if m := &h.moves[i]; m.Dest >= 0 && m.Dest < n && isLost[m.Dest] {
				moved := s.SegmentKeys(spec.SaleID, m.Dest).Variant(v.SKU).Moved
				if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.SAdd(ctx, moved, m.id)
					p.PExpireAt(ctx, moved, spec.EndsAt.Add(KeyRetention))
					return nil
				}); err != nil {
					return false, 0, 0, 0, fmt.Errorf("mark move %s into a lost segment given: %w", m.id, err)
				}
				if err := s.rdb.HDel(ctx, s.SegmentKeys(spec.SaleID, m.from).Variant(v.SKU).Moves, m.id).Err(); err != nil {
					return false, 0, 0, 0, fmt.Errorf("drop move %s into a lost segment: %w", m.id, err)
				}
				m.given = true // not in flight
			}
		}
		units[v.SKU] = max(u-h.inFlight(), 0)
	}
	expire := spec.EndsAt.Add(KeyRetention)
	var lastJoin int64
	if n > 1 && isLost[0] {
		if lastJoin, err = s.lastJoin(ctx, spec.SaleID, spec.SKUs(), n); err != nil {
			return false, 0, 0, 0, err
		}
	}
	// Joins after the re-warm are numbered after every place given before:
	// put back, or recorded by the database though served or left since
	// (hostile review R2: a join given an old place again).
	lastJoin = max(lastJoin, spec.LastPlace)
	for _, w := range waiting {
		lastJoin = max(lastJoin, w.Place)
	}
	inSegment := func(cs []seckill.ActiveClaim, p int) []seckill.ActiveClaim {
		var out []seckill.ActiveClaim
		for _, c := range cs {
			if segmentOf(c.UserID, n) == p {
				c.Item = c.Item.OrDefault()
				out = append(out, c)
			}
		}
		return out
	}
	// A buyer holding an active order keeps it: no unit is kept for them.
	holds := make(map[string]bool, len(claims))
	for _, c := range claims {
		holds[c.UserID] = true
	}
	again = slices.DeleteFunc(slices.Clone(again), func(c seckill.ActiveClaim) bool { return holds[c.UserID] })
	// Nor does one admitted again wait: the rest go back to their lines,
	// in join order.
	for _, c := range again {
		holds[c.UserID] = true
	}
	lines := slices.DeleteFunc(slices.Clone(waiting), func(w seckill.WaitlistEntry) bool { return holds[w.UserID] })
	slices.SortStableFunc(lines, func(a, b seckill.WaitlistEntry) int {
		return cmp.Or(cmp.Compare(a.Place, b.Place), strings.Compare(a.UserID, b.UserID))
	})
	// Each admission made again takes its units in its own segment: the
	// lost segments share what is left of each variant after them.
	reserved := make([]map[string]int64, len(lost))
	shared := maps.Clone(units)
	for i, p := range lost {
		reserved[i] = map[string]int64{}
		for _, c := range inSegment(again, p) {
			q := min(int64(c.Item.Quantity), shared[c.Item.SKU])
			reserved[i][c.Item.SKU] += q
			shared[c.Item.SKU] -= q
		}
	}
	for i, p := range lost {
		k := s.SegmentKeys(spec.SaleID, p)
		mine, agains := inSegment(claims, p), inSegment(again, p)
		first := termsOf(spec.Variants[0].SKU)
		keys := []string{k.Meta, k.Outbox, k.Claims, k.Admitted, k.Waited, k.Units, k.Lines}
		args := []any{spec.StartsAt.UnixMilli(), spec.EndsAt.UnixMilli(), expire.UnixMilli(), RelayGroup, n, lastJoin,
			spec.SaleID, first.PaymentTimeout.Milliseconds(), first.Currency, presaleArg(spec), len(spec.Variants)}
		for _, v := range spec.Variants {
			kv := k.Variant(v.SKU)
			keys = append(keys, kv.Stock, kv.Wait, kv.Held)
			args = append(args, v.SKU, share(shared[v.SKU], len(lost), i)+reserved[i][v.SKU], termsOf(v.SKU).UnitPriceCents)
		}
		keys = append(keys, restocksKey(k))
		if p == 0 {
			args = append(append(args, len(whole)/2), whole...)
		} else {
			args = append(args, 0)
		}
		args = append(args, len(mine))
		for _, c := range mine {
			args = append(args, c.UserID, c.OrderID, c.Item.SKU, c.Item.Quantity)
		}
		args = append(args, len(agains))
		for _, c := range agains {
			args = append(args, c.UserID, c.OrderID, c.Item.SKU, c.Item.Quantity)
		}
		for _, w := range lines {
			if segmentOf(w.UserID, n) == p {
				it := w.Item.OrDefault()
				args = append(args, w.UserID, w.OrderID, it.SKU, it.Quantity, w.Place)
			}
		}
		res, err := rewarmScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
		if err != nil {
			return false, admitted, back, served, fmt.Errorf("rewarm script: %w", err)
		}
		if len(res) != 4 {
			return false, admitted, back, served, fmt.Errorf("rewarm script: unexpected reply %v", res)
		}
		loaded = loaded || res[0] == 1
		admitted += int(res[1])
		back += int(res[2])
		served += int(res[3])
	}
	if err := s.listForRelay(ctx, spec); err != nil {
		return false, admitted, back, served, err
	}
	return loaded, admitted, back, served, nil
}

// liveWithRestocks reads what the segments of spec's sale (of n) hold of
// each variant (stableHolding) and, when spec names restocks not marked
// applied, the units segment 0's restocks hash says were placed of each
// (restock id -> units), read before and after the holdings until the two
// agree: a restock placed between the reads would otherwise be counted
// in the live segments and still left out of the database's units.
func (s *Store) liveWithRestocks(ctx context.Context, spec seckill.WarmSpec, n int) (map[string]holding, map[int64]int64, error) {
	readPlaced := func() (map[int64]int64, error) {
		if len(spec.Restocks) == 0 {
			return nil, nil
		}
		return s.RestocksPlaced(ctx, spec.SaleID)
	}
	for range stableReads {
		before, err := readPlaced()
		if err != nil {
			return nil, nil, err
		}
		live := make(map[string]holding, len(spec.Variants))
		for _, v := range spec.Variants {
			if live[v.SKU], err = s.stableHolding(ctx, spec.SaleID, v.SKU, n); err != nil {
				return nil, nil, err
			}
		}
		after, err := readPlaced()
		if err != nil {
			return nil, nil, err
		}
		if maps.Equal(before, after) {
			return live, after, nil
		}
	}
	return nil, nil, errStillMoving
}

// lastJoin is the highest join sequence in the waitlists (every variant's
// line, skus) of saleID's n segments (0 when nobody waits).
func (s *Store) lastJoin(ctx context.Context, saleID int64, skus []string, n int) (int64, error) {
	var tails []*redis.ZSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range n {
			for _, sku := range skus {
				tails = append(tails, p.ZRangeWithScores(ctx, s.SegmentKeys(saleID, q).Variant(sku).Wait, -1, -1))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the waitlists' tails: %w", err)
	}
	var last int64
	for _, t := range tails {
		if z := t.Val(); len(z) == 1 {
			last = max(last, int64(z[0].Score))
		}
	}
	return last, nil
}

// holding is what Redis holds of one variant of a sale at one read: each
// segment's stock of it, the moves of its units whose records are kept,
// and, when asked, the units each segment's claims hold of it. It is the one count of "units Redis holds"
// (docs/DESIGN.md invariant 7): reconciliation, re-warm, the audit, the
// stats and the health gauges all read it.
type holding struct {
	stock  []int64 // per segment; -1 for a segment Redis does not hold
	moves  []pending
	claims []int64 // per segment, the units its claims hold; nil unless holdings was asked for them
	held   []int64 // per segment, the units held for the head of its line
}

// waiting is the units held for waiting buyers (not admissible).
func (h holding) waiting() int64 {
	var n int64
	for _, v := range h.held {
		n += v
	}
	return n
}

// pending is a move record as read, with whether its units reached their
// destination already (its id is in the destination's moved set: only
// the record is left to forget, and the units count there, not here).
type pending struct {
	move
	from  int
	id    string
	sku   string
	given bool
}

// inFlight is the units taken from a segment and not yet given to another.
func (h holding) inFlight() int64 {
	var n int64
	for _, m := range h.moves {
		if !m.given {
			n += m.Units
		}
	}
	return n
}

// total is the units the segments hold and have in flight, each once; ok is
// false when a segment is missing (the sale is not warmed).
func (h holding) total() (n int64, ok bool) {
	for _, v := range h.stock {
		if v < 0 {
			return 0, false
		}
		n += v
	}
	return n + h.inFlight(), true
}

// claimed is the units the claims hold (0 unless they were read).
func (h holding) claimed() int64 {
	var n int64
	for _, c := range h.claims {
		n += c
	}
	return n
}

// stuck is the units taken from a segment before cutoff and not yet given
// to another: a move whose mover seems to have stopped.
func (h holding) stuck(cutoff time.Time) int64 {
	var n int64
	for _, m := range h.moves {
		if !m.given && time.UnixMilli(m.At).Before(cutoff) {
			n += m.Units
		}
	}
	return n
}

// holdingOf reads variant sku of sale saleID's n segments (holdings).
func (s *Store) holdingOf(ctx context.Context, saleID int64, sku string, n int) (holding, error) {
	all, err := s.holdings(ctx, map[int64]shape{saleID: {n: n, skus: []string{sku}}}, false)
	return all[saleID][sku], err
}

// shape is what holdings reads of one sale: its n segments, and the
// variants skus.
type shape struct {
	n    int
	skus []string
}

// stableReads bounds how often stableHolding reads a sale whose moves keep
// running.
const stableReads = 10

// errStillMoving is stableHolding's answer when moves kept running through
// every read: the caller tries again later.
var errStillMoving = errors.New("redisstore: the sale's units kept moving between segments while they were counted")

// stableHolding reads sale saleID's n segments until two reads in a row
// agree, for an answer that acts on the count (re-warm loading what the
// live segments lack, a claim's final SOLD_OUT, reconciliation lowering
// Redis): a single read taken while a move runs may miss units, or on a
// Cluster count some twice; two equal reads in a row saw no move step
// between them.
func (s *Store) stableHolding(ctx context.Context, saleID int64, sku string, n int) (holding, error) {
	prev, err := s.holdingOf(ctx, saleID, sku, n)
	if err != nil || n == 1 {
		return prev, err
	}
	for range stableReads {
		cur, err := s.holdingOf(ctx, saleID, sku, n)
		if err != nil {
			return holding{}, err
		}
		if cur.equal(prev) {
			return cur, nil
		}
		prev = cur
	}
	return holding{}, errStillMoving
}

// equal reports whether h and o read the same stocks and move records.
func (h holding) equal(o holding) bool {
	if !slices.Equal(h.stock, o.stock) || len(h.moves) != len(o.moves) {
		return false
	}
	key := func(m pending) string { return fmt.Sprintf("%d/%s/%d/%d/%t", m.from, m.id, m.Units, m.Dest, m.given) }
	a, b := make([]string, len(h.moves)), make([]string, len(o.moves))
	for i := range h.moves {
		a[i], b[i] = key(h.moves[i]), key(o.moves[i])
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// holdings reads what Redis holds of several sales (sale id -> its
// segments and the variants to read), per variant:
// one round trip (per node on a Cluster) for the stocks and the move
// records (and, with claims, the units each segment's claims hold: one
// field of its units hash, never the claims themselves), and a second only when a record has a
// destination, to learn whether it was given. On one server (or a Sentinel
// group) the first read is one MULTI, a snapshot, and every moved set is
// read after it, so a give that runs between the reads can only hide its
// units (counted neither in flight nor in the stock it reached), never
// count them twice: a count taken while moves run may be low, never high.
// On a Cluster a MULTI cannot span slots: the segments are read at
// different moments, and a move between two segments that runs between
// their reads may be counted high too, for that one read; LowerRemaining
// acts only on a second read that agrees, segment by segment
// (docs/DESIGN.md). At rest it is exact. A claim or a release moves a unit
// between a segment's stock and its claims in one script: the one MULTI
// counts it once; on a Cluster, one that runs between a segment's reads
// shows a unit too many or too few for that one read.
func (s *Store) holdings(ctx context.Context, sales map[int64]shape, claims bool) (map[int64]map[string]holding, error) {
	type cmds struct {
		stock  []*redis.StringCmd
		moves  []*redis.MapStringStringCmd
		claims []*redis.StringCmd
		held   []*redis.StringCmd
	}
	type target struct {
		sale int64
		sku  string
	}
	all := make(map[target]cmds)
	read := s.rdb.TxPipelined
	if s.topology == Cluster {
		// A MULTI cannot span slots there. Each segment's move records are
		// read before its stock, so a take between the two reads hides
		// its units rather than counting them twice.
		read = s.rdb.Pipelined
	}
	_, err := read(ctx, func(p redis.Pipeliner) error {
		for id, sh := range sales {
			for _, sku := range sh.skus {
				c := cmds{stock: make([]*redis.StringCmd, sh.n)}
				for q := range sh.n {
					k := s.SegmentKeys(id, q).Variant(sku)
					if sh.n > 1 {
						c.moves = append(c.moves, p.HGetAll(ctx, k.Moves))
					}
					c.stock[q] = p.Get(ctx, k.Stock)
					c.held = append(c.held, p.Get(ctx, k.Held))
					if claims {
						c.claims = append(c.claims, p.HGet(ctx, k.Units, sku))
					}
				}
				all[target{id, sku}] = c
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read stock: %w", err)
	}
	out := make(map[int64]map[string]holding, len(sales))
	for t, c := range all {
		h := holding{stock: make([]int64, len(c.stock))}
		for q := range c.stock {
			v, err := c.stock[q].Int64()
			if err != nil {
				v = -1
			}
			h.stock[q] = v
		}
		for _, cc := range c.claims {
			v, _ := cc.Int64() // no field: no claim holds the variant
			h.claims = append(h.claims, v)
		}
		for _, hc := range c.held {
			v, _ := hc.Int64() // no key: nothing held
			h.held = append(h.held, v)
		}
		for q, mc := range c.moves {
			for mid, v := range mc.Val() {
				m, err := parseMove(v)
				if err != nil {
					return nil, fmt.Errorf("sale %d variant %s segment %d: %w", t.sale, t.sku, q, err)
				}
				h.moves = append(h.moves, pending{move: m, from: q, id: mid, sku: t.sku})
			}
		}
		sort.Slice(h.moves, func(i, j int) bool { return h.moves[i].At < h.moves[j].At })
		if out[t.sale] == nil {
			out[t.sale] = map[string]holding{}
		}
		out[t.sale][t.sku] = h
	}
	return out, s.markGiven(ctx, out)
}

// markGiven learns, for every move record with a destination, whether its
// units reached it.
func (s *Store) markGiven(ctx context.Context, all map[int64]map[string]holding) error {
	type check struct {
		m     *pending
		moved string // the destination's moved set
		cmd   *redis.BoolCmd
	}
	var checks []check
	for id, hs := range all {
		for _, h := range hs {
			for i := range h.moves {
				if m := &h.moves[i]; m.Dest >= 0 && m.Dest < len(h.stock) {
					checks = append(checks, check{m: m, moved: s.SegmentKeys(id, m.Dest).Variant(m.sku).Moved})
				}
			}
		}
	}
	if len(checks) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range checks {
			checks[i].cmd = p.SIsMember(ctx, checks[i].moved, checks[i].m.id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the moves given: %w", err)
	}
	for _, c := range checks {
		c.m.given = c.cmd.Val()
	}
	return nil
}

// Remaining reads a sale's stock in units over every variant: the sum of
// its segments and the units in flight between them, each once
// (holdings). ok is false when the sale (any segment) is not warmed.
func (s *Store) Remaining(ctx context.Context, saleID int64) (n int64, ok bool, err error) {
	all, err := s.RemainingMany(ctx, []int64{saleID})
	if err != nil {
		return 0, false, err
	}
	n, ok = all[saleID]
	return n, ok, nil
}

// RemainingMany reads the stock of several sales, in units over every
// variant, in one round trip (per node on a Cluster). A sale that is not
// warmed is absent from the map.
func (s *Store) RemainingMany(ctx context.Context, saleIDs []int64) (map[int64]int64, error) {
	by, err := s.RemainingByVariant(ctx, saleIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(by))
	for id, vs := range by {
		for _, n := range vs {
			out[id] += n
		}
	}
	return out, nil
}

// RemainingByVariant reads the stock of each variant (sku -> units) of
// several sales, as RemainingMany does. A sale that is not warmed (any
// variant of any segment) is absent from the map.
func (s *Store) RemainingByVariant(ctx context.Context, saleIDs []int64) (map[int64]map[string]int64, error) {
	shapes, err := s.shapesOf(ctx, saleIDs)
	if err != nil {
		return nil, err
	}
	all, err := s.holdings(ctx, shapes, false)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]map[string]int64, len(saleIDs))
sales:
	for id, hs := range all {
		vs := make(map[string]int64, len(hs))
		for sku, h := range hs {
			n, ok := h.total()
			if !ok {
				continue sales
			}
			vs[sku] = n
		}
		out[id] = vs
	}
	return out, nil
}

// shapesOf is the segments and variants of each of saleIDs.
func (s *Store) shapesOf(ctx context.Context, saleIDs []int64) (map[int64]shape, error) {
	shapes := make(map[int64]shape, len(saleIDs))
	for _, id := range saleIDs {
		sh, err := s.shapeOf(ctx, id)
		if err != nil {
			return nil, err
		}
		shapes[id] = sh
	}
	return shapes, nil
}

// UnitsHeld reads what Redis holds of each of saleIDs, per variant and
// summed; moves taken before stuckBefore count as Stuck. A sale that is
// not warmed is absent. Claims are counted (their units per variant),
// never read: a few commands per segment and variant, in one round trip
// (per node on a Cluster) and a second only when a move record has a
// destination, however many claims the sales have.
func (s *Store) UnitsHeld(ctx context.Context, saleIDs []int64, stuckBefore time.Time) (map[int64]seckill.Held, error) {
	shapes, err := s.shapesOf(ctx, saleIDs)
	if err != nil {
		return nil, err
	}
	all, err := s.holdings(ctx, shapes, true)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]seckill.Held, len(all))
sales:
	for id, hs := range all {
		sum := seckill.Held{Variants: make(map[string]seckill.Held, len(hs))}
		for sku, h := range hs {
			n, ok := h.total()
			if !ok {
				continue sales
			}
			v := seckill.Held{Stock: n, Stuck: h.stuck(stuckBefore), Claimed: h.claimed(), ForWaiting: h.waiting()}
			sum.Variants[sku] = v
			sum.Stock += v.Stock
			sum.Stuck += v.Stuck
			sum.Claimed += v.Claimed
			sum.ForWaiting += v.ForWaiting
		}
		out[id] = sum
	}
	return out, nil
}

// lowerScript sets a counter to a lower target only while it still holds
// the value the caller read: a claim or a release in between wins.
var lowerScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur == ARGV[1] and tonumber(ARGV[2]) < tonumber(cur) then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0`)

// LowerRemaining lowers what Redis holds of sale's variant sku outside
// the claims from seen (the units in stock, in flight and held for the
// line's head, each once: UnitsHeld's Stock+ForWaiting, the one count of
// docs/DESIGN.md invariant 7) to target if it still holds seen, taking the
// excess from the fullest segments' stocks first (held units are a
// waiting buyer's, never taken). It never raises it. It reports whether
// it lowered it all.
func (s *Store) LowerRemaining(ctx context.Context, saleID int64, sku string, seen, target int64) (bool, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil {
		return false, err
	}
	st, err := s.stableHolding(ctx, saleID, sku, n)
	if errors.Is(err, errStillMoving) {
		return false, nil // moves running: the next pass looks again
	}
	if err != nil {
		return false, err
	}
	if total, ok := st.total(); !ok || total+st.waiting() != seen || target >= seen {
		return false, nil
	}
	order := make([]int, n)
	for p := range order {
		order[p] = p
	}
	sort.Slice(order, func(i, j int) bool { return st.stock[order[i]] > st.stock[order[j]] })
	excess := seen - target
	for _, p := range order {
		cut := min(excess, st.stock[p])
		if cut <= 0 {
			continue
		}
		done, err := lowerScript.Run(ctx, s.rdb, []string{s.SegmentKeys(saleID, p).Variant(sku).Stock}, st.stock[p], st.stock[p]-cut).Int()
		if err != nil {
			return false, fmt.Errorf("lower stock: %w", err)
		}
		if done != 1 {
			return false, nil // a claim or a release came first: the next pass looks again
		}
		excess -= cut
	}
	return excess == 0, nil
}

// Counts reads the figures of several sales in one round trip (split per
// node on a Cluster). A sale that is not warmed is absent.
func (s *Store) Counts(ctx context.Context, saleIDs []int64) (map[int64]seckill.SaleCounts, error) {
	remaining, err := s.RemainingByVariant(ctx, saleIDs)
	if err != nil {
		return nil, err
	}
	type cmds struct {
		handed  []*redis.StringCmd
		waiting []*redis.IntCmd
		held    []*redis.StringCmd
	}
	all := make(map[int64]*cmds, len(remaining))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id := range remaining {
			sh, _ := s.shapeOf(ctx, id) // remembered by RemainingByVariant
			c := &cmds{}
			for q := range sh.n {
				k := s.SegmentKeys(id, q)
				c.handed = append(c.handed, p.HGet(ctx, k.Meta, "waitlist_admissions"))
				for _, sku := range sh.skus {
					c.waiting = append(c.waiting, p.ZCard(ctx, k.Variant(sku).Wait))
					c.held = append(c.held, p.Get(ctx, k.Variant(sku).Held))
				}
			}
			all[id] = c
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read sale counts: %w", err)
	}
	out := make(map[int64]seckill.SaleCounts, len(remaining))
	for id, c := range all {
		sc := seckill.SaleCounts{Variants: remaining[id]}
		for _, n := range remaining[id] {
			sc.Remaining += n
		}
		for _, h := range c.handed {
			n, _ := h.Int64()
			sc.FromWaitlist += n
		}
		for _, w := range c.waiting {
			sc.Waiting += w.Val()
		}
		for _, h := range c.held {
			n, _ := h.Int64()
			sc.ForWaiting += n
		}
		out[id] = sc
	}
	return out, nil
}

// Now is Redis' clock on the server that holds sale saleID: the clock its
// scripts decide "started" and "ended" by. A worker deciding what a script
// will answer reads this, not its own clock, which may disagree.
func (s *Store) Now(ctx context.Context, saleID int64) (time.Time, error) {
	ms, err := nowScript.Run(ctx, s.rdb, []string{s.SaleKeys(saleID).Meta}).Int64()
	if err != nil {
		return time.Time{}, fmt.Errorf("read Redis' clock: %w", err)
	}
	return time.UnixMilli(ms).UTC(), nil
}
