package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// FollowChanges calls h for every message of the installation's two
// pub/sub channels until ctx is done, renewing the subscription whenever it
// breaks (a failover included): a sale has stock again (release.lua
// publishes it) or an order's row changed (PublishOrderChange).
//
// The channels are broadcast pub/sub (PUBLISH/SUBSCRIBE), not sharded
// (SPUBLISH/SSUBSCRIBE), also on a Cluster: every API process needs the
// messages of every sale, and there are few of them (at most a handful per
// unit sold), so the cluster bus carrying each to every node costs little,
// while sharded channels would need a subscription per sale's slot, made
// and dropped as sales come and go, and a script may only SPUBLISH to its
// own slot.
func (s *Store) FollowChanges(ctx context.Context, h seckill.Changes) {
	restock, orders := s.RestockChannel(), s.OrderChannel()
	sub := s.rdb.Subscribe(ctx, restock, orders)
	defer func() { _ = sub.Close() }()
	for {
		msg, err := sub.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// go-redis reconnects on the next Receive.
			h.Interrupted(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			h.Subscribed()
		case *redis.Message:
			id, err := strconv.ParseInt(m.Payload, 10, 64)
			if err != nil {
				continue
			}
			switch m.Channel {
			case restock:
				h.Restocked(id)
			case orders:
				h.OrderChanged(id)
			}
		}
	}
}
