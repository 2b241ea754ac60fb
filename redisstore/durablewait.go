package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// PlaceOf reads where userID waits in saleID's lines, as the database
// keeps it (seckill.WaitlistEntry: the line's variant, the units awaited
// and the join sequence, their score in the line), for the durable
// waitlist (docs/DESIGN.md invariant 10): the API and the draw write it
// after a join answered WAITING or ALREADY_WAITING. ok is false when the
// buyer waits in no line (served, or left, since). The entry's sale, user,
// order id and time are the caller's to fill.
func (s *Store) PlaceOf(ctx context.Context, saleID int64, userID string) (e seckill.WaitlistEntry, ok bool, err error) {
	k, _, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return e, false, err
	}
	line, item := k.Wait, seckill.DefaultItem
	if v, err := s.rdb.HGet(ctx, k.Lines, userID).Result(); err == nil {
		l, q, ok := lineOf(v)
		if !ok {
			return e, false, fmt.Errorf("waitlist entry of %s: malformed %q", userID, v)
		}
		line, item = l, seckill.Item{SKU: skuOfLine(k, l), Quantity: q}
	} else if !errors.Is(err, redis.Nil) {
		return e, false, fmt.Errorf("read waitlist: %w", err)
	}
	score, err := s.rdb.ZScore(ctx, line, userID).Result()
	if errors.Is(err, redis.Nil) {
		return e, false, nil
	}
	if err != nil {
		return e, false, fmt.Errorf("read waitlist: %w", err)
	}
	return seckill.WaitlistEntry{SaleID: saleID, UserID: userID, Item: item, Place: int64(score)}, true, nil
}
