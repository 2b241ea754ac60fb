//go:build !slim

package app_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
)

// An API killed with SIGKILL while it commits lobby entries in groups
// loses none it answered: every buyer answered 201 or 200 before the kill
// has the entry they were told, the buyers whose requests died with it
// are entered when they try again on the next API, and every buyer holds
// exactly one entry.
func TestLobby_EntriesAnsweredSurviveASIGKILLOfTheAPI(t *testing.T) {
	bin := seckillBinary(t)
	cfg := testConfig(t)
	require.NoError(t, app.Migrate(context.Background(), cfg, nil))
	env := childEnv(cfg)
	first := startSeckill(t, bin, "api", env)
	s := childSystem(t, cfg, "http://"+first.addr)
	ready := func(s *system) {
		require.Eventually(t, func() bool {
			r, err := s.do("GET", "/readyz", "", nil, nil)
			return err == nil && r.status == http.StatusOK
		}, time.Minute, 100*time.Millisecond)
	}
	ready(s)
	sale := s.createLobbySale(100, 10*time.Minute, time.Minute, 1)
	saleID := mustInt(t, sale)

	const entrants = 4000
	var (
		mu       sync.Mutex
		told     = map[int]string{} // buyer → the entry an answer named
		answered atomic.Int64
	)
	enter := func(s *system, i int) bool {
		r, err := s.do("POST", "/api/v1/sales/"+sale+"/lobby", s.token("survivor-"+strconv.Itoa(i), false), nil, nil)
		if err != nil || (r.status != http.StatusCreated && r.status != http.StatusOK) {
			return false
		}
		entry, _ := r.json(t)["entry"].(string)
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := told[i]; ok {
			require.Equal(t, prev, entry, "buyer %d told two entries", i)
		}
		told[i] = entry
		answered.Add(1)
		return true
	}
	// 32 buyers at a time; the API is killed once a quarter are answered.
	users := make(chan int)
	var wg sync.WaitGroup
	var lost sync.Map
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range users {
				if !enter(s, i) {
					lost.Store(i, true)
				}
			}
		}()
	}
	go func() {
		for answered.Load() < entrants/4 {
			time.Sleep(time.Millisecond)
		}
		_ = first.cmd.Process.Kill() // SIGKILL: entries in flight die with it
	}()
	for i := range entrants {
		users <- i
	}
	close(users)
	wg.Wait()
	<-first.done
	beforeKill := answered.Load()

	second := startSeckill(t, bin, "api", env)
	s2 := childSystem(t, cfg, "http://"+second.addr)
	ready(s2)
	retried := 0
	lost.Range(func(k, _ any) bool {
		retried++
		require.True(t, enter(s2, k.(int)), "buyer %d is entered on the next API", k)
		return true
	})
	t.Logf("%d answered before or as the API was killed, %d tried again on the next API", beforeKill, retried)
	require.Positive(t, retried, "the kill cut requests short")

	var rows []struct {
		UserID string
		Entry  []byte
	}
	require.NoError(t, s2.store.Gorm().Raw(`SELECT user_id, entry FROM lobby_entries WHERE sale_id = ?`, saleID).Scan(&rows).Error)
	require.Len(t, rows, entrants, "one entry per buyer")
	have := map[string]string{}
	for _, r := range rows {
		have[r.UserID] = hex.EncodeToString(r.Entry)
	}
	for i := range entrants {
		user := "survivor-" + strconv.Itoa(i)
		require.Contains(t, told, i, "%s was answered", user)
		require.Equal(t, told[i], have[user], "%s holds the entry they were told", user)
	}
}
