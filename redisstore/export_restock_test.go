package redisstore

import (
	"context"

	"github.com/seckill/seckill"
)

// RestockInChunksForTest is Restock serving at most chunk waiting buyers
// per script, so a test can make a line longer than one script's share.
func (s *Store) RestockInChunksForTest(ctx context.Context, r seckill.Restock, terms seckill.Terms, nextID func() (int64, error), chunk int64) (seckill.Restocked, error) {
	return s.restock(ctx, r, terms, nextID, chunk)
}
