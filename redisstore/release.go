package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

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
func (s *Store) Release(ctx context.Context, saleID int64, userID string, orderID int64, next *seckill.NextOrder) (seckill.Released, error) {
	k, n, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return seckill.Released{}, err
	}
	moveID := "r" + strconv.FormatInt(orderID, 10)
	args := []any{userID, orderID, "0", s.RestockChannel(), saleID, 0, 0, 0, "", moveID}
	if next != nil {
		args = append(append([]any{userID, orderID, "1", s.RestockChannel(), saleID, next.ID}, termArgs(next.Terms)...), moveID)
	}
	// A release waits for the replicas too: lost in a failover, the unit
	// would be missing from the stock (or from the buyer it went to) and
	// the user's claim back. On ErrNotReplicated the caller retries, which
	// finds nothing left to do or, after a failover that lost it, does it
	// again.
	var out seckill.Released
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

func parseReleased(saleID int64, next *seckill.NextOrder, res []any) (seckill.Released, error) {
	if len(res) != 4 {
		return seckill.Released{}, fmt.Errorf("release script: unexpected reply %v", res)
	}
	out := seckill.Released{Now: res[0] == int64(1)}
	if user, _ := res[1].(string); user != "" && next != nil {
		ms, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
		if err != nil {
			return seckill.Released{}, fmt.Errorf("release script: bad pay_by %v", res[2])
		}
		out.HandedTo = &seckill.Admission{OrderID: next.ID, SaleID: saleID, UserID: user, PayBy: time.UnixMilli(ms).UTC()}
	}
	return out, nil
}
