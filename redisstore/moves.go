package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lua"
)

// Units move between the parts of a sale in three steps, each a script on
// one part: take.lua (or release.lua parking a released unit) records the
// units as in flight in the part they leave, give.lua lands them in the
// destination exactly once (its moved set), settle.lua forgets the move
// where it started. A mover that dies between steps leaves the record;
// FinishMoves (reconciliation) completes it. So a unit is always in a
// stock, in a claim, or in flight, and the sum of the parts never grows.

var (
	takeScript   = redis.NewScript(lua.Take)
	giveScript   = redis.NewScript(lua.Give)
	settleScript = redis.NewScript(lua.Settle)
	aimScript    = redis.NewScript(lua.Aim)
	unlockScript = redis.NewScript(lua.Unlock)
)

// errPartNotWarmed is give's answer when the destination part is not
// loaded: nothing was given, the move stays in flight until re-warm has
// loaded the part and reconciliation lands it.
var errPartNotWarmed = errors.New("the destination part of the move is not warmed")

// take takes at most most units from part from of saleID for part dest,
// as move id; it returns how many it took (0: the part had none).
func (s *Store) take(ctx context.Context, saleID int64, from int, id string, most int64, dest int) (int64, error) {
	k := s.PartKeys(saleID, from)
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

// errHeadMoved is give's answer when the head of the destination's
// waitlist is not the buyer the caller chose: nothing was given.
var errHeadMoved = errors.New("the waitlist's head moved")

// give lands move id's units in part dest of saleID: each to the first
// waiting buyer of the part as one of orders (with terms), the rest to the
// stock. With head (a join sequence) set, it gives only while that buyer
// still heads the part's waitlist, else errHeadMoved. It returns the
// buyers who got a unit (none when the move was given before).
func (s *Store) give(ctx context.Context, saleID int64, dest int, id string, units int64, head *float64, orders []int64, terms Terms) ([]Admission, error) {
	k := s.PartKeys(saleID, dest)
	args := append([]any{id, units, saleID}, terms.args()...)
	expect := ""
	if head != nil {
		expect = strconv.FormatFloat(*head, 'f', -1, 64)
	}
	args = append(args, s.RestockChannel(), expect)
	for _, o := range orders {
		args = append(args, o)
	}
	var res []any
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if res, err = giveScript.Run(ctx, c, append(k.unitKeys(), k.Moved), args...).Slice(); err != nil {
			return false, fmt.Errorf("give script: %w", err)
		}
		return res[0] == int64(1), nil
	})
	if err != nil {
		return nil, err
	}
	switch res[0] {
	case int64(2):
		return nil, errHeadMoved
	case int64(3):
		return nil, errPartNotWarmed
	}
	var out []Admission
	for i := 1; i+2 < len(res); i += 3 {
		user, _ := res[i].(string)
		order, err := strconv.ParseInt(fmt.Sprint(res[i+1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("give script: bad order %v", res[i+1])
		}
		ms, err := strconv.ParseInt(fmt.Sprint(res[i+2]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("give script: bad pay_by %v", res[i+2])
		}
		out = append(out, Admission{OrderID: order, SaleID: saleID, UserID: user, PayBy: time.UnixMilli(ms).UTC()})
	}
	return out, nil
}

// settle forgets move id in part from of saleID, once it was given.
func (s *Store) settle(ctx context.Context, saleID int64, from int, id string) error {
	k := s.PartKeys(saleID, from)
	return s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		n, err := settleScript.Run(ctx, c, []string{k.Moves, k.Meta}, id).Int()
		if err != nil {
			return false, fmt.Errorf("settle script: %w", err)
		}
		return n == 1, nil
	})
}

// inFlight is one move recorded in the part it left.
type inFlight struct {
	units int64
	dest  int // -1: to be chosen (a parked released unit)
	at    time.Time
}

func parseMove(v string) (inFlight, error) {
	f := strings.Split(v, ":")
	if len(f) != 3 {
		return inFlight{}, fmt.Errorf("malformed move %q", v)
	}
	units, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return inFlight{}, fmt.Errorf("malformed move %q", v)
	}
	m := inFlight{units: units, dest: -1}
	if f[1] != "" {
		if m.dest, err = strconv.Atoi(f[1]); err != nil {
			return inFlight{}, fmt.Errorf("malformed move %q", v)
		}
	}
	ms, _ := strconv.ParseInt(f[2], 10, 64)
	m.at = time.UnixMilli(ms)
	return m, nil
}

// finishMove gives move id, in flight from part from of a sale of n
// parts, to its destination (for a parked released unit: the part whose
// waiting buyer joined first, or back to part from) and settles it. A move
// already settled is left alone.
func (s *Store) finishMove(ctx context.Context, saleID int64, n, from int, id string, orders []int64, terms Terms) ([]Admission, error) {
	v, err := s.rdb.HGet(ctx, s.PartKeys(saleID, from).Moves, id).Result()
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
	return s.land(ctx, saleID, n, from, id, m, orders, terms)
}

