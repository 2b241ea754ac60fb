package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// Units move between the segments of a sale in three steps, each a script on
// one segment (docs/DESIGN.md draws the states):
//
//	take.lua     source segment: stock -= n, record the move (units, dest, at)
//	             (release.lua parks a released unit the same way, dest -1,
//	             and aim.lua fixes its dest once)
//	give.lua     dest segment: the units go to its first waiting buyers, the
//	             rest to its stock; the move id joins its moved set, so a
//	             repeat gives nothing
//	forget.lua   source segment: forget the record
//
// A mover that stops between steps leaves the record; FinishMoves
// (reconciliation) completes it. Between give and forget the units are in
// the destination and the record still names them: readHoldings counts a
// record whose id is in its destination's moved set as given, so every
// unit is counted once, wherever it is.

// move is one move's record, kept in the moves hash of the segment its units
// left (move.lua writes it).
type move struct {
	Units int64 `json:"units"`
	// Dest is the segment the units go to; -1 until a parked released unit
	// is aimed.
	Dest int `json:"dest"`
	// At is when the units left, unix ms on Redis' clock.
	At int64 `json:"at"`
}

// parseMove reads a record, as move.lua's read_move does (a record of
// the older "<units>:<dest>:<ms>" form too).
func parseMove(v string) (move, error) {
	if strings.HasPrefix(v, "{") {
		var m move
		if err := json.Unmarshal([]byte(v), &m); err != nil || m.Units <= 0 {
			return move{}, fmt.Errorf("malformed move %q", v)
		}
		return m, nil
	}
	f := strings.Split(v, ":")
	if len(f) != 3 {
		return move{}, fmt.Errorf("malformed move %q", v)
	}
	m := move{Dest: -1}
	var err error
	if m.Units, err = strconv.ParseInt(f[0], 10, 64); err != nil || m.Units <= 0 {
		return move{}, fmt.Errorf("malformed move %q", v)
	}
	if f[1] != "" {
		if m.Dest, err = strconv.Atoi(f[1]); err != nil {
			return move{}, fmt.Errorf("malformed move %q", v)
		}
	}
	m.At, _ = strconv.ParseInt(f[2], 10, 64)
	return m, nil
}

// errSegmentNotWarmed is give's answer when the destination segment is not
// loaded: nothing was given, the move stays in flight until re-warm has
// loaded the segment and reconciliation lands it.
var errSegmentNotWarmed = errors.New("the destination segment of the move is not warmed")

// errHeadMoved is give's answer when the head of the destination's
// waitlist is not the buyer the caller chose: nothing was given.
var errHeadMoved = errors.New("the waitlist's head moved")

// take takes at most most units from segment from of saleID for segment dest,
// as move id; it returns how many it took (0: the segment had none).
func (s *Store) take(ctx context.Context, saleID int64, sku string, from int, id string, most int64, dest int) (int64, error) {
	k := s.SegmentKeys(saleID, from).Variant(sku)
	var got int64
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if got, err = takeScript.Run(ctx, c, []string{k.Stock, k.Meta, k.Moves}, id, most, dest).Int64(); err != nil {
			return false, fmt.Errorf("take script: %w", err)
		}
		return got > 0, nil
	})
	return got, err
}

