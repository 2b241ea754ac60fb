package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is a write that did not reach the replicas it must
// before it counts, in time. It happened on the primary and may or may
// not survive a failover: the outcome is unknown, like a timeout. Answer
// "retry", never undo it.
var ErrNotReplicated = errors.New("redis: the write did not reach enough replicas in time")

// durably runs do on a connection to the primary that holds key and, when
// do reports it wrote something that must survive a failover, waits on
// that same connection (WAIT counts the writes of the connection it is
// sent on) until s.replicas replicas hold it, for at most s.wait. Without
// replicas to wait for it runs do on the pooled client, as any call.
//
// On a Cluster, a failure (a node gone, a slot moved) makes the client
// reload the cluster's layout, so the caller's retry finds the new primary.
func (s *Store) durably(ctx context.Context, key string, do func(redis.Cmdable) (wrote bool, err error)) error {
	if s.replicas == 0 {
		_, err := do(s.rdb)
		return err
	}
	node, err := s.primaryFor(ctx, key)
	if err != nil {
		return err
	}
	conn := node.Conn()
	defer func() { _ = conn.Close() }()
	wrote, err := do(conn)
	if err == nil && wrote {
		err = s.waitReplicas(ctx, conn)
	}
	if err != nil {
		if c, ok := s.rdb.(*redis.ClusterClient); ok {
			c.ReloadState(ctx)
		}
	}
	return err
}

func (s *Store) waitReplicas(ctx context.Context, conn *redis.Conn) error {
	n, err := conn.Wait(ctx, s.replicas, s.wait).Result()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReplicated, err)
	}
	if n < int64(s.replicas) {
		return fmt.Errorf("%w (%d of %d within %s)", ErrNotReplicated, n, s.replicas, s.wait)
	}
	return nil
}

// primaryFor is the client of the primary holding key: on a Cluster the
// node serving key's slot, otherwise the one client (which follows a
// Sentinel failover by itself).
func (s *Store) primaryFor(ctx context.Context, key string) (*redis.Client, error) {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("find the primary of %s: %w", key, err)
		}
		return n, nil
	case *redis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("redisstore: unsupported client %T", s.rdb)
}

// Replicas is the fewest replicas any primary has connected now (on a
// Cluster, over every primary): fewer than MinReplicas and every
// admission is answered 503.
func (s *Store) Replicas(ctx context.Context) (int, error) {
	count := func(ctx context.Context, c *redis.Client) (int, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return 0, fmt.Errorf("read replication info: %w", err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
				return strconv.Atoi(v)
			}
		}
		return 0, nil
	}
	var mu sync.Mutex
	fewest := -1
	err := s.eachPrimary(ctx, func(ctx context.Context, n *redis.Client) error {
		k, err := count(ctx, n)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && (fewest < 0 || k < fewest) {
			fewest = k
		}
		return err
	})
	return max(fewest, 0), err
}
