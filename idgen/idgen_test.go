package idgen_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestGenerator_ProcessesLeaseDistinctNodes(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	ctx := context.Background()
	a, err := idgen.New(ctx, nodes, discard)
	require.NoError(t, err)
	b, err := idgen.New(ctx, nodes, discard)
	require.NoError(t, err)
	require.NotEqual(t, a.NodeID(), b.NodeID())

	// Two "processes" minting at once never mint the same id.
	minted, refused := mintAtOnce(20000, a, b)
	require.Zero(t, refused[0]+refused[1])
	requireDistinct(t, minted...)
}

func TestGenerator_IDsAreTimeOrdered(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	g, err := idgen.New(context.Background(), nodes, discard)
	require.NoError(t, err)
	before := time.Now().Add(-time.Millisecond)
	first, err := g.Next()
	require.NoError(t, err)
	time.Sleep(2 * time.Millisecond)
	second, err := g.Next()
	require.NoError(t, err)
	require.Greater(t, second, first)
	require.WithinRange(t, idgen.Time(first), before, time.Now().Add(time.Millisecond))
}

// A stopped process leaves its node leased until the lease expires rather
// than freeing it: requests it gave up waiting for may still mint ids, and
// a host whose clock is behind would mint the timestamps just used.
func TestGenerator_AStoppedProcessLeavesItsNodeToExpire(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	g, stop := runGenerator(t, nodes)
	stop()
	key := prefix + ":idnode:" + strconv.FormatInt(g.NodeID(), 10)
	require.Equal(t, int64(1), rdb.Exists(context.Background(), key).Val(), "the node is still leased")
	require.Greater(t, rdb.PTTL(context.Background(), key).Val(), time.Duration(0), "and expires")
	taken, err := nodes.Take(context.Background(), g.NodeID(), "another process", time.Minute)
	require.NoError(t, err)
	require.False(t, taken, "no other process leases it meanwhile")
	_, err = g.Next()
	require.NoError(t, err, "a request still running may mint with it")
}

// A process paused past its lease (a frozen VM or container, SIGSTOP, a
// long GC stall) whose node a newcomer leased meanwhile refuses to mint
// when it wakes, instead of minting the newcomer's ids until its next
// renewal finds the lease gone.
func TestGenerator_APausedProcessRefusesToMintWithTheNodeItLost(t *testing.T) {
	clock := newClock()
	leases := newMemLeases(clock.now)
	const free = 7
	leases.holdAllBut(free) // so the newcomer takes the paused one's node
	paused, err := idgen.New(t.Context(), leases, discard, idgen.WithClock(clock.now))
	require.NoError(t, err)
	require.Equal(t, int64(free), paused.NodeID())
	clock.advance(30 * time.Second)
	_, err = paused.Next()
	require.NoError(t, err, "half a lease after it was taken, the node is still its own")

	clock.advance(2 * time.Minute) // no renewal: the process is paused
	newcomer, err := idgen.New(t.Context(), leases, discard, idgen.WithClock(clock.now))
	require.NoError(t, err)
	require.Equal(t, int64(free), newcomer.NodeID(), "the lease ran out: the newcomer leased the node")

	// The paused process wakes and mints at once with the newcomer.
	minted, refused := mintAtOnce(20000, paused, newcomer)
	requireDistinct(t, minted...)
	require.Equal(t, 20000, refused[0], "the woken process mints nothing")
	require.Zero(t, refused[1])
	_, err = paused.Next()
	require.ErrorIs(t, err, idgen.ErrLeaseExpired)
	require.ErrorContains(t, err, "id node 7")
}

