// Package idgen makes order ids: 64-bit, time-ordered, unique across every
// API process, with no shared counter per request.
//
// The ids are snowflakes (github.com/bwmarrin/snowflake: 41 bits of
// milliseconds, 10 bits of node, 12 bits of sequence). Each process leases a
// node number (in Redis, through Leases) once at start (SET NX with an
// expiry it keeps renewing), so two live processes never share a node and
// an id is never minted twice. When Redis comes back empty, each process
// takes its own node number back within RenewEvery; claims are admitted
// again only after that (package warmup waits for it).
package idgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/snowflake"
)

const (
	nodes    = 1 << 10 // snowflake.NodeBits
	leaseTTL = 60 * time.Second
	// RenewEvery is how often a process renews its lease. Within one
	// period of Redis coming back empty, every running process has taken
	// its own node number again (or, if a newcomer took it, another one):
	// so what admits claims after a loss (the warmer) waits at least this
	// long, and no node number serves two processes while claims are
	// admitted.
	RenewEvery = 3 * time.Second
)

// Leases hold node numbers for processes (redisstore.IDNodes).
type Leases interface {
	// Take leases node n to token for ttl unless someone holds it.
	Take(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error)
	// Renew extends token's lease of n; false when token no longer holds it.
	Renew(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error)
	// Free gives n back if token holds it.
	Free(ctx context.Context, n int64, token string) error
}

// Generator mints ids. Safe for concurrent use.
type Generator struct {
	node   atomic.Pointer[snowflake.Node]
	nodeID atomic.Int64
	leases Leases
	token  string
	log    *slog.Logger
	// keep: Run leaves the node to expire instead of freeing it.
	keep atomic.Bool
}

// New leases a node number and returns a generator.
func New(ctx context.Context, leases Leases, log *slog.Logger) (*Generator, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	g := &Generator{leases: leases, token: hex.EncodeToString(b), log: log}
	if err := g.lease(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// Next returns a fresh id.
func (g *Generator) Next() int64 { return g.node.Load().Generate().Int64() }

// NodeID is the node number this process holds.
func (g *Generator) NodeID() int64 { return g.nodeID.Load() }

// At is the smallest id minted at t (node 0, sequence 0): an id as old as
// t, for comparisons and tests.
func At(t time.Time) int64 {
	return (t.UnixMilli() - snowflake.Epoch) << (snowflake.NodeBits + snowflake.StepBits)
}

// Time is when id was minted.
func Time(id int64) time.Time { return time.UnixMilli(snowflake.ID(id).Time()).UTC() }

// leaseAgain leases a node number again after the lease was lost: the same
// one when it is free (Redis restarted empty: every process takes its own
// back, none takes another's), else another.
func (g *Generator) leaseAgain(ctx context.Context) {
	n := g.NodeID()
	ok, err := g.leases.Take(ctx, n, g.token, leaseTTL)
	if err != nil {
		g.log.Error("lease id node again", "node", n, "error", err)
		return // tried again at the next renewal
	}
	if ok {
		g.log.Warn("id node lease lost; leased the same node again", "node", n)
		return
	}
	if err := g.lease(ctx); err != nil {
		g.log.Error("lease id node", "error", err)
		return
	}
	g.log.Warn("id node lease lost and the node taken; leased another", "lost", n, "node", g.NodeID())
}

// lease takes the first free node number from a random start.
func (g *Generator) lease(ctx context.Context) error {
	start, err := rand.Int(rand.Reader, big.NewInt(nodes))
	if err != nil {
		return err
	}
	for i := int64(0); i < nodes; i++ {
		n := (start.Int64() + i) % nodes
		ok, err := g.leases.Take(ctx, n, g.token, leaseTTL)
		if err != nil {
			return err
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

// KeepLease makes Run, once its ctx is done, leave the node to expire
// (leaseTTL) instead of freeing it: for a process that may still mint ids
// after Run returns (requests it gave up waiting for), so no other process
// leases the node while this one still uses it.
func (g *Generator) KeepLease() { g.keep.Store(true) }

// Run renews the lease every RenewEvery until ctx is done, and releases it
// then (unless KeepLease was called). If the lease was lost (Redis
// restarted empty, or the process stalled past the expiry), it takes its
// node number again, or another if that one is taken.
func (g *Generator) Run(ctx context.Context) error {
	t := time.NewTicker(RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if g.keep.Load() {
				g.log.Warn("id node left to expire: requests may still mint ids", "node", g.NodeID(), "expiresIn", leaseTTL.String())
				return nil
			}
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = g.leases.Free(rctx, g.NodeID(), g.token)
			return nil
		case <-t.C:
		}
		held, err := g.leases.Renew(ctx, g.NodeID(), g.token, leaseTTL)
		if err != nil {
			g.log.Warn("renew id node lease", "node", g.NodeID(), "error", err)
			continue
		}
		if !held {
			g.leaseAgain(ctx)
		}
	}
}
