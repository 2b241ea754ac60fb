package api

import (
	"context"

	"github.com/seckill/seckill"
)

// listen follows the two pub/sub channels the API reacts to, until ctx is
// done: a restock clears the sale's sold-out flag, and an order change
// wakes that order's event streams. Every (re)subscription clears every
// flag and wakes every stream, since messages may have been missed while
// the connection was down; while it is down, flags expire and streams poll.
func (s *Server) listen(ctx context.Context) {
	s.cfg.Redis.FollowChanges(ctx, seckill.Changes{
		Restocked:    s.soldOut.clear,
		OrderChanged: s.watchers.wake,
		Subscribed: func() {
			s.soldOut.clearAll()
			s.watchers.wakeAll()
		},
		Interrupted: func(err error) {
			s.soldOut.clearAll()
			s.cfg.Log.Debug("pub/sub interrupted", "error", err)
		},
	})
}
