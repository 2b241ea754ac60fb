package redisstore

import (
	"context"

	"github.com/seckill/seckill"
)

// RestockSlack is restockSlack: the order ids a final restock script gets
// beyond the buyers planned in segment 0.
const RestockSlack = restockSlack

// TakeSKUForTest is TakeForTest for variant sku: a mover of that
// variant's units that took them and died.
func (s *Store) TakeSKUForTest(ctx context.Context, saleID int64, sku string, from int, id string, units int64, dest int) error {
	_, err := s.take(ctx, saleID, sku, from, id, units, dest)
	return err
}

// GiveSKUForTest is GiveForTest for variant sku: a mover that gave units
// of that variant and died before forgetting the move.
func (s *Store) GiveSKUForTest(ctx context.Context, saleID int64, sku string, from int, id string, units int64, dest int) error {
	got, err := s.take(ctx, saleID, sku, from, id, units, dest)
	if err != nil {
		return err
	}
	_, _, err = s.give(ctx, saleID, sku, dest, id, got, nil, nil, seckill.Terms{}, false)
	return err
}
