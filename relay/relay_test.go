package relay_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/relay"
)

// starter records the sagas it is asked to start; the first start of
// every failEvery-th order fails, as a Temporal hiccup would.
type starter struct {
	mu        sync.Mutex
	started   map[int64]int
	failed    map[int64]bool
	failEvery int64
}

func (s *starter) Start(_ context.Context, in seckill.SagaInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failEvery > 0 && in.OrderID%s.failEvery == 0 && !s.failed[in.OrderID] {
		s.failed[in.OrderID] = true
		return errors.New("temporal: unavailable")
	}
	s.started[in.OrderID]++
	return nil
}

func (s *starter) count() (orders, starts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.started {
		starts += n
	}
	return len(s.started), starts
}

// admitAll warms sale saleID with units units and claims every one of
// them (users u1.., order ids 1..), filling its outbox.
func admitAll(t *testing.T, rs *redisstore.Store, saleID, units int64) {
	t.Helper()
	ctx := t.Context()
	now := time.Now()
	_, err := rs.Warm(ctx, seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
	require.NoError(t, err)
	terms := seckill.Terms{PaymentTimeout: time.Minute, UnitPriceCents: 990, Currency: "usd"}
	for i := int64(1); i <= units; i++ {
		res, err := rs.Claim(ctx, saleID, "u"+strconv.FormatInt(i, 10), i, "", terms, seckill.DefaultItem)
		require.NoError(t, err)
		require.Equal(t, seckill.Admitted, res.Outcome)
	}
}

// Two relays share one sale's outbox: every admitted claim gets its saga
// (each start retried until it succeeds), every entry is acknowledged and
// deleted, and when they stop no goroutine is left behind.
func TestRelay_TwoRelaysStartEveryClaimAndAcknowledgeIt(t *testing.T) {
	testenv.NoLeaks(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	const saleID, units = 7, 300
	admitAll(t, rs, saleID, units)

	st := &starter{started: map[int64]int{}, failed: map[int64]bool{}, failEvery: 7}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 2 {
		r := relay.New(rs, st, relay.Config{Consumer: "relay-" + strconv.Itoa(i), BatchSize: 16, Parallel: 8,
			Block: 50 * time.Millisecond, Refresh: 50 * time.Millisecond}, log)
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(rctx) }()
	}
	require.Eventually(t, func() bool {
		orders, _ := st.count()
		backlog, err := rs.OutboxBacklog(ctx, []int64{saleID})
		return err == nil && orders == units && backlog == 0
	}, 30*time.Second, 20*time.Millisecond, "every claim started and acknowledged")
	stop()
	wg.Wait()

	orders, starts := st.count()
	require.Equal(t, units, orders)
	require.Less(t, starts, units+units/10, "a start is repeated only when an entry was taken over (idempotent anyway)")
	for id := int64(7); id <= units; id += 7 {
		require.True(t, st.failed[id], "order %d's first start failed", id)
		require.Positive(t, st.started[id], "and was retried")
	}
}

// blockingStarter holds every start until released, and records whether
// the start's context was cut off while it waited.
type blockingStarter struct {
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	cut     int
	done    int
}

func (s *blockingStarter) Start(ctx context.Context, _ seckill.SagaInput) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		s.mu.Lock()
		s.cut++
		s.mu.Unlock()
		return ctx.Err()
	case <-s.release:
	}
	s.mu.Lock()
	s.done++
	s.mu.Unlock()
	return nil
}

// A relay asked to stop lets the starts it has in flight finish and
// acknowledges them: a start cut off may have made the workflow and
// handed its first task (eager start) to a worker that never learns of
// it, so the saga would wait for the task's timeout on another worker.
func TestRelay_StopLetsTheStartsInFlightFinish(t *testing.T) {
	testenv.NoLeaks(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	const saleID = 8
	admitAll(t, rs, saleID, 1)

	st := &blockingStarter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	r := relay.New(rs, st, relay.Config{Consumer: "relay-stopping", Block: 50 * time.Millisecond, Refresh: 50 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- r.Run(rctx) }()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay never started the saga")
	}
	stop()
	time.Sleep(100 * time.Millisecond)
	close(st.release)
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
	require.Zero(t, st.cut, "the start in flight was cut off")
	require.Equal(t, 1, st.done)
	backlog, err := rs.OutboxBacklog(ctx, []int64{saleID})
	require.NoError(t, err)
	require.Zero(t, backlog, "the finished start was acknowledged")
}
