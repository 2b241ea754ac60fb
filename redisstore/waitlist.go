package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/lua"
)

// Join puts userID in the line of saleID's variant item.SKU, waiting for
// item.Quantity units (the sale's lines holding at most maxEntries
// together); when nobody waits in that line and its stock has the units,
// they are given at once as order orderID with terms (too few: they are
// held for the buyer, and the rest come as units come back). One place per user
// per sale, in one variant's line: a repeat is AlreadyWaiting with the
// position in the line they are in. An error means the outcome is unknown, as with Claim.
//
// On a sale of several segments the buyer waits in their own segment, numbered
// by a sequence all segments share (kept in segment 0), so the first to join is
// first served whichever segment the unit comes back to; a unit still in
// another segment's stock is handed over at once (HandOver).
func (s *Store) Join(ctx context.Context, saleID int64, userID string, item seckill.Item, maxEntries int, orderID int64, terms seckill.Terms) (seckill.JoinResult, error) {
	item = item.OrDefault()
	sku := item.SKU
	k, n, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return seckill.JoinResult{}, err
	}
	k = k.Variant(sku)
	skus, err := s.SKUs(ctx, saleID)
	if err != nil {
		return seckill.JoinResult{}, err
	}
	seq, room := "", int64(maxEntries)
	if n > 1 || len(skus) > 1 {
		v, others, err := s.sequenceAndOthers(ctx, saleID, n, skus, segmentOf(userID, n), sku)
		if err != nil {
			return seckill.JoinResult{}, err
		}
		if v < 0 {
			return seckill.JoinResult{Outcome: seckill.Unavailable}, nil
		}
		room = int64(maxEntries) - others
		if n > 1 {
			seq = strconv.FormatInt(v, 10)
		}
	}
	args := append([]any{userID, room, orderID, saleID}, termArgs(terms)...)
	args = append(args, seq, flag(s.byDraw), sku, item.Quantity, flag(terms.Member))
	var res []any
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if res, err = joinScript.Run(ctx, c, append(k.unitKeys(), k.Units, k.Lines, k.Held), args...).Slice(); err != nil {
			return false, fmt.Errorf("join script: %w", err)
		}
		if len(res) != 3 && len(res) != 4 {
			return false, fmt.Errorf("join script: unexpected reply %v", res)
		}
		o, _ := scriptOutcome(res[0])
		return o == seckill.Admitted || o == seckill.Waiting, nil
	})
	if err != nil {
		return seckill.JoinResult{}, err
	}
	r, err := parseJoin(res)
	if err != nil || n == 1 || (r.Outcome != seckill.Waiting && r.Outcome != seckill.AlreadyWaiting) {
		return r, err
	}
	if len(res) == 4 { // waiting in the line named, maybe another variant's
		sku = skuOfLine(k, fmt.Sprint(res[3]))
	}
	// A sale of several segments: the place in the one line, and, if another
	// segment still has a unit, the hand-over it is owed (one read for both).
	joined, err := strconv.ParseFloat(fmt.Sprint(res[2]), 64)
	if err != nil {
		return seckill.JoinResult{}, fmt.Errorf("join script: bad join sequence %v", res[2])
	}
	st, pos, err := s.stocksAndPosition(ctx, saleID, sku, n, joined)
	if err != nil {
		return seckill.JoinResult{}, err
	}
	r.Position = pos
	if st <= 0 || r.Outcome != seckill.Waiting {
		return r, nil
	}
	if _, err := s.HandOver(ctx, saleID, sku, terms, []int64{orderID}); err != nil {
		return seckill.JoinResult{}, err
	}
	ws, err := s.WaitStateOf(ctx, saleID, userID)
	switch {
	case err != nil:
		return seckill.JoinResult{}, err
	case ws.Waiting:
		r.Position = ws.Position
	case ws.OrderID != 0:
		r = seckill.JoinResult{Outcome: seckill.Admitted, OrderID: ws.OrderID}
		if a, ok, err := s.Admission(ctx, ws.OrderID, []int64{saleID}); err == nil && ok {
			r.PayBy = a.PayBy
		}
	}
	return r, nil
}

// skuOfLine is the sku of the line whose wait key is line, on the segment
// of keys k.
func skuOfLine(k Keys, line string) string {
	if sku, ok := strings.CutPrefix(line, k.tag()+"wait:"); ok {
		return sku
	}
	return seckill.DefaultSKU
}

// lineOf reads a lines entry, "<quantity>:<wait key>" (admit.lua's
// line_of): the line's wait key and the units awaited.
func lineOf(entry string) (line string, quantity int, ok bool) {
	q, line, found := strings.Cut(entry, ":")
	n, err := strconv.Atoi(q)
	if !found || err != nil || n < 1 {
		return "", 0, false
	}
	return line, n, true
}

