package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// NextOrder is what a released unit becomes when a buyer is waiting for
// one: a fresh order id and the sale's terms.
type NextOrder struct {
	ID    int64
	Terms Terms
}

// Released is what a Release did.
type Released struct {
	// Now is set when the claim still named the order and was released
	// by this call.
	Now bool
	// HandedTo is the waiting buyer who got the unit, as a new admission;
	// nil when nobody did (the unit went back to the stock, or stayed out
	// of it).
	HandedTo *Admission
}

// Release forgets userID's claim on saleID if it still names orderID and,
// when next is not nil, gives the unit back: to the first waiting buyer,
// as order next.ID with next.Terms, or with nobody waiting to the warmed
// stock for open claims. Safe to repeat: a repeat finds the claim gone
// and does nothing (but finish the move of a sale of several segments that an
// earlier attempt parked).
//
// On a sale of one segment this is one script. On a sale of several, the
// script parks the unit as a move in flight and it is given to the segment
// whose waiting buyer joined first (aim.lua, give.lua), or back to the
// buyer's own segment.
func (s *Store) Release(ctx context.Context, saleID int64, userID string, orderID int64, next *NextOrder) (Released, error) {
	k, n, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return Released{}, err
	}
	moveID := "r" + strconv.FormatInt(orderID, 10)
	args := []any{userID, orderID, "0", s.RestockChannel(), saleID, 0, 0, 0, "", moveID}
	if next != nil {
		args = append(append([]any{userID, orderID, "1", s.RestockChannel(), saleID, next.ID}, next.Terms.args()...), moveID)
	}
	// A release waits for the replicas too: lost in a failover, the unit
	// would be missing from the stock (or from the buyer it went to) and
	// the user's claim back. On ErrNotReplicated the caller retries, which
	// finds nothing left to do or, after a failover that lost it, does it
	// again.
	var out Released
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		res, err := releaseScript.Run(ctx, c, append(k.unitKeys(), k.Moves, k.Released), args...).Slice()
		if err != nil {
			return false, fmt.Errorf("release script: %w", err)
		}
		if out, err = parseReleased(saleID, next, res); err != nil {
			return false, err
		}
		return true, nil // the order is marked released, whatever else
	})
	if err != nil || next == nil || n == 1 {
		return out, err
	}
	// Land the unit parked now, or by an earlier attempt that stopped
	// before landing it (nothing when neither parked one).
	handed, err := s.finishMove(ctx, saleID, n, segmentOf(userID, n), moveID, []int64{next.ID}, next.Terms)
	if len(handed) > 0 {
		out.HandedTo = &handed[0]
	}
	return out, err
}

func parseReleased(saleID int64, next *NextOrder, res []any) (Released, error) {
	if len(res) != 4 {
		return Released{}, fmt.Errorf("release script: unexpected reply %v", res)
	}
	out := Released{Now: res[0] == int64(1)}
	if user, _ := res[1].(string); user != "" && next != nil {
		ms, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
		if err != nil {
			return Released{}, fmt.Errorf("release script: bad pay_by %v", res[2])
		}
		out.HandedTo = &Admission{OrderID: next.ID, SaleID: saleID, UserID: user, PayBy: time.UnixMilli(ms).UTC()}
	}
	return out, nil
}
