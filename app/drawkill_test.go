//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/idgen"
)

// The draw survives a SIGKILL of its worker while it waits for its beacon
// round, and another in the middle of settling its ranks: a second worker goes on from the recorded rank, nobody is
// admitted twice, no unit is given twice, every winner holds exactly one
// order, the orders follow the ranks, and the audit passes.
func TestLobby_DrawResumesAfterItsWorkerIsKilled(t *testing.T) {
	bin := seckillBinary(t)
	cfg := testConfig(t)
	require.NoError(t, app.Migrate(context.Background(), cfg, nil))
	const (
		entrants = 3000
		stock    = 1200
		waitMax  = 600
	)
	env := childEnv(cfg, "SECKILL_WAITLIST_MAX="+strconv.Itoa(waitMax))
	apiChild := startSeckill(t, bin, "api", env)
	worker := startSeckill(t, bin, "worker", env)
	worker.waitLog(t, "worker and relay running", time.Minute)

	s := childSystem(t, cfg, "http://"+apiChild.addr)
	require.Eventually(t, func() bool {
		r, err := s.do("GET", "/readyz", "", nil, nil)
		return err == nil && r.status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)

	sale := s.createLobbySale(stock, 20*time.Second, time.Minute, 2)
	saleID := mustInt(t, sale)
	var wg sync.WaitGroup
	users := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range users {
				r, err := s.do("POST", "/api/v1/sales/"+sale+"/lobby", s.token("kill-"+strconv.Itoa(i), false), nil, nil)
				if err != nil || r.status != http.StatusCreated {
					t.Errorf("entry %d: %v %d %s", i, err, r.status, r.body)
				}
			}
		}()
	}
	for i := range entrants {
		users <- i
	}
	close(users)
	wg.Wait()
	require.False(t, t.Failed())

	// SIGKILL the worker while the draw waits for its beacon round: the
	// entries committed, nothing ranked. The next worker goes on with
	// the same root and the same round.
	var committed *seckill.Draw
	require.Eventually(t, func() bool {
		d, err := s.store.DrawOf(context.Background(), saleID)
		committed = d
		return err == nil && d.Tree != nil && d.State == seckill.DrawClosed && d.BeaconSignature == nil
	}, time.Minute, 5*time.Millisecond, "the draw never committed its entries before its round")
	require.NoError(t, worker.cmd.Process.Kill())
	<-worker.done
	t.Logf("worker killed with the entries committed, waiting for beacon round %d", committed.Beacon.Round)
	worker = startSeckill(t, bin, "worker", env)
	worker.waitLog(t, "worker and relay running", time.Minute)

	// SIGKILL the worker once the draw has settled some ranks, not all.
	require.Eventually(t, func() bool {
		d, err := s.store.DrawOf(context.Background(), saleID)
		return err == nil && d.State == seckill.DrawRanked && d.NextRank > 1
	}, time.Minute, 5*time.Millisecond, "the draw never began to settle")
	require.NoError(t, worker.cmd.Process.Kill())
	<-worker.done
	d, err := s.store.DrawOf(context.Background(), saleID)
	require.NoError(t, err)
	t.Logf("worker killed with the draw %s at rank %d of %d", d.State, d.NextRank, d.Entries)
	require.NotEqual(t, seckill.DrawDone, d.State, "killed before the draw was done")

	startSeckill(t, bin, "worker", env).waitLog(t, "worker and relay running", time.Minute)
	require.Eventually(t, func() bool {
		d, err = s.store.DrawOf(context.Background(), saleID)
		return err == nil && d.State == seckill.DrawDone
	}, 3*time.Minute, 100*time.Millisecond, "the draw never finished after the restart")
	require.Equal(t, entrants, d.Entries)
	require.Equal(t, stock, d.Admitted)
	require.Equal(t, committed.Tree, d.Tree, "the root committed before the kills is the one drawn")
	require.Equal(t, beacon.DevSigner().Sign(committed.Beacon.Round), d.BeaconSignature, "drawn with the round fixed at creation")

	// Each winner once, each with its own order; orders in rank order.
	orders, err := s.store.DrawOrders(context.Background(), saleID)
	require.NoError(t, err)
	require.Len(t, orders, stock)
	seen := map[int64]bool{}
	for i, o := range orders {
		require.False(t, seen[o.OrderID], "order %d given twice", o.OrderID)
		seen[o.OrderID] = true
		require.Equal(t, i+1, o.Rank, "orders follow ranks")
	}
	var counts []struct {
		Outcome string
		N       int
	}
	require.NoError(t, s.store.Gorm().Raw(`SELECT outcome, count(*) AS n FROM lobby_entries WHERE sale_id = ? GROUP BY outcome ORDER BY outcome`, saleID).
		Scan(&counts).Error)
	require.Equal(t, []struct {
		Outcome string
		N       int
	}{{"LOST", entrants - stock - waitMax}, {"WAITING", waitMax}, {"WON", stock}}, counts)
	for _, o := range orders {
		require.False(t, idgen.Time(o.OrderID).IsZero())
	}
	r := s.mustDo("GET", "/api/v1/sales/"+sale, "", nil)
	var view struct {
		Stock struct {
			Remaining int64 `json:"remaining"`
		} `json:"stock"`
	}
	require.NoError(t, json.Unmarshal(r.body, &view))
	require.Zero(t, view.Stock.Remaining, "every unit given, none twice")
	s.requireAudit(sale)
}
