package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// JoinOutcome is the decision of join.lua.
type JoinOutcome int

// Outcomes of join.lua; the codes it shares with claim.lua keep their
// numbers there.
const (
	JoinAdmitted       JoinOutcome = 0
	JoinAlreadyClaimed JoinOutcome = 2
	JoinNotStarted     JoinOutcome = 3
	JoinEnded          JoinOutcome = 4
	JoinNotWarmed      JoinOutcome = 5
	JoinWaiting        JoinOutcome = 7
	JoinAlreadyWaiting JoinOutcome = 8
	JoinFull           JoinOutcome = 9
)

// JoinResult is the outcome of one join.
type JoinResult struct {
	Outcome JoinOutcome
	// Position is the buyer's place in line, 1 next (Waiting,
	// AlreadyWaiting).
	Position int64
	// OrderID is the order a unit in stock became at once (Admitted), or
	// the user's active order (AlreadyClaimed).
	OrderID int64
	// PayBy is the admitted order's deadline (Admitted).
	PayBy time.Time
}

// Join puts userID on saleID's waitlist, holding at most maxEntries; a
// unit still in stock is given to them at once as order orderID with
// terms. One entry per user: a repeat is AlreadyWaiting with the
// position. An error means the outcome is unknown, as with Claim.
func (s *Store) Join(ctx context.Context, saleID int64, userID string, maxEntries int, orderID int64, terms Terms) (JoinResult, error) {
	k := s.SaleKeys(saleID)
	args := append([]any{userID, maxEntries, orderID, saleID}, terms.args()...)
	var res []any
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if res, err = joinScript.Run(ctx, c, k.unitKeys(), args...).Slice(); err != nil {
			return false, fmt.Errorf("join script: %w", err)
		}
		if len(res) != 3 {
			return false, fmt.Errorf("join script: unexpected reply %v", res)
		}
		code := res[0]
		return code == int64(JoinAdmitted) || code == int64(JoinWaiting), nil
	})
	if err != nil {
		return JoinResult{}, err
	}
	code, _ := res[0].(int64)
	r := JoinResult{Outcome: JoinOutcome(code)}
	value, _ := res[1].(string)
	switch r.Outcome {
	case JoinAdmitted, JoinAlreadyClaimed:
		if r.OrderID, err = strconv.ParseInt(value, 10, 64); err != nil {
			return JoinResult{}, fmt.Errorf("join script: bad order id %q", value)
		}
		if r.Outcome == JoinAdmitted {
			ms, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
			if err != nil {
				return JoinResult{}, fmt.Errorf("join script: bad pay_by %v", res[2])
			}
			r.PayBy = time.UnixMilli(ms).UTC()
		}
	case JoinWaiting, JoinAlreadyWaiting:
		if r.Position, err = strconv.ParseInt(value, 10, 64); err != nil {
			return JoinResult{}, fmt.Errorf("join script: bad position %q", value)
		}
	case JoinNotStarted, JoinEnded, JoinNotWarmed, JoinFull:
	default:
		return JoinResult{}, fmt.Errorf("join script: unexpected code %v", res[0])
	}
	return r, nil
}

// WaitState is where a buyer stands on a sale's waitlist.
type WaitState struct {
	// Waiting is set while they wait, at Position (1 is next).
	Waiting  bool
	Position int64
	// OrderID is the order the waitlist gave them (0: none).
	OrderID int64
}

// WaitStateOf reads userID's place on saleID's waitlist. Neither Waiting
// nor an OrderID: they never joined, or left.
func (s *Store) WaitStateOf(ctx context.Context, saleID int64, userID string) (WaitState, error) {
	k := s.SaleKeys(saleID)
	var rank *redis.IntCmd
	var order *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rank = p.ZRank(ctx, k.Wait, userID)
		order = p.HGet(ctx, k.Waited, userID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return WaitState{}, fmt.Errorf("read waitlist: %w", err)
	}
	if r, err := rank.Result(); err == nil {
		return WaitState{Waiting: true, Position: r + 1}, nil
	}
	if v, err := order.Result(); err == nil {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return WaitState{}, fmt.Errorf("waitlist record of %s: malformed %q", userID, v)
		}
		return WaitState{OrderID: id}, nil
	}
	return WaitState{}, nil
}

// Leave takes userID off saleID's waitlist for good (a later join starts
// at the back) and forgets what the waitlist gave them; their order, if
// any, is unaffected. It reports whether they were waiting.
func (s *Store) Leave(ctx context.Context, saleID int64, userID string) (bool, error) {
	k := s.SaleKeys(saleID)
	var removed *redis.IntCmd
	// One slot, so one MULTI: both or neither.
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		removed = p.ZRem(ctx, k.Wait, userID)
		p.HDel(ctx, k.Waited, userID)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("leave waitlist: %w", err)
	}
	return removed.Val() == 1, nil
}

// HandOver gives units left in saleID's stock to its waiting buyers, one
// per id in orderIDs at most, first come first served, and returns how
// many it gave. Releases and joins never leave a unit in stock while a
// buyer waits; this repairs the one way they can meet (a counter re-loaded
// while the waitlist survived).
func (s *Store) HandOver(ctx context.Context, saleID int64, terms Terms, orderIDs []int64) (int, error) {
	if len(orderIDs) == 0 {
		return 0, nil
	}
	k := s.SaleKeys(saleID)
	args := append([]any{saleID}, terms.args()...)
	for _, id := range orderIDs {
		args = append(args, id)
	}
	var n int
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		if n, err = handOverScript.Run(ctx, c, k.unitKeys(), args...).Int(); err != nil {
			return false, fmt.Errorf("handover script: %w", err)
		}
		return n > 0, nil
	})
	return n, err
}

// SaleCounts are a live sale's Redis figures.
type SaleCounts struct {
	// Remaining is the stock counter (admissions still possible).
	Remaining int64
	// Waiting is the waitlist's length.
	Waiting int64
	// FromWaitlist counts the units the waitlist has given buyers.
	FromWaitlist int64
}

// Counts reads the figures of several sales in one round trip (split per
// node on a Cluster). A sale that is not warmed is absent.
func (s *Store) Counts(ctx context.Context, saleIDs []int64) (map[int64]SaleCounts, error) {
	type cmds struct {
		stock, handed *redis.StringCmd
		waiting       *redis.IntCmd
	}
	all := make([]cmds, len(saleIDs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range saleIDs {
			k := s.SaleKeys(id)
			all[i] = cmds{stock: p.Get(ctx, k.Stock), handed: p.HGet(ctx, k.Meta, "waitlist_admissions"), waiting: p.ZCard(ctx, k.Wait)}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read sale counts: %w", err)
	}
	out := make(map[int64]SaleCounts, len(saleIDs))
	for i, c := range all {
		n, err := c.stock.Int64()
		if err != nil {
			continue
		}
		handed, _ := c.handed.Int64()
		out[saleIDs[i]] = SaleCounts{Remaining: n, Waiting: c.waiting.Val(), FromWaitlist: handed}
	}
	return out, nil
}
