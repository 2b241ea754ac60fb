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
//
// The lease is fenced: Next mints only until the lease's confirmed expiry,
// measured on this process's monotonic clock from when the last Take or
// Renew that succeeded was sent, and refuses after (ErrLeaseExpired). A
// process paused past its lease (a frozen VM or container, SIGSTOP, a long
// GC stall) may find its node leased by another meanwhile; checking only
// at the next renewal, it would mint the newcomer's ids until then. A
// stopped process never frees its node either: the node stays leased
// until the lease expires, after every id the process minted under it.
package idgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/snowflake"
)

const (
	nodes    = 1 << 10 // snowflake.NodeBits
	leaseTTL = 60 * time.Second
	// validFor is how long after a Take or Renew was sent Next trusts
	// the lease: less than leaseTTL by a tenth, for a monotonic clock
	// here running slower than Redis' clock (far more than any clock's
	// rate error). RenewEvery is so much shorter that a running process
	// never reaches it.
	validFor = leaseTTL - leaseTTL/10
	// RenewEvery is how often a process renews its lease. Within one
	// period of Redis coming back empty, every running process has taken
	// its own node number again (or, if a newcomer took it, another one):
	// so what admits claims after a loss (the warmer) waits at least this
	// long, and no node number serves two processes while claims are
	// admitted.
	RenewEvery = 3 * time.Second
)

// ErrLeaseExpired is Next's refusal past the confirmed expiry of the
// process's node lease (the process was paused, or Redis has not answered
// a renewal for most of a lease). It is temporary: Next mints again once a
// renewal is confirmed.
var ErrLeaseExpired = errors.New("id node lease past its confirmed expiry")

// Leases hold node numbers for processes (redisstore.IDNodes).
type Leases interface {
	// Take leases node n to token for ttl unless someone holds it; an
	// error when the store cannot say (the node may or may not be taken).
	Take(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error)
	// Renew extends token's lease of n to ttl; false when token no longer
	// holds it, an error when the store cannot say.
	Renew(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error)
}

// hold is the node this process mints with and until when the lease is
// surely its own.
type hold struct {
	n     int64
	node  *snowflake.Node
	until time.Time // with a monotonic reading (time.Now), unless a test's clock
	// lost: a renewal found the lease gone; nothing is minted until
	// another is confirmed, whatever until says.
	lost bool
}

// valid reports whether ids may be minted under h at now.
func (h *hold) valid(now time.Time) bool { return !h.lost && !now.After(h.until) }

// Generator mints ids. Safe for concurrent use.
type Generator struct {
	held   atomic.Pointer[hold]
	leases Leases
	token  string
	log    *slog.Logger
	now    func() time.Time
}

// Option changes what New makes.
type Option func(*Generator)

// WithClock makes the generator read now instead of time.Now to decide
// whether its lease is confirmed (not for the ids' timestamps): for tests
// that pause a process without waiting for a lease to run out.
func WithClock(now func() time.Time) Option { return func(g *Generator) { g.now = now } }

