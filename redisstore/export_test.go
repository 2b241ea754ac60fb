package redisstore

import "github.com/redis/go-redis/v9"

// Client lets this package's tests look at Redis directly; outside the
// package nothing reaches the raw client.
func (s *Store) Client() redis.UniversalClient { return s.rdb }
