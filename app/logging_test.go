//go:build !slim

package app_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// syncBuffer is a bytes.Buffer safe for the system's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// Every JSON log line about a claim carries orderID, saleID and userID,
// from the HTTP request (with its requestID) through the saga to the
// payment, so `jq 'select(.orderID == N)'` tells one order's story.
func TestLogs_FollowOneClaimByItsIDs(t *testing.T) {
	logs := &syncBuffer{}
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: app.LogIDsAsStrings}))
	}})
	sale := s.createSale(1, time.Minute)
	r, err := s.do("POST", "/api/v1/sales/"+sale+"/claims", s.token("logan", false), nil, map[string]string{"X-Request-ID": "req-logan-1"})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, "req-logan-1", r.header.Get("X-Request-ID"))
	orderID := r.json(t)["order_id"].(string)
	s.waitOrder(orderID, "logan", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, http.StatusOK, s.webhook("evt_logs_1", seckill.PaymentSucceeded, orderID, 990).status)
	s.waitOrder(orderID, "logan", seckill.StatusPaid, 30*time.Second)

	want := map[string]bool{"claim admitted": false, "order awaiting payment": false, "payment event delivered": false, "order settled": false}
	require.Eventually(t, func() bool {
		for _, line := range logs.lines() {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["orderID"] != orderID {
				continue
			}
			msg, _ := rec["msg"].(string)
			require.Equal(t, sale, rec["saleID"], "saleID in %s", line)
			require.Equal(t, "logan", rec["userID"], "userID in %s", line)
			if rec["component"] == nil { // the API's lines, not the saga's
				require.NotEmpty(t, rec["requestID"], "requestID in %s", line)
			}
			if _, ok := want[msg]; ok {
				want[msg] = true
			}
		}
		for _, seen := range want {
			if !seen {
				return false
			}
		}
		return true
	}, 20*time.Second, 200*time.Millisecond, "lines seen: %v", want)
}