// sequenceAndOthers numbers a join on a sale of n segments (sequence.lua in
// segment 0: -1 when segment 0 is not warmed) and counts the buyers waiting in
// every line of every variant (skus) but sku's in home, in one round trip: the line's bound
// (SECKILL_WAITLIST_MAX) is the sale's, so home may hold what the others
// leave. Joins in several segments at the same moment may pass it by as many
// as join at once, never more.
func (s *Store) sequenceAndOthers(ctx context.Context, saleID int64, n int, skus []string, home int, sku string) (int64, int64, error) {
	var seq *redis.Cmd
	var lens []*redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		// The script's source, not its hash: a pipeline cannot fall back
		// from NOSCRIPT, and it is a few lines.
		seq = p.Eval(ctx, lua.Sequence, []string{s.SaleKeys(saleID).Meta})
		for q := range n {
			for _, v := range skus {
				if q != home || v != sku {
					lens = append(lens, p.ZCard(ctx, s.SegmentKeys(saleID, q).Variant(v).Wait))
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("number the join: %w", err)
	}
	v, err := seq.Int64()
	if err != nil {
		return 0, 0, fmt.Errorf("number the join: %w", err)
	}
	var others int64
	for _, l := range lens {
		others += l.Val()
	}
	return v, others, nil
}

// stocksAndPosition reads, in one round trip per node, the units of
// variant sku in the stocks of saleID's n segments and the number of buyers
// waiting in its lines who joined at or before join sequence seq (the
// position of the buyer with seq).
func (s *Store) stocksAndPosition(ctx context.Context, saleID int64, sku string, n int, seq float64) (int64, int64, error) {
	bound := strconv.FormatFloat(seq, 'f', -1, 64)
	stock := make([]*redis.StringCmd, n)
	ahead := make([]*redis.IntCmd, n)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range n {
			k := s.SegmentKeys(saleID, q).Variant(sku)
			stock[q] = p.Get(ctx, k.Stock)
			ahead[q] = p.ZCount(ctx, k.Wait, "-inf", bound)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("read stock and waitlist: %w", err)
	}
	var units, pos int64
	for q := range n {
		v, _ := stock[q].Int64()
		units += max(v, 0)
		pos += ahead[q].Val()
	}
	return units, pos, nil
}

func parseJoin(res []any) (seckill.JoinResult, error) {
	o, _ := scriptOutcome(res[0])
	r := seckill.JoinResult{Outcome: o}
	value, _ := res[1].(string)
	var err error
	switch r.Outcome {
	case seckill.Admitted, seckill.AlreadyClaimed:
		if r.OrderID, err = strconv.ParseInt(value, 10, 64); err != nil {
			return seckill.JoinResult{}, fmt.Errorf("join script: bad order id %q", value)
		}
		if r.Outcome == seckill.Admitted {
			ms, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
			if err != nil {
				return seckill.JoinResult{}, fmt.Errorf("join script: bad pay_by %v", res[2])
			}
			r.PayBy = time.UnixMilli(ms).UTC()
		}
	case seckill.Waiting, seckill.AlreadyWaiting:
		if r.Position, err = strconv.ParseInt(value, 10, 64); err != nil {
			return seckill.JoinResult{}, fmt.Errorf("join script: bad position %q", value)
		}
	case seckill.SaleNotStarted, seckill.SaleEnded, seckill.Unavailable, seckill.WaitlistFull:
	default:
		return seckill.JoinResult{}, fmt.Errorf("join script: unexpected code %v", res[0])
	}
	return r, nil
}

// WaitStateOf reads userID's place on saleID's waitlist (over all its
// segments). Neither Waiting nor an OrderID: they never joined, or left.
func (s *Store) WaitStateOf(ctx context.Context, saleID int64, userID string) (seckill.WaitState, error) {
	k, n, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return seckill.WaitState{}, err
	}
	line, sku := k.Wait, seckill.DefaultSKU
	if v, err := s.rdb.HGet(ctx, k.Lines, userID).Result(); err == nil {
		l, _, ok := lineOf(v)
		if !ok {
			return seckill.WaitState{}, fmt.Errorf("waitlist entry of %s: malformed %q", userID, v)
		}
		line, sku = l, skuOfLine(k, l)
	} else if !errors.Is(err, redis.Nil) {
		return seckill.WaitState{}, fmt.Errorf("read waitlist: %w", err)
	}
	var (
		rank  *redis.IntCmd
		score *redis.FloatCmd
		order *redis.StringCmd
	)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rank = p.ZRank(ctx, line, userID)
		score = p.ZScore(ctx, line, userID)
		order = p.HGet(ctx, k.Waited, userID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return seckill.WaitState{}, fmt.Errorf("read waitlist: %w", err)
	}
	if r, err := rank.Result(); err == nil {
		if n == 1 {
			return seckill.WaitState{Waiting: true, Position: r + 1}, nil
		}
		// The one line over every segment: those who joined before, anywhere.
		_, pos, err := s.stocksAndPosition(ctx, saleID, sku, n, score.Val())
		return seckill.WaitState{Waiting: true, Position: pos}, err
	}
	if v, err := order.Result(); err == nil {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return seckill.WaitState{}, fmt.Errorf("waitlist record of %s: malformed %q", userID, v)
		}
		return seckill.WaitState{OrderID: id}, nil
	}
	return seckill.WaitState{}, nil
}