// Only a renewal sent after a pause confirms the lease again: one sent
// before and answered after it does not (Redis counted the lease from
// when it was sent), and Next keeps refusing while a renewal is in
// flight.
func TestGenerator_OnlyARenewalSentAfterAPauseConfirmsTheLease(t *testing.T) {
	clock := newClock()
	leases := &gatedLeases{memLeases: newMemLeases(nil), asked: make(chan struct{}), answer: make(chan bool)}
	g, stop := runGenerator(t, leases, idgen.WithClock(clock.now))
	defer stop()
	refuses := func(msg string) {
		t.Helper()
		_, err := g.Next()
		require.ErrorIs(t, err, idgen.ErrLeaseExpired, msg)
	}

	<-leases.asked // a renewal is sent, and the process is paused
	clock.advance(2 * time.Minute)
	refuses("woken, while the renewal sent before the pause is in flight")
	leases.answer <- true // Redis still held the node: its clock had not run the lease out
	<-leases.asked        // that answer is taken in, and the next renewal is sent
	refuses("the late answer confirmed the lease only from before the pause")
	leases.answer <- true
	require.Eventually(t, func() bool { _, err := g.Next(); return err == nil }, time.Second, 5*time.Millisecond,
		"a renewal sent after the pause confirms the lease")
}

// memLeases is a Redis of leases that can restart empty.
type memLeases struct {
	mu    sync.Mutex
	now   func() time.Time // nil: leases never expire
	owner map[int64]memLease
}

type memLease struct {
	token string
	until time.Time
}

func newMemLeases(now func() time.Time) *memLeases {
	return &memLeases{now: now, owner: map[int64]memLease{}}
}

// held is n's lease, while it lasts. Under mu.
func (m *memLeases) held(n int64) (memLease, bool) {
	l, ok := m.owner[n]
	if ok && m.now != nil && !m.now().Before(l.until) {
		delete(m.owner, n)
		return memLease{}, false
	}
	return l, ok
}

func (m *memLeases) Take(_ context.Context, n int64, token string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.held(n); held {
		return false, nil
	}
	m.owner[n] = m.lease(token, ttl)
	return true, nil
}

func (m *memLeases) Renew(_ context.Context, n int64, token string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, held := m.held(n); !held || l.token != token {
		return false, nil
	}
	m.owner[n] = m.lease(token, ttl)
	return true, nil
}

func (m *memLeases) lease(token string, ttl time.Duration) memLease {
	l := memLease{token: token}
	if m.now != nil {
		l.until = m.now().Add(ttl)
	}
	return l
}

// holdAllBut leases every node number but n to other processes, for good.
func (m *memLeases) holdAllBut(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range int64(1 << 10) {
		if i != n {
			m.owner[i] = memLease{token: "other", until: time.Now().Add(24 * time.Hour)}
		}
	}
}

func (m *memLeases) restartEmpty() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owner = map[int64]memLease{}
}

func (m *memLeases) holders(n int64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, _ := m.held(n)
	return l.token
}

// gatedLeases renew only when told: each Renew says it was asked on asked,
// then waits for its answer (whether the lease is still held) on answer.
type gatedLeases struct {
	*memLeases
	asked  chan struct{}
	answer chan bool
}