// give lands move id's units in segment dest of saleID: to the waiting
// buyers of the segment as orders (with terms), the rest to the stock; with
// one, to the segment's first waiting buyer only, the rest parked as move
// id+"+" (parked true) for the caller to land where the next buyer in line
// waits. With head (a join sequence) set, it gives only while that buyer
// still heads the segment's waitlist, else errHeadMoved. It returns the
// buyers who got their units (none when the move was given before).
func (s *Store) give(ctx context.Context, saleID int64, sku string, dest int, id string, units int64, head *float64, orders []int64, terms seckill.Terms, one bool) (handed []seckill.Admission, parked bool, err error) {
	k := s.SegmentKeys(saleID, dest).Variant(sku)
	args := append([]any{id, units, saleID}, termArgs(terms)...)
	expect := ""
	if head != nil {
		expect = strconv.FormatFloat(*head, 'f', -1, 64)
	}
	args = append(args, s.RestockChannel(), expect, sku, flag(one))
	for _, o := range orders {
		args = append(args, o)
	}
	var res []any
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if res, err = giveScript.Run(ctx, c, append(k.unitKeys(), k.Moved, k.Units, k.Lines, k.Held, k.Moves), args...).Slice(); err != nil {
			return false, fmt.Errorf("give script: %w", err)
		}
		return res[0] == int64(1), nil
	})
	if err != nil {
		return nil, false, err
	}
	switch res[0] {
	case int64(0):
		return nil, false, nil // given before: its rest, if any, is parked already
	case int64(2):
		return nil, false, errHeadMoved
	case int64(3):
		return nil, false, errSegmentNotWarmed
	}
	if handed, err = parseHanded(saleID, sku, res[2:]); err != nil {
		return nil, false, fmt.Errorf("give script: %w", err)
	}
	return handed, res[1] == int64(1), nil
}

// giveToHead gives move id to segment dest, to the waiting buyer with join
// sequence head if head is set and that buyer still heads the segment's
// line, else to whoever heads it now (the move's destination never
// changes once chosen).
func (s *Store) giveToHead(ctx context.Context, saleID int64, sku string, dest int, id string, units int64, head *float64, orders []int64, terms seckill.Terms, one bool) ([]seckill.Admission, bool, error) {
	handed, parked, err := s.give(ctx, saleID, sku, dest, id, units, head, orders, terms, one)
	if errors.Is(err, errHeadMoved) {
		handed, parked, err = s.give(ctx, saleID, sku, dest, id, units, nil, orders, terms, one)
	}
	return handed, parked, err
}

// forget forgets move id in segment from of saleID, once it was given.
func (s *Store) forget(ctx context.Context, saleID int64, sku string, from int, id string) error {
	k := s.SegmentKeys(saleID, from).Variant(sku)
	return s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		n, err := forgetScript.Run(ctx, c, []string{k.Moves}, id).Int()
		if err != nil {
			return false, fmt.Errorf("forget script: %w", err)
		}
		return n == 1, nil
	})
}

// moveUnits is the whole move of at most most units from segment from to
// segment dest, as move id: take, give (to the segment's waiting buyers first,
// as orders), forget. It returns the units taken (0: the segment had none)
// and the buyers who got one.
func (s *Store) moveUnits(ctx context.Context, saleID int64, sku string, from, dest int, id string, most int64, head *float64, orders []int64, terms seckill.Terms) (int64, []seckill.Admission, error) {
	got, err := s.take(ctx, saleID, sku, from, id, most, dest)
	if err != nil || got == 0 {
		return got, nil, err
	}
	handed, _, err := s.giveToHead(ctx, saleID, sku, dest, id, got, head, orders, terms, false)
	if err != nil {
		return got, nil, err
	}
	return got, handed, s.forget(ctx, saleID, sku, from, id)
}

// aim fixes the destination of parked move id in segment from: choice,
// unless an earlier mover aimed it. It returns the destination, whether
// this call chose it, and ok false when the move is forgotten already.
func (s *Store) aim(ctx context.Context, saleID int64, sku string, from int, id string, choice int) (dest int, chosen, ok bool, err error) {
	k := s.SegmentKeys(saleID, from).Variant(sku)
	var res []any
	// Waits for the replicas like every write of a move: an aim lost in a
	// failover could be aimed again elsewhere, and land in two segments.
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if res, err = aimScript.Run(ctx, c, []string{k.Moves, k.Meta}, id, choice).Slice(); err != nil {
			return false, fmt.Errorf("aim script: %w", err)
		}
		return res[1] == int64(1), nil
	})
	if err != nil {
		return 0, false, false, err
	}
	d, _ := res[0].(int64)
	return int(d), res[1] == int64(1), d >= 0, nil
}

// finishMove gives move id, in flight from segment from of a sale of n
// segments, to its destination and forgets it (land). A move already forgotten
// is left alone.
func (s *Store) finishMove(ctx context.Context, saleID int64, n, from int, sku, id string, orders []int64, terms seckill.Terms) ([]seckill.Admission, error) {
	unlock := s.landingLock(ctx, saleID)
	defer unlock()
	return s.finishMoveLocked(ctx, saleID, n, from, sku, id, orders, terms, maxReparks)
}