// Waiting counts the buyers on saleID's waitlists, over all its segments
// and variants, in one round trip (split per node on a Cluster): what a
// join is measured against SECKILL_WAITLIST_MAX by.
func (s *Store) Waiting(ctx context.Context, saleID int64) (int64, error) {
	by, err := s.WaitingByVariant(ctx, saleID)
	var n int64
	for _, w := range by {
		n += w
	}
	return n, err
}

// WaitingByVariant counts the buyers in each variant's line (sku ->
// buyers) of saleID, over all its segments, as Waiting does.
func (s *Store) WaitingByVariant(ctx context.Context, saleID int64) (map[string]int64, error) {
	sh, err := s.shapeOf(ctx, saleID)
	if err != nil {
		return nil, err
	}
	lens := make(map[string][]*redis.IntCmd, len(sh.skus))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range sh.n {
			for _, sku := range sh.skus {
				lens[sku] = append(lens[sku], p.ZCard(ctx, s.SegmentKeys(saleID, q).Variant(sku).Wait))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the waitlist: %w", err)
	}
	out := make(map[string]int64, len(sh.skus))
	for sku, ls := range lens {
		for _, l := range ls {
			out[sku] += l.Val()
		}
	}
	return out, nil
}

// ErrNotWarmed is Leave's and PlaceOf's answer when the buyer's segment is not loaded
// (lost with Redis, or the sale's keys expired): whether they wait cannot
// be known until a re-warm, which may put them back from the database's
// rows, so nothing was done and the leave must be tried again.
var ErrNotWarmed = fmt.Errorf("%w: the sale's keys are not loaded (not warmed)", seckill.ErrUnavailable)

// Leave takes userID off saleID's waitlist for good (a later join starts
// at the back) and forgets what the waitlist gave them; their order, if
// any, is unaffected. It reports whether they were waiting, or
// ErrNotWarmed.
func (s *Store) Leave(ctx context.Context, saleID int64, userID string) (bool, error) {
	k, _, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return false, err
	}
	kv := k
	if v, err := s.rdb.HGet(ctx, k.Lines, userID).Result(); err == nil {
		line, _, ok := lineOf(v)
		if !ok {
			return false, fmt.Errorf("waitlist entry of %s: malformed %q", userID, v)
		}
		kv = k.Variant(skuOfLine(k, line))
	} else if !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("leave waitlist: %w", err)
	}
	var removed int
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		removed, err = leaveScript.Run(ctx, c, []string{kv.Wait, k.Lines, k.Waited, kv.Held, kv.Stock, k.Meta}, userID, s.RestockChannel(), saleID).Int()
		if err != nil {
			return false, fmt.Errorf("leave waitlist: %w", err)
		}
		return removed >= 0, nil
	})
	if err == nil && removed < 0 {
		return false, ErrNotWarmed
	}
	return removed == 1, err
}