// New leases a node number and returns a generator.
func New(ctx context.Context, leases Leases, log *slog.Logger, opts ...Option) (*Generator, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	g := &Generator{leases: leases, token: hex.EncodeToString(b), log: log, now: time.Now}
	for _, o := range opts {
		o(g)
	}
	if err := g.lease(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// Next returns a fresh id, or ErrLeaseExpired (wrapped, naming the node)
// past the confirmed expiry of the node's lease: a temporary refusal, to
// be answered like a Redis that cannot be reached.
func (g *Generator) Next() (int64, error) {
	h := g.held.Load()
	if !h.valid(g.now()) {
		return 0, fmt.Errorf("id node %d: %w", h.n, ErrLeaseExpired)
	}
	id := h.node.Generate().Int64()
	// Checked again after minting: a pause between the check and the
	// mint (the same stalls the fence is for) must not slip one id past
	// the expiry.
	if !h.valid(g.now()) {
		return 0, fmt.Errorf("id node %d: %w", h.n, ErrLeaseExpired)
	}
	return id, nil
}

// revoke stops Next at once: the lease was found lost, and until another
// is confirmed this process may mint nothing (a newcomer may hold the
// node).
func (g *Generator) revoke() {
	if h := g.held.Load(); h != nil {
		g.held.Store(&hold{n: h.n, node: h.node, until: h.until, lost: true})
	}
}

// NodeID is the node number this process holds.
func (g *Generator) NodeID() int64 { return g.held.Load().n }

// At is the smallest id minted at t (node 0, sequence 0): an id as old as
// t, for comparisons and tests.
func At(t time.Time) int64 {
	return (t.UnixMilli() - snowflake.Epoch) << (snowflake.NodeBits + snowflake.StepBits)
}

// Time is when id was minted.
func Time(id int64) time.Time { return time.UnixMilli(snowflake.ID(id).Time()).UTC() }

// confirmed records that the lease of the node held, asked for at sent,
// was granted again. It keeps the node's generator: a fresh one could mint
// again the sequence numbers of the current millisecond.
func (g *Generator) confirmed(sent time.Time) {
	h := g.held.Load()
	g.mintWith(h.n, h.node, sent)
}

// mintWith makes node n the one Next mints with, its lease granted to a
// request sent at sent. Next trusts the lease until validFor after the
// request was sent, not after its answer came: Redis counted the lease
// from some moment in between, and a slow answer must not stretch it.
func (g *Generator) mintWith(n int64, node *snowflake.Node, sent time.Time) {
	if prev := g.held.Load(); prev != nil && !prev.lost && sent.After(prev.until) {
		// The process was paused, or Redis did not confirm a renewal
		// for most of a lease: Next refused ids in between.
		g.log.Warn("id node lease confirmed again after it ran out", "node", n,
			"unconfirmedFor", sent.Sub(prev.until).Round(time.Millisecond).String())
	}
	g.held.Store(&hold{n: n, node: node, until: sent.Add(validFor)})
}

// leaseAgain leases a node number again after the lease was lost: the same
// one when it is free (Redis restarted empty: every process takes its own
// back, none takes another's), else another.
func (g *Generator) leaseAgain(ctx context.Context) {
	n := g.NodeID()
	sent := g.now()
	ok, err := g.leases.Take(ctx, n, g.token, leaseTTL)
	if err != nil {
		g.log.Error("lease id node again", "node", n, "error", err)
		return // tried again at the next renewal
	}
	if ok {
		g.confirmed(sent)
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
		sent := g.now()
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
		g.mintWith(n, node, sent)
		return nil
	}
	return errors.New("lease id node: all 1024 node numbers are taken")
}

// Run renews the lease every RenewEvery until ctx is done. If the lease
// was lost (Redis restarted empty, or the process stalled past the
// expiry), it takes its node number again, or another if that one is
// taken.
//
// Once ctx is done the node is left leased until the lease expires, not
// freed: requests Run's caller gave up waiting for may still mint ids
// (Next refuses only past the confirmed expiry, which comes before Redis
// lets the lease go), and a host whose clock is behind this one's could
// otherwise lease the node at once and mint ids with the timestamps just
// used. A node so kept is out of use for at most leaseTTL: the 1024
// numbers run out only if processes start faster than 17 a second.
func (g *Generator) Run(ctx context.Context) error {
	t := time.NewTicker(RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			g.log.Info("id node left to expire", "node", g.NodeID(), "within", leaseTTL.String())
			return nil
		case <-t.C:
		}
		n := g.NodeID()
		sent := g.now()
		held, err := g.leases.Renew(ctx, n, g.token, leaseTTL)
		if err != nil {
			g.log.Warn("renew id node lease", "node", n, "error", err)
			continue
		}
		if held {
			g.confirmed(sent)
			continue
		}
		g.revoke()
		g.leaseAgain(ctx)
	}
}