// maxReparks bounds how often one landing sends its rest on (each time it
// served a buyer, or found the line it aimed at emptied meanwhile): past
// it the rest stays parked, counted in flight, and reconciliation lands
// it (FinishMoves), still one buyer at a time in line order: never given
// whole to one segment's buyers ahead of the others'.
const maxReparks = 64

// finishMoveLocked is finishMove for a mover that holds the landing lock.
func (s *Store) finishMoveLocked(ctx context.Context, saleID int64, n, from int, sku, id string, orders []int64, terms seckill.Terms, reparks int) ([]seckill.Admission, error) {
	v, err := s.rdb.HGet(ctx, s.SegmentKeys(saleID, from).Variant(sku).Moves, id).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read move %s: %w", id, err)
	}
	m, err := parseMove(v)
	if err != nil {
		return nil, err
	}
	return s.landLocked(ctx, saleID, n, from, sku, id, m, orders, terms, reparks)
}

// land gives move id (m, in flight from segment from of a sale of n segments)
// to its destination and forgets it. A parked released unit has none yet:
// it is aimed, once, at the segment whose first waiting buyer joined first,
// or back at segment from with nobody waiting; every later mover of the same
// move reads that aim, so the units land in one segment only. There they
// serve that segment's first waiting buyer only; the rest is parked again
// (give.lua) and landed where the next buyer in line waits, so buyers are
// served in the order they joined whichever segment they wait in. Movers of
// one sale take turns (landingLock), so concurrent releases serve the line
// in order.
func (s *Store) land(ctx context.Context, saleID int64, n, from int, sku, id string, m move, orders []int64, terms seckill.Terms) ([]seckill.Admission, error) {
	unlock := s.landingLock(ctx, saleID)
	defer unlock()
	return s.landLocked(ctx, saleID, n, from, sku, id, m, orders, terms, maxReparks)
}

func (s *Store) landLocked(ctx context.Context, saleID int64, n, from int, sku, id string, m move, orders []int64, terms seckill.Terms, reparks int) ([]seckill.Admission, error) {
	first, seq, waiting, err := s.firstWaitingSegment(ctx, saleID, sku, n)
	if err != nil {
		return nil, err
	}
	if waiting && reparks <= 0 && servesTheLine(id) {
		return nil, nil // past maxReparks: it stays parked (maxReparks)
	}
	dest, head := m.Dest, (*float64)(nil)
	if dest < 0 || dest >= n {
		choice := from
		if waiting {
			choice = first
		}
		aimed, chosen, ok, err := s.aim(ctx, saleID, sku, from, id, choice)
		if err != nil || !ok {
			return nil, err // !ok: forgotten meanwhile
		}
		if dest = aimed; chosen && waiting {
			head = &seq
		}
	}
	// A parked release's units serve the line one buyer at a time, across
	// segments, whether this mover aimed them or an earlier attempt did
	// (a retry finishes the distribution the first attempt started);
	// units a mover took for one segment (a borrow, a hand-over, a
	// restock's share) land there.
	one := waiting && servesTheLine(id)
	handed, _, err := s.giveToHead(ctx, saleID, sku, dest, id, m.Units, head, orders, terms, one)
	if err != nil {
		return nil, err
	}
	if err := s.forget(ctx, saleID, sku, from, id); err != nil {
		return handed, err
	}
	if !one {
		return handed, nil
	}
	// The rest parked as id+"+", by this give or by an earlier attempt's
	// (a retry's give of the same move does nothing): land it on.
	more, err := s.finishMoveLocked(ctx, saleID, n, dest, sku, id+"+", orders[min(len(handed), len(orders)):], terms, reparks-1)
	return append(handed, more...), err
}

// servesTheLine reports whether move id is units released to the line,
// landed one buyer at a time: a release's ("r<order>", release.lua) or
// the rest one landing parked again ("<id>+", give.lua).
func servesTheLine(id string) bool {
	return strings.HasPrefix(id, "r") || strings.HasSuffix(id, "+")
}

