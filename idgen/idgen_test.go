package idgen_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

func TestGenerator_ProcessesLeaseDistinctNodes(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	a, err := idgen.New(ctx, nodes, log)
	require.NoError(t, err)
	b, err := idgen.New(ctx, nodes, log)
	require.NoError(t, err)
	require.NotEqual(t, a.NodeID(), b.NodeID())

	// Two "processes" minting at once never mint the same id.
	const n = 20000
	ids := make(chan int64, 2*n)
	var wg sync.WaitGroup
	for _, g := range []*idgen.Generator{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				ids <- g.Next()
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := make(map[int64]bool, 2*n)
	for id := range ids {
		require.Positive(t, id)
		require.False(t, seen[id], "id %d minted twice", id)
		seen[id] = true
	}
}

func TestGenerator_IDsAreTimeOrdered(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	g, err := idgen.New(context.Background(), nodes, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	before := time.Now().Add(-time.Millisecond)
	first := g.Next()
	time.Sleep(2 * time.Millisecond)
	second := g.Next()
	require.Greater(t, second, first)
	require.WithinRange(t, idgen.Time(first), before, time.Now().Add(time.Millisecond))
}

func TestGenerator_RunReleasesTheLease(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := idgen.New(context.Background(), nodes, log)
	require.NoError(t, err)
	key := prefix + ":idnode:" + strconv.FormatInt(g.NodeID(), 10)
	require.Equal(t, int64(1), rdb.Exists(context.Background(), key).Val())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, int64(0), rdb.Exists(context.Background(), key).Val())
}

// A process whose requests may outlive Run (the API after its shutdown
// timeout) keeps its node until the lease expires: no other process can
// lease it and mint the same ids meanwhile.
func TestGenerator_KeepLeaseLeavesTheNodeToExpire(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	nodes := redisstore.New(rdb, prefix).IDNodes()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := idgen.New(context.Background(), nodes, log)
	require.NoError(t, err)
	key := prefix + ":idnode:" + strconv.FormatInt(g.NodeID(), 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	g.KeepLease()
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, int64(1), rdb.Exists(context.Background(), key).Val(), "the node is still leased")
	ttl := rdb.PTTL(context.Background(), key).Val()
	require.Greater(t, ttl, time.Duration(0), "and expires")
	taken, err := nodes.Take(context.Background(), g.NodeID(), "another process", time.Minute)
	require.NoError(t, err)
	require.False(t, taken, "no other process leases it meanwhile")
}

// memLeases is a Redis of leases that can restart empty.
type memLeases struct {
	mu    sync.Mutex
	owner map[int64]string
}

func (m *memLeases) Take(_ context.Context, n int64, token string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.owner[n]; held {
		return false, nil
	}
	m.owner[n] = token
	return true, nil
}

func (m *memLeases) Renew(_ context.Context, n int64, token string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owner[n] == token, nil
}

func (m *memLeases) Free(_ context.Context, n int64, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owner[n] == token {
		delete(m.owner, n)
	}
	return nil
}

func (m *memLeases) restartEmpty() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owner = map[int64]string{}
}

func (m *memLeases) holders(n int64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owner[n]
}

// runGenerator leases a node from leases and renews it until stop.
func runGenerator(t *testing.T, leases idgen.Leases) (g *idgen.Generator, stop func()) {
	t.Helper()
	g, err := idgen.New(t.Context(), leases, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	return g, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// When Redis comes back empty, a running process takes its own node back
// at its next renewal (so no process that renews takes another's); when a
// newcomer took it first, it moves to another node. Either way, one
// RenewEvery after the loss no node number serves two processes.
func TestGenerator_TakesItsNodeBackAfterRedisLostTheLeases(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("its own node back", func(t *testing.T) {
		t.Parallel()
		leases := &memLeases{owner: map[int64]string{}}
		g, stop := runGenerator(t, leases)
		n := g.NodeID()
		leases.restartEmpty()
		require.Eventually(t, func() bool { return leases.holders(n) != "" }, idgen.RenewEvery+2*time.Second, 20*time.Millisecond,
			"the node is leased again")
		require.Equal(t, n, g.NodeID(), "the same node")
		other, err := idgen.New(t.Context(), leases, log)
		require.NoError(t, err)
		require.NotEqual(t, n, other.NodeID(), "and held: a newcomer gets another")
		stop()
	})
	t.Run("another when a newcomer took it", func(t *testing.T) {
		t.Parallel()
		leases := &memLeases{owner: map[int64]string{}}
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
		stop()
	})
}
