package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// IDNodes are the leases of snowflake node numbers (idgen): one key per
// node number, holding the token of the process that leased it.
type IDNodes struct{ s *Store }

// IDNodes returns the node-number leases of s's installation.
func (s *Store) IDNodes() IDNodes { return IDNodes{s} }

func (l IDNodes) key(n int64) string { return l.s.prefix + ":idnode:" + strconv.FormatInt(n, 10) }

// Take leases node n to token for ttl unless someone holds it; it reports
// whether it did. A lease taken waits for the replicas like an admission:
// lost in a failover, a second process could take the same node number
// and mint the same ids.
func (l IDNodes) Take(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error) {
	var ok bool
	err := l.s.durably(ctx, l.key(n), func(c redis.Cmdable) (bool, error) {
		var err error
		ok, err = c.SetNX(ctx, l.key(n), token, ttl).Result()
		return ok, err
	})
	if err != nil {
		return false, fmt.Errorf("lease id node: %w", err)
	}
	return ok, nil
}

// renewLease extends a lease only while it is still ours.
var renewLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// Renew extends token's lease of node n to ttl; false when it is no
// longer token's (expired, or Redis lost it). A renewal waits for the
// replicas like a Take: idgen mints until ttl after it sent a renewal
// granted, and one a failover lost would let the node expire before that.
func (l IDNodes) Renew(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error) {
	var held bool
	err := l.s.durably(ctx, l.key(n), func(c redis.Cmdable) (bool, error) {
		v, err := renewLease.Run(ctx, c, []string{l.key(n)}, token, ttl.Milliseconds()).Int()
		held = v == 1
		return held, err
	})
	if err != nil {
		return false, fmt.Errorf("renew id node lease: %w", err)
	}
	return held, nil
}

// Held reports whether node n is leased to anyone.
func (l IDNodes) Held(ctx context.Context, n int64) (bool, error) {
	v, err := l.s.rdb.Exists(ctx, l.key(n)).Result()
	return v == 1, err
}