// landingLockTTL bounds how long one mover holds a sale's landing lock.
const landingLockTTL = 3 * time.Second

// landingLock lets one mover of saleID at a time choose and give: without
// it two concurrent releases would both choose the same first buyer, and
// the second unit would go to the next buyer of that segment rather than the
// next in line. A mover waits while the lock changes hands (movers ahead of
// it are landing), however many there are and however slow the machine:
// it goes on without the lock only when one holder has kept it past
// landingLockTTL (it stopped; the key expires meanwhile), on a Redis error,
// or when ctx ends. Correctness does not depend on it, only the order in
// line. It returns the unlock.
func (s *Store) landingLock(ctx context.Context, saleID int64) func() {
	key := s.SaleKeys(saleID).tag() + "landing"
	token := strconv.FormatInt(time.Now().UnixNano(), 36) + "." + strconv.FormatInt(rand.Int64(), 36)
	holder, deadline := "", time.Now().Add(landingLockTTL)
	// Waiters back off (2 ms doubling to 16 ms, with jitter): a queue of
	// movers polling every 2 ms cost each handover hundreds of commands on
	// the sale's slot, which serves its claims too.
	pause := 2 * time.Millisecond
	for {
		ok, err := s.rdb.SetNX(ctx, key, token, landingLockTTL).Result()
		if err != nil {
			return func() {}
		}
		if ok {
			return func() { _ = unlockScript.Run(context.WithoutCancel(ctx), s.rdb, []string{key}, token).Err() }
		}
		if h, err := s.rdb.Get(ctx, key).Result(); err == nil && h != holder {
			holder, deadline = h, time.Now().Add(landingLockTTL) // the line moved: wait on
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return func() {}
		}
		time.Sleep(pause + rand.N(pause/2))
		pause = min(2*pause, 16*time.Millisecond)
	}
}

// firstWaitingSegment is the segment of saleID (of n) whose first buyer
// waiting for variant sku joined first, and that buyer's join sequence; ok is false when nobody
// waits.
func (s *Store) firstWaitingSegment(ctx context.Context, saleID int64, sku string, n int) (segment int, seq float64, ok bool, err error) {
	heads := make([]*redis.ZSliceCmd, n)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range n {
			heads[q] = p.ZRangeWithScores(ctx, s.SegmentKeys(saleID, q).Variant(sku).Wait, 0, 0)
		}
		return nil
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the waitlists' heads: %w", err)
	}
	for q, h := range heads {
		if z := h.Val(); len(z) == 1 && (!ok || z[0].Score < seq) {
			segment, seq, ok = q, z[0].Score, true
		}
	}
	return segment, seq, ok, nil
}

// borrowed is what one borrow did.
type borrowed int

const (
	// borrowedUnits: units arrived in the borrower's segment.
	borrowedUnits borrowed = iota
	// borrowedNone: no segment has a unit and none is in flight.
	borrowedNone
	// borrowedInFlight: none could be taken, but units are on their way
	// between segments (the sale is not sold out yet).
	borrowedInFlight
	// borrowedOwed: the borrower's segment has buyers waiting in line: any
	// unit it gets is theirs first, so none is borrowed for a new claim.
	borrowedOwed
)