// land gives move id (m, in flight from part from of a sale of n parts)
// to its destination and settles it. A parked released unit has none yet:
// it is aimed, once (aim.lua), at the part whose first waiting buyer
// joined first, or back at part from with nobody waiting; every later
// mover of the same move reads that aim, so the unit lands in one part
// only. Movers of one sale take turns (landingLock), so concurrent
// releases serve the line in order.
func (s *Store) land(ctx context.Context, saleID int64, n, from int, id string, m inFlight, orders []int64, terms Terms) ([]Admission, error) {
	unlock := s.landingLock(ctx, saleID)
	defer unlock()
	dest, head := m.dest, (*float64)(nil)
	if dest < 0 || dest >= n {
		first, seq, ok, err := s.firstWaitingPart(ctx, saleID, n)
		if err != nil {
			return nil, err
		}
		choice := from
		if ok {
			choice = first
		}
		aimed, err := aimScript.Run(ctx, s.rdb, []string{s.PartKeys(saleID, from).Moves}, id, choice).Int()
		if err != nil {
			return nil, fmt.Errorf("aim script: %w", err)
		}
		if aimed < 0 {
			return nil, nil // settled meanwhile
		}
		if dest = aimed; ok && dest == choice {
			head = &seq
		}
	}
	handed, err := s.give(ctx, saleID, dest, id, m.units, head, orders, terms)
	if errors.Is(err, errHeadMoved) {
		// A claim or a leave took that buyer meanwhile: the next in the
		// same part gets it (the aim is never changed).
		handed, err = s.give(ctx, saleID, dest, id, m.units, nil, orders, terms)
	}
	if err != nil {
		return nil, err
	}
	return handed, s.settle(ctx, saleID, from, id)
}

// landingLockTTL bounds how long one mover holds a sale's landing lock.
const landingLockTTL = 3 * time.Second

// landingLock lets one mover of saleID at a time choose and give: without
// it two concurrent releases would both choose the same first buyer, and
// the second unit would go to the next buyer of that part rather than the
// next in line. Best effort: after a second of waiting (or a Redis error)
// the mover goes on without it; correctness does not depend on it, only
// the order in line. It returns the unlock.
func (s *Store) landingLock(ctx context.Context, saleID int64) func() {
	key := s.SaleKeys(saleID).tag() + "landing"
	token := strconv.FormatInt(time.Now().UnixNano(), 36) + "." + strconv.FormatInt(rand.Int64(), 36)
	deadline := time.Now().Add(time.Second)
	for {
		ok, err := s.rdb.SetNX(ctx, key, token, landingLockTTL).Result()
		if err != nil {
			return func() {}
		}
		if ok {
			return func() { _ = unlockScript.Run(context.WithoutCancel(ctx), s.rdb, []string{key}, token).Err() }
		}
		if time.Now().After(deadline) {
			return func() {}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// firstWaitingPart is the part of saleID (of n) whose first waiting buyer
// joined first, and that buyer's join sequence; ok is false when nobody
// waits.
func (s *Store) firstWaitingPart(ctx context.Context, saleID int64, n int) (part int, seq float64, ok bool, err error) {
	heads := make([]*redis.ZSliceCmd, n)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range n {
			heads[q] = p.ZRangeWithScores(ctx, s.PartKeys(saleID, q).Wait, 0, 0)
		}
		return nil
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the waitlists' heads: %w", err)
	}
	for q, h := range heads {
		if z := h.Val(); len(z) == 1 && (!ok || z[0].Score < seq) {
			part, seq, ok = q, z[0].Score, true
		}
	}
	return part, seq, ok, nil
}

// borrow moves units into part home of saleID (of n) from the fullest
// other part, half of what it holds, as move id. moved reports that units
// arrived; inFlight, when none could be taken, that units are on their
// way between parts (so the sale is not sold out yet).
func (s *Store) borrow(ctx context.Context, saleID int64, n, home int, id string) (moved, inFlight bool, err error) {
	st, err := s.partStocks(ctx, saleID, n)
	if err != nil {
		return false, false, err
	}
	donor := -1
	for q, v := range st.stock {
		if q != home && v > 0 && (donor < 0 || v > st.stock[donor]) {
			donor = q
		}
	}
	if donor < 0 {
		return false, st.moving > 0, nil
	}
	got, err := s.take(ctx, saleID, donor, id, (st.stock[donor]+1)/2, home)
	if err != nil || got == 0 {
		return false, true, err // emptied meanwhile: look again
	}
	if _, err := s.give(ctx, saleID, home, id, got, nil, nil, Terms{}); err != nil {
		return false, false, err
	}
	return true, false, s.settle(ctx, saleID, donor, id)
}

// FinishMoves completes the moves of saleID in flight for longer than
// olderThan (their mover died between the steps), giving a parked
// released unit to the first waiting buyer as an order numbered by
// nextID. It returns how many it finished.
func (s *Store) FinishMoves(ctx context.Context, saleID int64, terms Terms, olderThan time.Duration, nextID func() int64) (int, error) {
	n, err := s.Parts(ctx, saleID)
	if err != nil || n == 1 {
		return 0, err
	}
	done := 0
	for from := range n {
		moves, err := s.rdb.HGetAll(ctx, s.PartKeys(saleID, from).Moves).Result()
		if err != nil {
			return done, fmt.Errorf("read moves: %w", err)
		}
		for id, v := range moves {
			m, err := parseMove(v)
			if err != nil {
				return done, err
			}
			if time.Since(m.at) < olderThan {
				continue
			}
			orders := make([]int64, m.units)
			for i := range orders {
				orders[i] = nextID()
			}
			if _, err := s.land(ctx, saleID, n, from, id, m, orders, terms); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}