// HandOver gives units of variant sku left in saleID's stock to the buyers
// waiting in its lines, one
// per id in orderIDs at most, first come first served, and returns how
// many it gave. Releases and joins never leave a unit in stock while a
// buyer waits; this repairs the ways they can meet anyway (a counter
// re-loaded while the waitlist survived; on a sale of several segments, a
// buyer who joined in one segment while another still had a unit).
func (s *Store) HandOver(ctx context.Context, saleID int64, sku string, terms seckill.Terms, orderIDs []int64) (int, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil || len(orderIDs) == 0 {
		return 0, err
	}
	handed := 0
	// One id serves one buyer; a buyer waiting for several units may
	// need several moves (part numbers the moves of one id: a move id
	// is given once). The steps are bounded: each either serves a buyer,
	// moves units towards one, or finds a stock emptied meanwhile.
	for i, part, steps := 0, 0, 0; i < len(orderIDs) && steps < len(orderIDs)*(n+2); steps++ {
		id := orderIDs[i]
		st, err := s.holdingOf(ctx, saleID, sku, n)
		if err != nil {
			return handed, err
		}
		donor := -1
		for q, v := range st.stock {
			if v > 0 && (donor < 0 || v > st.stock[donor]) {
				donor = q
			}
		}
		dest, head, waiting, err := s.firstWaitingSegment(ctx, saleID, sku, n)
		if err != nil || !waiting {
			return handed, err
		}
		if donor < 0 {
			// No unit in stock: the units held for a segment's head may
			// cover it (the step that held them ran out of order ids), in
			// whichever segment: they are that head's already, so each is
			// served now rather than once its segment comes first.
			got, err := s.serveHeld(ctx, saleID, sku, st.held, terms, orderIDs[i:])
			return handed + got, err
		}
		if donor == dest {
			got, err := s.handOverIn(ctx, saleID, sku, dest, terms, id)
			if err != nil || got == 0 {
				return handed, err
			}
			handed++
			i, part = i+1, 0
			continue
		}
		// The head's outstanding quantity, all at once: a buyer waiting
		// for several units is not moved one per id.
		need, err := s.headNeed(ctx, saleID, sku, dest, st.held[dest])
		if err != nil {
			return handed, err
		}
		moveID := "h" + strconv.FormatInt(id, 10) + "." + strconv.Itoa(part)
		part++
		got, given, err := s.moveUnits(ctx, saleID, sku, donor, dest, moveID, need, &head, []int64{id}, terms)
		if err != nil {
			return handed, err
		}
		if got == 0 {
			continue // emptied meanwhile: look again
		}
		if len(given) > 0 {
			handed += len(given)
			i, part = i+1, 0
		}
	}
	return handed, nil
}

// headNeed is the units the head of variant sku's line in segment p of
// saleID still lacks: the quantity they wait for less held, the units
// held for them (at least 1).
func (s *Store) headNeed(ctx context.Context, saleID int64, sku string, p int, held int64) (int64, error) {
	k := s.SegmentKeys(saleID, p).Variant(sku)
	users, err := s.rdb.ZRange(ctx, k.Wait, 0, 0).Result()
	if err != nil || len(users) == 0 {
		return 1, err
	}
	q := 1
	v, err := s.rdb.HGet(ctx, k.Lines, users[0]).Result()
	switch {
	case err == nil:
		if _, lq, ok := lineOf(v); ok {
			q = lq
		}
	case !errors.Is(err, redis.Nil):
		return 0, fmt.Errorf("read the waitlist's head: %w", err)
	}
	return max(int64(q)-held, 1), nil
}

// serveHeld serves the head of each segment of saleID whose held units
// (held, per segment) cover their quantity, with orderIDs, one per buyer
// at most; it returns how many it served.
func (s *Store) serveHeld(ctx context.Context, saleID int64, sku string, held []int64, terms seckill.Terms, orderIDs []int64) (int, error) {
	served := 0
	for p, h := range held {
		for h > 0 && served < len(orderIDs) {
			got, err := s.handOverIn(ctx, saleID, sku, p, terms, orderIDs[served])
			if err != nil || got == 0 {
				if err != nil {
					return served, err
				}
				break
			}
			served += got
		}
	}
	return served, nil
}

// handOverIn runs handover.lua on variant sku of segment p of saleID with
// one order id.
func (s *Store) handOverIn(ctx context.Context, saleID int64, sku string, p int, terms seckill.Terms, id int64) (int, error) {
	k := s.SegmentKeys(saleID, p).Variant(sku)
	args := append(append([]any{saleID}, termArgs(terms)...), sku, id)
	var n int
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if n, err = handOverScript.Run(ctx, c, append(k.unitKeys(), k.Units, k.Lines, k.Held), args...).Int(); err != nil {
			return false, fmt.Errorf("handover script: %w", err)
		}
		return n > 0, nil
	})
	return n, err
}

// WaitlistAdmissions lists the orders saleID's waitlist has given, over
// all its segments: user id -> order id, as each buyer's
// GET /waitlist/me would tell them.
func (s *Store) WaitlistAdmissions(ctx context.Context, saleID int64) (map[string]int64, error) {
	raw, err := s.everySegment(ctx, saleID, func(k Keys) string { return k.Waited })
	if err != nil {
		return nil, fmt.Errorf("read waitlist admissions: %w", err)
	}
	out := make(map[string]int64, len(raw))
	for user, v := range raw {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[user] = id
		}
	}
	return out, nil
}
