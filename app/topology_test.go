//go:build !slim

package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/redistopo"
	"github.com/seckill/seckill/internal/testenv"
)

// The whole saga on a Sentinel group and on a Cluster, through a SIGKILL
// of the primary holding the sale in the middle of the flash sale: while
// it fails over claims are answered 503 with Retry-After (never a wrong
// answer), then answered again; every 202 ends PAID or CLOSED, nothing is
// oversold, and the audit passes.
func TestTopology_FlashSaleThroughAPrimaryKill(t *testing.T) {
	logw := io.Discard
	if os.Getenv("SECKILL_REDIS_LOGS") != "" {
		logw = os.Stderr
	}
	for _, name := range []string{"sentinel", "cluster"} {
		t.Run(name, func(t *testing.T) {
			topo, err := redistopo.Start(name, logw)
			require.NoError(t, err)
			t.Cleanup(topo.Stop)
			s := startSystem(t, systemOptions{configure: func(cfg *app.Config) { cfg.RedisURL = topo.URL() }})
			require.Equal(t, 1, s.rstore.MinReplicas())

			const units, buyers, workers = 40, 240, 12
			sale := s.createSale(units, 15*time.Second) // time to claim through the failover, then pay
			key := s.rstore.SaleKeys(mustInt(t, sale)).Stock
			var (
				mu       sync.Mutex
				won      = map[string]string{} // user -> order, answered 202
				unavail  atomic.Int64
				killOnce sync.Once
				killed   *redistopo.Node
				killedAt time.Time
				lastNo   time.Time // the last 503
			)
			testenv.ForEachBuyer(buyers, workers, func(i int64) {
				user := fmt.Sprintf("buyer-%03d", i)
				tok := s.token(user, false)
				for {
					r, err := s.do("POST", "/api/v1/sales/"+sale+"/claims", tok, nil, map[string]string{"Idempotency-Key": "k-" + user})
					require.NoError(t, err)
					var body struct {
						OrderID string `json:"order_id"`
						Code    string `json:"code"`
					}
					_ = json.Unmarshal(r.body, &body)
					if r.status == http.StatusServiceUnavailable {
						require.Equal(t, "UNAVAILABLE", body.Code)
						require.NotEmpty(t, r.header.Get("Retry-After"), "a 503 says when to retry")
						unavail.Add(1)
						mu.Lock()
						lastNo = time.Now()
						mu.Unlock()
						time.Sleep(200 * time.Millisecond)
						continue
					}
					mu.Lock()
					defer mu.Unlock()
					switch r.status {
					case http.StatusAccepted:
						won[user] = body.OrderID
					case http.StatusConflict:
						require.Contains(t, []string{"SOLD_OUT", "ALREADY_CLAIMED"}, body.Code)
					default:
						t.Errorf("claim by %s: %d %s", user, r.status, r.body)
					}
					if len(won) == units/3 {
						killOnce.Do(func() {
							var kerr error
							killed, kerr = topo.KillPrimaryFor(key)
							require.NoError(t, kerr)
							killedAt = time.Now()
						})
					}
					return
				}
			})
			require.NotNil(t, killed, "the primary was killed during the sale")
			require.NoError(t, redistopo.Recover(topo, key, killed))
			t.Logf("%s: %d of %d units won; %d claims answered 503 during the failover, the last %s after the kill",
				name, len(won), units, unavail.Load(), lastNo.Sub(killedAt).Round(time.Millisecond))
			require.Len(t, won, units, "the sale sells out once claims are answered again")

			// Every other winner pays; the rest time out.
			i := 0
			for user, order := range won {
				if i++; i%2 == 0 {
					r := s.webhook("evt_"+order, seckill.PaymentSucceeded, order, 990)
					require.Equal(t, http.StatusOK, r.status, "%s: %s", user, r.body)
				}
			}
			paid, closed := 0, 0
			for user, order := range won {
				require.Eventually(t, func() bool {
					st := s.order(order, user).Status
					return st == seckill.StatusPaid || st == seckill.StatusClosed
				}, 60*time.Second, 100*time.Millisecond, "order %s of %s settles", order, user)
				if s.order(order, user).Status == seckill.StatusPaid {
					paid++
				} else {
					closed++
				}
			}
			t.Logf("%s: %d PAID, %d CLOSED", name, paid, closed)
			require.Equal(t, units/2, paid)
			st := s.dbStock(sale)
			require.LessOrEqual(t, st.Sold+st.Locked, int64(units), "no oversell: %+v", st)
			s.requireAudit(sale)
		})
	}
}
