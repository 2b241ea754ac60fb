package activities_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

var (
	benchEntries  = flag.Int("draw.entries", 200_000, "BenchmarkDraw: the lobby's entries")
	benchUnits    = flag.Int64("draw.units", 2_000, "BenchmarkDraw: the sale's units")
	benchWaitlist = flag.Int("draw.waitlist", 20_000, "BenchmarkDraw: the waitlist's bound")
)

// BenchmarkDraw runs the draw of a lobby of -draw.entries entries for
// -draw.units units (one variant, one each) and a waitlist bound of
// -draw.waitlist, activity by activity as SaleDraw does, without a beacon
// (so the randomness is known when RankDraw starts) and without the sagas
// the admissions start (the outbox only: the worker's other load is the
// end-to-end benchmark's, seckill bench --lobby). It reports, from
// RankDraw's start: s_winners, the last winner admitted; s_done, the draw
// done; and the commit before it (s_commit), and the Go heap's peak
// (MB_heap, sampled every 50 ms).
func BenchmarkDraw(b *testing.B) {
	var commit, ranked, winners, done time.Duration
	var peak atomic.Uint64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	for range b.N {
		b.StopTimer()
		r := newDrawRigOf(b, *benchUnits, 0, 1, nil)
		r.in.WaitlistMax = *benchWaitlist
		require.NoError(b, r.st.Gorm().Exec(`INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
			SELECT ?, 'e' || (g - 1), decode(md5(random()::text || g), 'hex'), ?, 1 FROM generate_series(1, ?) g`,
			r.sale.ID, seckill.DefaultSKU, *benchEntries).Error)
		require.NoError(b, r.st.Gorm().Exec(`ANALYZE lobby_entries`).Error)
		runtime.GC()
		b.StartTimer()

		start := time.Now()
		_, err := r.env.ExecuteActivity(r.acts.CommitDraw, r.in)
		require.NoError(b, err)
		ranking := time.Now()
		commit += ranking.Sub(start)
		r.rank(b)
		ranked += time.Since(ranking)
		b.StopTimer()
		var last int
		require.NoError(b, r.st.Gorm().Raw(`SELECT coalesce(max(rank), 0) FROM lobby_entries WHERE sale_id = ? AND fits`, r.sale.ID).Scan(&last).Error)
		b.StartTimer()
		var won time.Duration
		p := r.settle(b)
		for !p.Done {
			if won == 0 && p.NextRank > last {
				won = time.Since(ranking)
			}
			t0 := time.Now()
			v, err := r.env.ExecuteActivity(r.acts.SettleDraw, seckill.DrawStep{DrawInput: r.in, WaitlistFull: p.WaitlistFull, Ended: p.Ended})
			require.NoError(b, err)
			require.NoError(b, v.Get(&p))
			if os.Getenv("DRAW_TRACE") != "" {
				fmt.Fprintf(os.Stderr, "settle to %d full %v: %s\n", p.NextRank, p.WaitlistFull, time.Since(t0))
			}
		}
		if won == 0 {
			won = time.Since(ranking)
		}
		_, err = r.env.ExecuteActivity(r.acts.FinishDraw, r.in)
		require.NoError(b, err)
		winners += won
		done += time.Since(ranking)
		b.StopTimer()
		d, err := r.st.DrawOf(b.Context(), r.sale.ID)
		require.NoError(b, err)
		require.Equal(b, int(min(*benchUnits, int64(*benchEntries))), d.Admitted)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(commit.Seconds()/n, "s_commit")
	b.ReportMetric(ranked.Seconds()/n, "s_rank")
	b.ReportMetric(winners.Seconds()/n, "s_winners")
	b.ReportMetric(done.Seconds()/n, "s_done")
	b.ReportMetric(float64(peak.Load())/(1<<20), "MB_heap")
}
