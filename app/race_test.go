//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// TestClaim_ExactlyStockWinnersUnderRace fires 2,000 buyers plus 200
// duplicate claims from the same buyers at once against 100 units: exactly
// 100 win, nobody twice, and at rest Redis remaining equals DB available.
func TestClaim_ExactlyStockWinnersUnderRace(t *testing.T) {
	const (
		units   = 100
		buyers  = 2000
		repeats = 200
	)
	s := startSystem(t, systemOptions{})
	sale := s.createSale(units, 20*time.Second) // long enough for every saga to lock first

	users := make([]string, 0, buyers+repeats)
	for i := range buyers {
		users = append(users, fmt.Sprintf("buyer-%04d", i))
	}
	for i := range repeats {
		users = append(users, fmt.Sprintf("buyer-%04d", i*7)) // the same buyers again
	}
	tokens := make(map[string]string, buyers)
	for _, u := range users {
		if tokens[u] == "" {
			tokens[u] = s.token(u, false)
		}
	}

	type result struct {
		user    string
		status  int
		code    string
		orderID string
	}
	results := make([]result, len(users))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := s.do("POST", "/api/v1/sales/"+sale+"/claims", tokens[u], nil, nil)
			if err != nil {
				results[i] = result{user: u, code: err.Error()}
				return
			}
			var body struct {
				OrderID string `json:"order_id"`
				Code    string `json:"code"`
			}
			_ = json.Unmarshal(r.body, &body)
			results[i] = result{user: u, status: r.status, code: body.Code, orderID: body.OrderID}
		}()
	}
	close(start)
	wg.Wait()

	winners := map[string]string{} // user -> order
	codes := map[string]int{}
	for _, r := range results {
		switch r.status {
		case http.StatusAccepted:
			_, twice := winners[r.user]
			require.False(t, twice, "user %s admitted twice", r.user)
			winners[r.user] = r.orderID
		case http.StatusConflict:
			codes[r.code]++
			if r.code == "ALREADY_CLAIMED" {
				require.NotEmpty(t, r.orderID)
			}
		default:
			t.Fatalf("claim by %s: status %d %s", r.user, r.status, r.code)
		}
	}
	require.Len(t, winners, units, "winners (other answers: %v)", codes)
	require.Equal(t, len(users)-units, codes["SOLD_OUT"]+codes["ALREADY_CLAIMED"])

	// Every winner's saga locks its unit; then Redis and the DB agree.
	saleID, err := strconv.ParseInt(sale, 10, 64)
	require.NoError(t, err)
	if !assertEventually(t, func() bool {
		st := s.dbStock(sale)
		return st.Locked == units
	}, 60*time.Second) {
		s.diagnose(sale)
		t.Fatal("not every winner locked its unit")
	}
	st := s.dbStock(sale)
	require.Equal(t, seckill.Stock{Total: units, Remaining: 0, Available: 0, Locked: units, Sold: 0}, st)
	seen := map[string]bool{}
	for user, id := range winners {
		o, err := s.store.Order(context.Background(), mustInt(t, id))
		require.NoError(t, err)
		require.Equal(t, user, o.UserID)
		require.Equal(t, saleID, o.SaleID)
		require.Equal(t, seckill.StatusAwaitingPayment, o.Status)
		require.False(t, seen[user])
		seen[user] = true
	}

	// Nobody pays: every unit comes back, and Redis matches the DB again.
	require.Eventually(t, func() bool {
		st := s.dbStock(sale)
		return st.Available == units && st.Remaining == units
	}, 90*time.Second, 200*time.Millisecond, "all units return after the timeout")
	require.Equal(t, seckill.Stock{Total: units, Remaining: units, Available: units}, s.dbStock(sale))
	s.requireAudit(sale)
}