func (g *gatedLeases) Renew(ctx context.Context, _ int64, _ string, _ time.Duration) (bool, error) {
	select {
	case g.asked <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	select {
	case held := <-g.answer:
		return held, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// clock is a test's clock, which moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// runGenerator leases a node from leases and renews it until stop.
func runGenerator(t *testing.T, leases idgen.Leases, opts ...idgen.Option) (g *idgen.Generator, stop func()) {
	t.Helper()
	g, err := idgen.New(t.Context(), leases, discard, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	return g, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// mintAtOnce has each generator mint n ids at the same time as the others,
// and returns the ids minted and how many times each refused.
func mintAtOnce(n int, gens ...*idgen.Generator) (minted []int64, refused []int) {
	ids := make([][]int64, len(gens))
	refused = make([]int, len(gens))
	var wg sync.WaitGroup
	for i, g := range gens {
		wg.Go(func() {
			for range n {
				id, err := g.Next()
				if errors.Is(err, idgen.ErrLeaseExpired) {
					refused[i]++
					continue
				}
				ids[i] = append(ids[i], id)
			}
		})
	}
	wg.Wait()
	for _, s := range ids {
		minted = append(minted, s...)
	}
	return minted, refused
}

func requireDistinct(t *testing.T, ids ...int64) {
	t.Helper()
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		require.Positive(t, id)
		require.False(t, seen[id], "id %d minted twice", id)
		seen[id] = true
	}
}

// When Redis comes back empty, a running process takes its own node back
// at its next renewal (so no process that renews takes another's); when a
// newcomer took it first, it moves to another node. Either way, one
// RenewEvery after the loss no node number serves two processes.
func TestGenerator_TakesItsNodeBackAfterRedisLostTheLeases(t *testing.T) {
	t.Run("its own node back", func(t *testing.T) {
		t.Parallel()
		leases := newMemLeases(nil)
		g, stop := runGenerator(t, leases)
		n := g.NodeID()
		leases.restartEmpty()
		require.Eventually(t, func() bool { return leases.holders(n) != "" }, idgen.RenewEvery+2*time.Second, 20*time.Millisecond,
			"the node is leased again")
		require.Equal(t, n, g.NodeID(), "the same node")
		other, err := idgen.New(t.Context(), leases, discard)
		require.NoError(t, err)
		require.NotEqual(t, n, other.NodeID(), "and held: a newcomer gets another")
		stop()
	})
	t.Run("another when a newcomer took it", func(t *testing.T) {
		t.Parallel()
		leases := newMemLeases(nil)
		g, stop := runGenerator(t, leases)
		n := g.NodeID()
		leases.restartEmpty()
		took, err := leases.Take(t.Context(), n, "newcomer", time.Minute)
		require.NoError(t, err)
		require.True(t, took)
		require.Eventually(t, func() bool { return g.NodeID() != n }, idgen.RenewEvery+2*time.Second, 20*time.Millisecond,
			"moved off the node the newcomer holds")
		require.Equal(t, "newcomer", leases.holders(n))
		require.NotEmpty(t, leases.holders(g.NodeID()), "and holds its new one")
		_, err = g.Next()
		require.NoError(t, err, "and mints with it")
		stop()
	})
}

// takeFails is memLeases whose Take errors while failing is set (Redis
// answering a renewal, then timing out on the next command).
type takeFails struct {
	*memLeases
	failing atomic.Bool
}

func (f *takeFails) Take(ctx context.Context, n int64, token string, ttl time.Duration) (bool, error) {
	if f.failing.Load() {
		return false, errors.New("i/o timeout")
	}
	return f.memLeases.Take(ctx, n, token, ttl)
}

// A renewal that answers "not yours any more" stops Next at once: when
// the Take that follows fails, the process must not go on minting with the
// node it knows it lost until the old confirmed expiry (up to 54 s), while
// the newcomer that holds it mints too.
func TestGenerator_ALeaseKnownLostMintsNothing(t *testing.T) {
	leases := &takeFails{memLeases: newMemLeases(nil)}
	g, stop := runGenerator(t, leases)
	defer stop()
	n := g.NodeID()
	leases.restartEmpty() // Redis restarted empty...
	newcomer, err := idgen.New(t.Context(), leases.memLeases, discard)
	require.NoError(t, err)
	if newcomer.NodeID() != n { // ...and a newcomer leased n (force it for the test)
		leases.restartEmpty()
		ok, err := leases.memLeases.Take(t.Context(), n, "newcomer", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	leases.failing.Store(true)
	time.Sleep(idgen.RenewEvery + 500*time.Millisecond) // the renewal found the lease gone; leaseAgain's Take failed
	require.Equal(t, n, g.NodeID())
	_, err = g.Next()
	require.ErrorIs(t, err, idgen.ErrLeaseExpired, "the process knows node %d is not its own, yet mints with it", n)
}
