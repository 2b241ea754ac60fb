//go:build !slim

package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// waitlistEntry is the body of the waitlist endpoints.
type waitlistEntry struct {
	Status   string `json:"status"`
	Position int64  `json:"position"`
	OrderID  string `json:"order_id"`
	Code     string `json:"code"`
}

func (s *system) waitlist(method, saleID, path, user string) (int, waitlistEntry) {
	s.t.Helper()
	r := s.mustDo(method, "/api/v1/sales/"+saleID+"/waitlist"+path, s.token(user, false), nil)
	var e waitlistEntry
	switch {
	case r.status >= 400: // a problem document: only its code and position
		var p struct {
			Code     string `json:"code"`
			Position int64  `json:"position"`
		}
		require.NoError(s.t, json.Unmarshal(r.body, &p), "%s", r.body)
		e.Code, e.Position = p.Code, p.Position
	case len(r.body) > 0:
		require.NoError(s.t, json.Unmarshal(r.body, &e), "%s", r.body)
	}
	return r.status, e
}

// TestWaitlist_ReleasedUnitsGoToTheFirstWaitingBuyers: 20 units meet 200
// buyers at once; 30 of the losers join the waitlist at once; 8 winners
// never pay. Exactly the first 8 in line get the 8 released units (first
// come, first served), each as an order payable at once with its own
// deadline; the other 22 keep their order in line; nobody holds two active
// orders, and the audit passes. The same with the stock in 8 segments,
// where the line spans every segment.
func TestWaitlist_ReleasedUnitsGoToTheFirstWaitingBuyers(t *testing.T) {
	s := startSystem(t, systemOptions{})
	for _, segments := range []int{1, 8} {
		t.Run(fmt.Sprintf("segments=%d", segments), func(sub *testing.T) {
			s.t = sub // the helpers report to the running subtest
			defer func() { s.t = t }()
			waitlistRace(sub, s, segments)
		})
	}
}

