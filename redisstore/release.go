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
// when next is not nil, gives the order's units (item) back to their
// variant: each to the first waiting buyer, as one of next.IDs with
// next.Terms, or with nobody waiting to the warmed stock for open claims.
// Safe to repeat: a repeat finds the claim gone and does nothing (but
// finish the move of a sale of several segments that an earlier attempt
// parked).
//
// On a sale of one segment this is one script. On a sale of several, the
// script parks the units as a move in flight and they are given to the
// segment whose waiting buyer joined first (aim.lua, give.lua), or back to
// the buyer's own segment.
func (s *Store) Release(ctx context.Context, saleID int64, userID string, orderID int64, item seckill.Item, next *seckill.NextOrder) (seckill.Released, error) {
	item = item.OrDefault()
	k, n, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return seckill.Released{}, err
	}
	k = k.Variant(item.SKU)
	moveID := "r" + strconv.FormatInt(orderID, 10)
	args := []any{userID, orderID, 0, s.RestockChannel(), saleID, 0, 0, "", moveID, item.SKU, item.Quantity}
	if next != nil {
		give := item.Quantity
		if next.Units > 0 {
			give = min(next.Units, give)
		}
		args = append(append([]any{userID, orderID, give, s.RestockChannel(), saleID}, termArgs(next.Terms)...), moveID, item.SKU, item.Quantity)
		for _, id := range next.IDs {
			args = append(args, id)
		}
	}
	// A release waits for the replicas too: lost in a failover, the units
	// would be missing from the stock (or from the buyers they went to)
	// and the user's claim back. On ErrNotReplicated the caller retries,
	// which finds nothing left to do or, after a failover that lost it,
	// does it again.
	var out seckill.Released
	err = s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		res, err := releaseScript.Run(ctx, c, append(k.unitKeys(), k.Moves, k.Released, k.Units, k.Lines, k.Held), args...).Slice()
		if err != nil {
			return false, fmt.Errorf("release script: %w", err)
		}
		if out, err = parseReleased(saleID, item.SKU, res); err != nil {
			return false, err
		}
		return true, nil // the order is marked released, whatever else
	})
	if err != nil || next == nil || n == 1 {
		return out, err
	}
	// Land the units parked now, or by an earlier attempt that stopped
	// before landing them (nothing when neither parked any).
	handed, err := s.finishMove(ctx, saleID, n, segmentOf(userID, n), item.SKU, moveID, next.IDs, next.Terms)
	out.HandedTo = append(out.HandedTo, handed...)
	return out, err
}

// parseReleased reads release.lua's answer: {released, parked, then user,
// order, pay_by of each waiting buyer given a unit}.
func parseReleased(saleID int64, sku string, res []any) (seckill.Released, error) {
	if len(res) < 2 || (len(res)-2)%3 != 0 {
		return seckill.Released{}, fmt.Errorf("release script: unexpected reply %v", res)
	}
	out := seckill.Released{Now: res[0] == int64(1)}
	handed, err := parseHanded(saleID, sku, res[2:])
	out.HandedTo = handed
	return out, err
}

// parseHanded reads the triples user, order, pay_by ms of the waiting
// buyers a script gave a unit of sku to.
func parseHanded(saleID int64, sku string, res []any) ([]seckill.Admission, error) {
	var out []seckill.Admission
	for i := 0; i+2 < len(res); i += 3 {
		user, _ := res[i].(string)
		order, err1 := strconv.ParseInt(fmt.Sprint(res[i+1]), 10, 64)
		ms, err2 := strconv.ParseInt(fmt.Sprint(res[i+2]), 10, 64)
		if user == "" || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("unexpected handed-over buyer %v", res[i:i+3])
		}
		out = append(out, seckill.Admission{OrderID: order, SaleID: saleID, UserID: user, PayBy: time.UnixMilli(ms).UTC(),
			Item: seckill.Item{SKU: sku, Quantity: 1}})
	}
	return out, nil
}
