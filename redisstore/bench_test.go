package redisstore_test

import (
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// BenchmarkWinnerLatency is what one winner's admission costs on each
// Redis setup, 16 winners at a time: each op is one claim by a fresh buyer
// on a sale with a unit for every one, so every claim is admitted (losers
// write nothing and never wait). Reported: p50 and p99 in microseconds.
//
//	go test ./redisstore -run '^$' -bench WinnerLatency -benchtime 20000x
//
// single: one server, no persistence; single-aof-always: one server with
// appendfsync always (the one-node way to keep every 202: an fsync per
// admission); sentinel and cluster: with and without waiting for one
// replica (WAIT 1).
func BenchmarkWinnerLatency(b *testing.B) {
	redisstore.LogTo(slog.New(slog.DiscardHandler))
	single := started(b)(redistopo.StartSingle(io.Discard))
	aof := started(b)(redistopo.StartSingle(io.Discard, "--appendonly", "yes", "--appendfsync", "always"))
	sentinel := started(b)(redistopo.StartSentinel(io.Discard))
	cluster := started(b)(redistopo.StartCluster(io.Discard))

	for _, setup := range []struct {
		name        string
		url         string
		minReplicas int
	}{
		{"single", single.URL(), 0},
		{"single-aof-always", aof.URL(), 0},
		{"sentinel-no-wait", sentinel.URL(), 0},
		{"sentinel-wait-1", sentinel.URL(), 1},
		{"cluster-no-wait", cluster.URL(), 0},
		{"cluster-wait-1", cluster.URL(), 1},
	} {
		b.Run(setup.name, func(b *testing.B) {
			st, err := redisstore.Open(setup.url, "seckillbench-"+testenv.Suffix(), redisstore.Options{PoolSize: 64, MinReplicas: setup.minReplicas})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.DropAll(b.Context()); _ = st.Close() }()
			now := time.Now()
			if _, err := st.Warm(b.Context(), seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: int64(b.N)}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
				b.Fatal(err)
			}
			var (
				next atomic.Int64
				mu   sync.Mutex
				lat  = make([]time.Duration, 0, b.N)
			)
			b.SetParallelism(8) // 16 at a time on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mine := make([]time.Duration, 0, 1024)
				for pb.Next() {
					i := next.Add(1)
					t0 := time.Now()
					res, err := st.Claim(b.Context(), saleID, "u"+strconv.FormatInt(i, 10), i, "", terms, seckill.DefaultItem)
					if err != nil || res.Outcome != seckill.Admitted {
						b.Errorf("claim %d: %v %v", i, res.Outcome, err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}

// BenchmarkSellOut is one sale meeting five buyers per unit, 16 claims at
// a time, at the adapter (no HTTP, so no sold-out flag in front of Redis):
// the stock in 1 segment or in 8, on one server and on a Cluster of 3
// primaries. Each op is one claim; reported: claims/s, p50 and p99 of all
// claims, and the moves that fed empty segments.
//
//	go test ./redisstore -run '^$' -bench SellOut -benchtime 50000x -count 3
func BenchmarkSellOut(b *testing.B) {
	redisstore.LogTo(slog.New(slog.DiscardHandler))
	single := started(b)(redistopo.StartSingle(io.Discard))
	cluster := started(b)(redistopo.StartCluster(io.Discard))
	for _, setup := range []struct {
		name string
		url  string
	}{{"single", single.URL()}, {"cluster", cluster.URL()}} {
		for _, segments := range []int{1, 8} {
			b.Run(setup.name+"/segments="+strconv.Itoa(segments), func(b *testing.B) {
				st, err := redisstore.Open(setup.url, "seckillbench-"+testenv.Suffix(), redisstore.Options{PoolSize: 64, MinReplicas: 0})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = st.DropAll(b.Context()); _ = st.Close() }()
				units := max(int64(b.N/5), 1)
				now := time.Now()
				if _, err := st.Warm(b.Context(), seckill.WarmSpec{SaleID: saleID, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}}, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Segments: segments}); err != nil {
					b.Fatal(err)
				}
				var (
					next     atomic.Int64
					admitted atomic.Int64
					mu       sync.Mutex
					lat      = make([]time.Duration, 0, b.N)
				)
				b.SetParallelism(8)
				start := time.Now()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					mine := make([]time.Duration, 0, 1024)
					for pb.Next() {
						i := next.Add(1)
						t0 := time.Now()
						res, err := st.Claim(b.Context(), saleID, "u"+strconv.FormatInt(i, 10), i, "", terms, seckill.DefaultItem)
						if err != nil {
							b.Errorf("claim %d: %v", i, err)
							return
						}
						if res.Outcome == seckill.Admitted {
							admitted.Add(1)
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
				b.StopTimer()
				elapsed := time.Since(start)
				if admitted.Load() != units {
					b.Fatalf("%d admitted of %d units", admitted.Load(), units)
				}
				slices.Sort(lat)
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "claims/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				moves, err := st.MovesForTest(b.Context(), saleID)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(moves), "moves")
			})
		}
	}
}

// running is a Redis a benchmark started.
type running interface {
	URL() string
	Stop()
}

// started stops the benchmark on a topology that did not start, and stops
// the topology when the benchmark ends.
func started(b *testing.B) func(running, error) running {
	return func(t running, err error) running {
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(t.Stop)
		return t
	}
}
