package redisstore_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// topology is a running Sentinel group or Cluster, as the failover tests
// need it.
type topology struct {
	url string
	// killPrimary SIGKILLs the primary holding key and returns a wait for
	// the failover and a rejoin of the killed node as a replica.
	killPrimary func(key string) (failover func() error, rejoin func() error, err error)
}

func topologies(t *testing.T) map[string]func(t *testing.T) topology {
	logw := io.Discard
	if os.Getenv("SECKILL_REDIS_LOGS") != "" {
		logw = os.Stderr
	} else {
		redisstore.LogTo(slog.New(slog.DiscardHandler))
	}
	return map[string]func(t *testing.T) topology{
		"sentinel": func(t *testing.T) topology {
			g, err := redistopo.StartSentinel(logw)
			require.NoError(t, err)
			t.Cleanup(g.Stop)
			return topology{url: g.URL(), killPrimary: func(string) (func() error, func() error, error) {
				old, err := g.KillPrimary()
				if err != nil {
					return nil, nil, err
				}
				return func() error { _, err := g.WaitFailover(old, 30*time.Second); return err },
					func() error { return g.Rejoin(old) }, nil
			}}
		},
		"cluster": func(t *testing.T) topology {
			c, err := redistopo.StartCluster(logw)
			require.NoError(t, err)
			t.Cleanup(c.Stop)
			return topology{url: c.URL(), killPrimary: func(key string) (func() error, func() error, error) {
				old, err := c.KillPrimaryFor(key)
				if err != nil {
					return nil, nil, err
				}
				return func() error { _, err := c.WaitFailover(key, old, 30*time.Second); return err },
					func() error { return c.Rejoin(old) }, nil
			}}
		},
	}
}

// A flash sale meets a SIGKILL of the primary holding it. Every claim
// answered "admitted" (a 202) is still there after the failover, no unit
// is sold twice, and the claims that met the failover got an error (a 503
// to the buyer), never a wrong answer; retried with their Idempotency-Key
// they are decided.
func TestTopology_AdmissionsSurviveAPrimaryKill(t *testing.T) {
	t.Parallel()
	for name, start := range topologies(t) {
		t.Run(name, func(t *testing.T) {
			topo := start(t)
			st, err := redisstore.Open(topo.url, "seckilltest-"+testenv.Suffix(), redisstore.Options{PoolSize: 64, MinReplicas: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.Equal(t, 1, st.MinReplicas(), "Sentinel and Cluster wait for one replica by default")
			ctx := t.Context()
			require.NoError(t, eventuallyNoErr(10*time.Second, func() error { return st.Ping(ctx) }))

			const units, buyers, workers = 300, 3000, 16
			now := time.Now()
			_, err = st.Warm(ctx, redisstore.WarmSpec{SaleID: saleID, Units: units, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)})
			require.NoError(t, err)

			var (
				mu       sync.Mutex
				admitted = map[string]int64{} // user -> order, answered Admitted
				next     atomic.Int64
				failed   atomic.Int64 // answers that were errors (503s)
				killOnce sync.Once
				killed   = make(chan struct{})
				kill     func() error
			)
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > buyers {
							return
						}
						user := "u" + strconv.FormatInt(i, 10)
						for attempt := 0; ; attempt++ {
							cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
							res, err := st.Claim(cctx, saleID, user, i*10+int64(attempt), "key-"+user, terms)
							cancel()
							if err != nil {
								if n := failed.Add(1); n%200 == 0 {
									t.Logf("claims still fail after %d errors: %v", n, err)
								}
								if n := failed.Load(); n > 20000 {
									t.Errorf("claims never recovered: %v", err)
									return
								}
								time.Sleep(100 * time.Millisecond) // the buyer's Retry-After
								continue
							}
							if res.Outcome == redisstore.Admitted {
								mu.Lock()
								admitted[user] = res.OrderID
								n := len(admitted)
								mu.Unlock()
								if n == units/3 {
									killOnce.Do(func() {
										failover, rejoin, err := topo.killPrimary(st.SaleKeys(saleID).Stock)
										kill = func() error {
											if err != nil {
												return err
											}
											if err := failover(); err != nil {
												return fmt.Errorf("failover: %w", err)
											}
											return rejoin()
										}
										close(killed)
									})
								}
							}
							break
						}
					}
				}()
			}
			wg.Wait()
			<-killed
			require.NoError(t, kill())

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

func eventuallyNoErr(within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