func waitlistRace(t *testing.T, s *system, segments int) {
	const (
		units   = 20
		buyers  = 200
		waiters = 30
		unpaid  = 8
		timeout = 5 * time.Second
	)
	sale := s.createSegmentedSale(units, timeout, segments)

	// The rush: exactly 20 winners.
	var mu sync.Mutex
	winners := map[string]string{} // user -> order
	var losers []string
	var wg sync.WaitGroup
	for i := range buyers {
		user := fmt.Sprintf("buyer-%d-%03d", segments, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.claim(sale, user)
			mu.Lock()
			defer mu.Unlock()
			switch r.status {
			case http.StatusAccepted:
				winners[user] = r.json(t)["order_id"].(string)
			case http.StatusConflict:
				losers = append(losers, user)
			default:
				t.Errorf("claim by %s: %d %s", user, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	require.Len(t, winners, units)

	// 30 losers join at once; their positions are 1..30, each once. (On a
	// sale of one segment the join's own answer is exact; on several, a
	// join answers its place as read a moment later, which may not count
	// yet an earlier joiner in another segment: GET /waitlist/me is exact
	// once every join is in.)
	joined := map[int64]string{}
	for _, user := range losers[:waiters] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, e := s.waitlist("POST", sale, "", user)
			mu.Lock()
			defer mu.Unlock()
			if status != http.StatusCreated || e.Status != "WAITING" || e.Position < 1 || e.Position > waiters {
				t.Errorf("join by %s: %d %+v", user, status, e)
			}
			if segments == 1 && joined[e.Position] != "" {
				t.Errorf("join by %s: position %d given twice", user, e.Position)
			}
			joined[e.Position] = user
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	line := make([]string, waiters+1) // position -> user
	for _, user := range losers[:waiters] {
		status, e := s.waitlist("GET", sale, "/me", user)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "WAITING", e.Status)
		require.Empty(t, line[e.Position], "position %d given twice", e.Position)
		line[e.Position] = user
	}
	status, e := s.waitlist("POST", sale, "", line[3])
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, waitlistEntry{Code: "ALREADY_WAITING", Position: 3}, e, "joining is idempotent per user")
	var someWinner string
	for user := range winners {
		someWinner = user
	}
	status, e = s.waitlist("POST", sale, "", someWinner)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "ALREADY_CLAIMED", e.Code, "a buyer with an active order does not wait")

	// 12 winners pay at once; 8 never do.
	paid := 0
	var released []string
	for user, order := range winners {
		if paid < units-unpaid {
			r := s.webhook("evt_"+order, seckill.PaymentSucceeded, order, 990)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			paid++
			continue
		}
		released = append(released, user)
	}

	// The 8 released units go to positions 1..8, in that order of release
	// or any other, but to nobody else.
	admitted := map[string]string{}
	require.Eventually(t, func() bool {
		for _, user := range line[1 : unpaid+1] {
			if admitted[user] != "" {
				continue
			}
			status, e := s.waitlist("GET", sale, "/me", user)
			if status == http.StatusOK && e.Status == "ADMITTED" {
				admitted[user] = e.OrderID
			}
		}
		return len(admitted) == unpaid
	}, timeout+30*time.Second, 100*time.Millisecond, "the first %d in line get the released units", unpaid)
	for _, user := range released {
		var o seckill.OrderJSON
		require.Eventually(t, func() bool {
			o = s.order(winners[user], user)
			return o.Status == seckill.StatusClosed
		}, 30*time.Second, 100*time.Millisecond)
		require.Equal(t, seckill.ClosePaymentTimeout, *o.CloseReason)
	}
	for pos, user := range line[unpaid+1:] {
		status, e := s.waitlist("GET", sale, "/me", user)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, waitlistEntry{Status: "WAITING", Position: int64(pos + 1)}, e, "%s keeps their order in line", user)
	}

	// Each admitted waiter's order runs the same saga, payable at once,
	// its deadline fixed at the hand-over; they pay.
	for user, order := range admitted {
		o := s.waitOrder(order, user, seckill.StatusAwaitingPayment, 30*time.Second)
		require.InDelta(t, timeout.Seconds(), o.PayBy.Sub(o.CreatedAt).Seconds(), 1, "pay_by of %s", order)
		r := s.webhook("evt_"+order, seckill.PaymentSucceeded, order, 990)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	for user, order := range admitted {
		s.waitOrder(order, user, seckill.StatusPaid, 30*time.Second)
	}
	t.Logf("waitlist admissions: %d; every unit sold: %+v", len(admitted), s.dbStock(sale))
	require.Equal(t, seckill.Stock{Total: units, Sold: units}, s.dbStock(sale), "every unit found a buyer")
	s.requireAudit(sale)
}

// The waitlist's answers at its edges: a sale that does not exist, a
// buyer who never joined or left, and a sale that ended while they waited.
func TestWaitlist_Contract(t *testing.T) {
	s := startSystem(t, systemOptions{})
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"name": "Short sale", "price_cents": 500, "stock": 1,
		"starts_at": now.Add(-time.Minute).Format(time.RFC3339), "ends_at": now.Add(4 * time.Second).Format(time.RFC3339),
		"payment_timeout_seconds": 60,
	})
	r := s.mustDo("POST", "/api/v1/sales", s.token("admin", true), body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	sale := r.json(t)["id"].(string)

	status, e := s.waitlist("POST", "999999999", "", "ann")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "SALE_NOT_FOUND", e.Code)
	status, e = s.waitlist("GET", sale, "/me", "ann")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "NOT_WAITING", e.Code)

	// A unit in stock: the first to join is first in line, and gets it.
	status, e = s.waitlist("POST", sale, "", "ann")
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "ADMITTED", e.Status)
	require.NotEmpty(t, e.OrderID)
	status, e = s.waitlist("POST", sale, "", "bob")
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, waitlistEntry{Status: "WAITING", Position: 1}, e)
	status, _ = s.waitlist("POST", sale, "", "cy")
	require.Equal(t, http.StatusCreated, status)

	// Leaving is final: not waiting any more; joining again starts at the back.
	status, _ = s.waitlist("DELETE", sale, "/me", "bob")
	require.Equal(t, http.StatusNoContent, status)
	status, e = s.waitlist("GET", sale, "/me", "bob")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "NOT_WAITING", e.Code)
	status, e = s.waitlist("GET", sale, "/me", "cy")
	require.Equal(t, waitlistEntry{Status: "WAITING", Position: 1}, e)

	// The sale ends: cy's wait has expired, and nobody may join.
	time.Sleep(time.Until(now.Add(4*time.Second)) + 100*time.Millisecond)
	status, e = s.waitlist("GET", sale, "/me", "cy")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, waitlistEntry{Status: "EXPIRED"}, e)
	status, e = s.waitlist("POST", sale, "", "dee")
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "SALE_ENDED", e.Code)
}
