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
	single, err := redistopo.StartSingle(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer single.Stop()
	aof, err := redistopo.StartSingle(io.Discard, "--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		b.Fatal(err)
	}
	defer aof.Stop()
	sentinel, err := redistopo.StartSentinel(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer sentinel.Stop()
	cluster, err := redistopo.StartCluster(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Stop()

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
			if _, err := st.Warm(b.Context(), redisstore.WarmSpec{SaleID: saleID, Units: int64(b.N), StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
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
					res, err := st.Claim(b.Context(), saleID, "u"+strconv.FormatInt(i, 10), i, "", terms)
					if err != nil || res.Outcome != redisstore.Admitted {
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
