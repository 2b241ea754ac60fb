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
// buyer waits in no line (served, or left, since); ErrNotWarmed when the
// buyer's segment is not loaded (its keys lost since the join). The entry's sale, user,
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
	// The place and whether the segment is loaded, read together: a
	// buyer in no line of a segment Redis lost (not re-warmed yet) may be
	// put back from the database's rows, so "not waiting" cannot be told.
	var score *redis.FloatCmd
	var loaded *redis.IntCmd
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		score = p.ZScore(ctx, line, userID)
		loaded = p.Exists(ctx, k.Meta)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return e, false, fmt.Errorf("read waitlist: %w", err)
	}
	if errors.Is(score.Err(), redis.Nil) {
		if loaded.Val() == 0 {
			return e, false, ErrNotWarmed
		}
		return e, false, nil
	}
	if score.Err() != nil {
		return e, false, fmt.Errorf("read waitlist: %w", score.Err())
	}
	return seckill.WaitlistEntry{SaleID: saleID, UserID: userID, Item: item, Place: int64(score.Val())}, true, nil
}

// Waiters is every buyer waiting in saleID's lines, each as PlaceOf reads
// them (the line's variant, the units awaited, the place): what the
// database's rows must keep for each (docs/DESIGN.md invariant 10; the
// audit compares them). A segment not loaded has no line to read.
func (s *Store) Waiters(ctx context.Context, saleID int64) ([]seckill.WaitlistEntry, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil {
		return nil, err
	}
	skus, err := s.SKUs(ctx, saleID)
	if err != nil {
		return nil, err
	}
	var out []seckill.WaitlistEntry
	for p := range n {
		k := s.SegmentKeys(saleID, p)
		quantities, err := s.rdb.HGetAll(ctx, k.Lines).Result()
		if err != nil {
			return nil, fmt.Errorf("read the waiting buyers of segment %d: %w", p, err)
		}
		for _, sku := range skus {
			line, err := s.rdb.ZRangeWithScores(ctx, k.Variant(sku).Wait, 0, -1).Result()
			if err != nil {
				return nil, fmt.Errorf("read the %s line of segment %d: %w", sku, p, err)
			}
			for _, z := range line {
				user := fmt.Sprint(z.Member)
				item := seckill.Item{SKU: sku, Quantity: 1}
				if _, q, ok := lineOf(quantities[user]); ok {
					item.Quantity = q
				}
				out = append(out, seckill.WaitlistEntry{SaleID: saleID, UserID: user, Item: item, Place: int64(z.Score)})
			}
		}
	}
	return out, nil
}
