package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// Client lets this package's tests look at Redis directly; outside the
// package nothing reaches the raw client.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// SlotOf is the Cluster hash slot of key (its hash tag's, if it has one).
func SlotOf(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return slot(key)
}

// TakeForTest takes units from segment from for segment dest and stops there, as
// a mover that died would.
func (s *Store) TakeForTest(ctx context.Context, saleID int64, from int, id string, units int64, dest int) error {
	_, err := s.take(ctx, saleID, seckill.DefaultSKU, from, id, units, dest)
	return err
}

// MovesForTest counts the moves every segment of saleID was given.
func (s *Store) MovesForTest(ctx context.Context, saleID int64) (int64, error) {
	ks, err := s.allKeys(ctx, saleID)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, k := range ks {
		c, err := s.rdb.SCard(ctx, k.Moved).Result()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// SegmentOf is the segment userID belongs to on a sale of n segments.
func SegmentOf(userID string, n int) int { return segmentOf(userID, n) }

// GiveForTest takes units from segment from and gives them to segment dest, and
// stops before forgetting the move, as a mover killed between the two
// scripts would.
func (s *Store) GiveForTest(ctx context.Context, saleID int64, from int, id string, units int64, dest int) error {
	got, err := s.take(ctx, saleID, seckill.DefaultSKU, from, id, units, dest)
	if err != nil {
		return err
	}
	_, _, err = s.give(ctx, saleID, seckill.DefaultSKU, dest, id, got, nil, nil, seckill.Terms{}, false)
	return err
}

// AimForTest aims parked move id of segment from at segment dest (aim.lua).
func (s *Store) AimForTest(ctx context.Context, saleID int64, from int, id string, dest int) error {
	_, _, _, err := s.aim(ctx, saleID, seckill.DefaultSKU, from, id, dest)
	return err
}

// GiveOnlyForTest runs give.lua alone: a concurrent mover's second step.
func (s *Store) GiveOnlyForTest(ctx context.Context, saleID int64, dest int, id string, units int64) error {
	_, _, err := s.give(ctx, saleID, seckill.DefaultSKU, dest, id, units, nil, nil, seckill.Terms{}, false)
	return err
}

// ForgetOnlyForTest runs forget.lua alone: a concurrent mover's last step.
func (s *Store) ForgetOnlyForTest(ctx context.Context, saleID int64, from int, id string) error {
	return s.forget(ctx, saleID, seckill.DefaultSKU, from, id)
}

var UserInKey = userInKey

// MaxReparks is how often one landing sends its rest on.
const MaxReparks = maxReparks