// borrow moves units of item's variant into segment home of saleID (of n)
// for a claim of item, from the fullest other segment: half of what it
// holds, and at least the claim's quantity when it has that many, as move
// id.
func (s *Store) borrow(ctx context.Context, saleID int64, n, home int, item seckill.Item, id string) (borrowed, error) {
	sku := item.SKU
	waiting, err := s.rdb.ZCard(ctx, s.SegmentKeys(saleID, home).Variant(sku).Wait).Result()
	if err != nil {
		return 0, fmt.Errorf("read the waitlist: %w", err)
	}
	if waiting > 0 {
		return borrowedOwed, nil
	}
	h, err := s.holdingOf(ctx, saleID, sku, n)
	if err != nil {
		return 0, err
	}
	donor := -1
	for q, v := range h.stock {
		if q != home && v > 0 && (donor < 0 || v > h.stock[donor]) {
			donor = q
		}
	}
	if donor < 0 && h.inFlight() == 0 {
		// "None anywhere" makes a final SOLD_OUT: only a read that a second
		// one confirms may say so (a move given between the two round trips
		// of one read hides its units).
		stable, err := s.stableHolding(ctx, saleID, sku, n)
		if errors.Is(err, errStillMoving) {
			return borrowedInFlight, nil
		}
		if err != nil {
			return 0, err
		}
		h = stable
		for q, v := range h.stock {
			if q != home && v > 0 && (donor < 0 || v > h.stock[donor]) {
				donor = q
			}
		}
	}
	switch {
	case donor < 0 && h.inFlight() > 0:
		return borrowedInFlight, nil
	case donor < 0:
		return borrowedNone, nil
	}
	most := max((h.stock[donor]+1)/2, int64(item.Quantity))
	got, _, err := s.moveUnits(ctx, saleID, sku, donor, home, id, most, nil, nil, seckill.Terms{})
	if err != nil {
		return 0, err
	}
	if got == 0 {
		return borrowedInFlight, nil // emptied meanwhile: look again
	}
	return borrowedUnits, nil
}

// FinishMoves completes the moves of saleID (every variant's) in flight
// for longer than olderThan (their mover stopped between the steps),
// giving parked released units to the first waiting buyers as orders
// numbered by nextID, on the terms of their variant (termsOf), and forgets
// the moves given but not forgotten. It returns how many it finished; an
// error of nextID stops it there, before the move that needed the id.
func (s *Store) FinishMoves(ctx context.Context, saleID int64, termsOf func(sku string) seckill.Terms, olderThan time.Duration, nextID func() (int64, error)) (int, error) {
	sh, err := s.shapeOf(ctx, saleID)
	if err != nil || sh.n == 1 {
		return 0, err
	}
	n := sh.n
	all, err := s.holdings(ctx, map[int64]shape{saleID: sh}, false)
	if err != nil {
		return 0, err
	}
	var moves []pending
	for _, sku := range sh.skus {
		moves = append(moves, all[saleID][sku].moves...)
	}
	done := 0
	for _, f := range moves {
		if time.Since(time.UnixMilli(f.At)) < olderThan {
			continue
		}
		orders := make([]int64, f.Units)
		for i := range orders {
			if orders[i], err = nextID(); err != nil {
				return done, err
			}
		}
		if _, err := s.land(ctx, saleID, n, f.from, f.sku, f.id, f.move, orders, termsOf(f.sku)); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// Moves lists saleID's moves whose record is still kept.
func (s *Store) Moves(ctx context.Context, saleID int64) ([]seckill.Move, error) {
	sh, err := s.shapeOf(ctx, saleID)
	if err != nil || sh.n == 1 {
		return nil, err
	}
	all, err := s.holdings(ctx, map[int64]shape{saleID: sh}, false)
	if err != nil {
		return nil, err
	}
	var out []seckill.Move
	for _, sku := range sh.skus {
		for _, f := range all[saleID][sku].moves {
			out = append(out, seckill.Move{ID: f.id, SKU: sku, From: f.from, Dest: f.Dest, Units: f.Units, At: time.UnixMilli(f.At), Given: f.given})
		}
	}
	return out, nil
}

// RestoreClaim writes userID's claim on saleID back as orderID holding
// item (its
// order is active in the database but Redis lost the claim), unless the
// user holds a claim or the order was released meanwhile (restore.lua
// reads both where it writes). It reports whether it wrote it.
func (s *Store) RestoreClaim(ctx context.Context, saleID int64, userID string, orderID int64, item seckill.Item) (bool, error) {
	item = item.OrDefault()
	k, _, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return false, err
	}
	var n int
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if n, err = restoreScript.Run(ctx, c, []string{k.Claims, k.Released, k.Meta, k.Units}, userID, orderID, item.SKU, item.Quantity).Int(); err != nil {
			return false, fmt.Errorf("restore script: %w", err)
		}
		return n == 1, nil
	})
	return n == 1, err
}
