package redisstore_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// startTopology starts a Sentinel group or Cluster for t; SECKILL_REDIS_LOGS
// shows the servers' logs and go-redis' own.
func startTopology(t *testing.T, kind string) redistopo.Topology {
	logw := io.Discard
	if os.Getenv("SECKILL_REDIS_LOGS") != "" {
		logw = os.Stderr
	} else {
		redisstore.LogTo(slog.New(slog.DiscardHandler))
	}
	topo, err := redistopo.Start(kind, logw)
	require.NoError(t, err)
	t.Cleanup(topo.Stop)
	return topo
}

// A flash sale meets a SIGKILL of the primary holding it. Every claim
// answered "admitted" (a 202) is still there after the failover, no unit
// is sold twice, and the claims that met the failover got an error (a 503
// to the buyer), never a wrong answer; retried with their Idempotency-Key
// they are decided.
func TestTopology_AdmissionsSurviveAPrimaryKill(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sentinel", "cluster"} {
		t.Run(name, func(t *testing.T) {
			topo := startTopology(t, name)
			st, err := redisstore.Open(topo.URL(), "seckilltest-"+testenv.Suffix(), redisstore.Options{PoolSize: 64, MinReplicas: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.Equal(t, 1, st.MinReplicas(), "Sentinel and Cluster wait for one replica by default")
			ctx := t.Context()
			require.Eventually(t, func() bool { return st.Ping(ctx) == nil }, 10*time.Second, 100*time.Millisecond)

			const units, buyers, workers = 300, 3000, 16
			now := time.Now()
			_, err = st.Warm(ctx, seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
			require.NoError(t, err)
			key := st.SaleKeys(saleID).Stock

			var (
				mu       sync.Mutex
				admitted = map[string]int64{} // user -> order, answered Admitted
				failed   atomic.Int64         // answers that were errors (503s)
				killOnce sync.Once
				killed   *redistopo.Node
				killErr  error
			)
			testenv.ForEachBuyer(buyers, workers, func(i int64) {
				user := "u" + strconv.FormatInt(i, 10)
				for attempt := int64(0); ; attempt++ {
					cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					res, err := st.Claim(cctx, saleID, user, i*10+attempt, "key-"+user, terms, seckill.DefaultItem)
					cancel()
					if err != nil {
						if n := failed.Add(1); n > 20000 {
							t.Errorf("claims never recovered: %v", err)
							return
						}
						time.Sleep(100 * time.Millisecond) // the buyer's Retry-After
						continue
					}
					if res.Outcome != seckill.Admitted {
						return
					}
					mu.Lock()
					admitted[user] = res.OrderID
					n := len(admitted)
					mu.Unlock()
					if n == units/3 {
						killOnce.Do(func() { killed, killErr = topo.KillPrimaryFor(key) })
					}
					return
				}
			})
			require.NoError(t, killErr)
			require.NotNil(t, killed, "the primary was killed during the sale")
			require.NoError(t, redistopo.Recover(topo, key, killed))

			claims, err := st.Claims(ctx, saleID)
			require.NoError(t, err)
			remaining, ok, err := st.Remaining(ctx, saleID)
			require.NoError(t, err)
			require.True(t, ok)
			lost := 0
			for user, order := range admitted {
				if claims[user] != order {
					lost++
				}
			}
			t.Logf("%s: %d admitted, %d claims after the failover, %d remaining, %d answers were errors (503), admitted but lost: %d",
				name, len(admitted), len(claims), remaining, failed.Load(), lost)
			require.Zero(t, lost, "every admission answered 202 survives the failover")
			require.Equal(t, int64(units), remaining+int64(len(claims)), "no unit sold twice or lost")
			require.Equal(t, units, len(admitted), "the sale sells out once claims are answered again")
		})
	}
}

func TestTopology_CountsReplicas(t *testing.T) {
	t.Parallel()
	topo := startTopology(t, "sentinel")
	st, err := redisstore.Open(topo.URL(), "seckilltest-"+testenv.Suffix(), redisstore.Options{MinReplicas: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	n, err := st.Replicas(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, n)

	single := testenv.RedisStore(t)
	n, err = single.Replicas(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n, "the machine's Redis has no replica")
}

// A sale of 8 segments on a Cluster of 3 primaries: its segments are spread over
// the primaries, and it sells exactly its stock, with moves between segments
// on different primaries.
func TestTopology_SegmentedSaleSpreadsOverPrimaries(t *testing.T) {
	t.Parallel()
	topo := startTopology(t, "cluster")
	cluster := topo.(*redistopo.Cluster)
	st, err := redisstore.Open(topo.URL(), "seckilltest-"+testenv.Suffix(), redisstore.Options{PoolSize: 64, MinReplicas: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	require.Eventually(t, func() bool { return st.Ping(ctx) == nil }, 10*time.Second, 100*time.Millisecond)

	const units, buyers, segments = 600, 3000, 8
	now := time.Now()
	_, err = st.Warm(ctx, seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Segments: segments})
	require.NoError(t, err)
	primaries := map[string]bool{}
	for p := range segments {
		n, err := cluster.PrimaryFor(st.SegmentKeys(saleID, p).Stock)
		require.NoError(t, err)
		primaries[n.Addr()] = true
	}
	require.Len(t, primaries, 3, "8 segments in 8 slots land on every primary")

	var admitted atomic.Int64
	testenv.ForEachBuyer(buyers, 32, func(i int64) {
		res, err := st.Claim(ctx, saleID, "u"+strconv.FormatInt(i, 10), 1000+i, "", terms, seckill.DefaultItem)
		if err != nil {
			t.Errorf("claim: %v", err)
			return
		}
		if res.Outcome == seckill.Admitted {
			admitted.Add(1)
		}
	})
	remaining, ok, err := st.Remaining(ctx, saleID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(units), admitted.Load())
	require.Zero(t, remaining)
	claims, err := st.Claims(ctx, saleID)
	require.NoError(t, err)
	require.Len(t, claims, units)
}
