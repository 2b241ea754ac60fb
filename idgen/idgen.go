// Package idgen makes order ids: 64-bit, time-ordered, unique across every
// API process, with no shared counter per request.
//
// The ids are snowflakes (github.com/bwmarrin/snowflake: 41 bits of
// milliseconds, 10 bits of node, 12 bits of sequence). Each process leases a
// node number in Redis once at start (SET NX with an expiry it keeps
// renewing), so two live processes never share a node and an id is never
// minted twice.
package idgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/redis/go-redis/v9"
)

const (
	nodes     = 1 << 10 // snowflake.NodeBits
	leaseTTL  = 60 * time.Second
	renewEach = 15 * time.Second
)

// renew extends the lease only while it is still ours.
var renew = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// Generator mints ids. Safe for concurrent use.
type Generator struct {
	node   atomic.Pointer[snowflake.Node]
	nodeID atomic.Int64
	rdb    redis.UniversalClient
	prefix string
	token  string
	log    *slog.Logger
}

// New leases a node number under prefix and returns a generator.
func New(ctx context.Context, rdb redis.UniversalClient, prefix string, log *slog.Logger) (*Generator, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	g := &Generator{rdb: rdb, prefix: prefix, token: hex.EncodeToString(b), log: log}
	if err := g.lease(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// Next returns a fresh id.
func (g *Generator) Next() int64 { return g.node.Load().Generate().Int64() }

// NodeID is the node number this process holds.
func (g *Generator) NodeID() int64 { return g.nodeID.Load() }

// Time is when id was minted.
func Time(id int64) time.Time { return time.UnixMilli(snowflake.ID(id).Time()).UTC() }

func (g *Generator) key(n int64) string { return g.prefix + ":idnode:" + strconv.FormatInt(n, 10) }

// lease takes the first free node number from a random start.
func (g *Generator) lease(ctx context.Context) error {
	start, err := rand.Int(rand.Reader, big.NewInt(nodes))
	if err != nil {
		return err
	}
	for i := int64(0); i < nodes; i++ {
		n := (start.Int64() + i) % nodes
		ok, err := g.rdb.SetNX(ctx, g.key(n), g.token, leaseTTL).Result()
		if err != nil {
			return fmt.Errorf("lease id node: %w", err)
		}
		if !ok {
			continue
		}
		node, err := snowflake.NewNode(n)
		if err != nil {
			return err
		}
		g.node.Store(node)
		g.nodeID.Store(n)
		return nil
	}
	return errors.New("lease id node: all 1024 node numbers are taken")
}

// Run renews the lease until ctx is done, and releases it then. If the
// lease was lost (Redis restarted empty, or the process stalled past the
// expiry), it takes a node number again before the old one can be reused.
func (g *Generator) Run(ctx context.Context) error {
	t := time.NewTicker(renewEach)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = g.rdb.Eval(rctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`,
				[]string{g.key(g.NodeID())}, g.token).Err()
			return nil
		case <-t.C:
		}
		n, err := renew.Run(ctx, g.rdb, []string{g.key(g.NodeID())}, g.token, leaseTTL.Milliseconds()).Int()
		if err != nil {
			g.log.Warn("renew id node lease", "node", g.NodeID(), "error", err)
			continue
		}
		if n == 0 {
			g.log.Warn("id node lease lost; leasing again", "node", g.NodeID())
			if err := g.lease(ctx); err != nil {
				g.log.Error("lease id node", "error", err)
			}
		}
	}
}
