package api

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// listen follows the two pub/sub channels the API reacts to, until ctx is
// done: a restock clears the sale's sold-out flag, and an order change
// wakes that order's event streams. Every (re)subscription clears every
// flag and wakes every stream, since messages may have been missed while
// the connection was down.
func (s *Server) listen(ctx context.Context) {
	restock, orders := s.cfg.Scripts.RestockChannel(), s.cfg.Scripts.OrderChannel()
	sub := s.cfg.Scripts.Client().Subscribe(ctx, restock, orders)
	defer func() { _ = sub.Close() }()
	for {
		msg, err := sub.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// go-redis reconnects on the next Receive; flags expire and
			// streams poll meanwhile.
			s.soldOut.clearAll()
			s.cfg.Log.Debug("pub/sub interrupted", "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			s.soldOut.clearAll()
			s.watchers.wakeAll()
		case *redis.Message:
			id, err := strconv.ParseInt(m.Payload, 10, 64)
			if err != nil {
				continue
			}
			switch m.Channel {
			case restock:
				s.soldOut.clear(id)
			case orders:
				s.watchers.wake(id)
			}
		}
	}
}
