package bench_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/bench"
)

// server answers 201 after delay, and records when each request arrived
// (by its token's number) and how many it held at once.
type server struct {
	delay time.Duration

	mu       sync.Mutex
	arrived  map[int][]time.Time
	inFlight int
	maxHeld  int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	i, err := strconv.Atoi(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	s.mu.Lock()
	if err == nil {
		s.arrived[i] = append(s.arrived[i], now)
	}
	s.inFlight++
	s.maxHeld = max(s.maxHeld, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func serve(t *testing.T, delay time.Duration) (*server, string) {
	t.Helper()
	s := &server{delay: delay, arrived: map[int][]time.Time{}}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	u, err := url.Parse(ts.URL)
	require.NoError(t, err)
	return s, u.Host
}

// Every request is sent once, not before it is due, by at most conns
// workers at a time, and each answer is counted by its status.
func TestOpenLoop_SendsEachRequestOnceWhenDueOnAtMostConnsConnections(t *testing.T) {
	const requests, rate, conns = 40, 400, 3
	s, host := serve(t, 5*time.Millisecond)
	start := time.Now().Add(20 * time.Millisecond)

	answers, sent, notSent, statuses := bench.RunOpenLoop(host, "/entries", requests, rate, conns, start, time.Time{})

	require.Equal(t, requests, sent)
	require.Zero(t, notSent)
	require.Equal(t, map[int]int{http.StatusCreated: requests}, statuses)
	require.Len(t, answers, requests)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range requests {
		a := answers[i]
		require.Equal(t, start.Add(time.Duration(i)*time.Second/rate), a.Due, "request %d is due at start + i/rate", i)
		require.Len(t, s.arrived[i], 1, "request %d is sent once", i)
		require.False(t, s.arrived[i][0].Before(a.Due), "request %d arrived before it was due", i)
		require.GreaterOrEqual(t, a.Latency, s.delay, "request %d: its latency includes the server's time", i)
		require.Equal(t, http.StatusCreated, a.Status)
	}
	require.LessOrEqual(t, s.maxHeld, conns)
}

// A request waiting for a free connection is late, and its latency says
// so: it is measured from its due time, not from when it was sent.
func TestOpenLoop_LatencyCountsTheWaitForAFreeConnection(t *testing.T) {
	const requests, rate = 5, 100 // one due every 10 ms
	const delay = 50 * time.Millisecond
	_, host := serve(t, delay)

	answers, _, _, _ := bench.RunOpenLoop(host, "/claims", requests, rate, 1, time.Now(), time.Time{})

	require.Len(t, answers, requests)
	for i := range requests {
		// One connection: request i waits for the i before it, each
		// taking delay, though it was due only i*10 ms after the first.
		least := time.Duration(i+1)*delay - time.Duration(i)*10*time.Millisecond
		require.GreaterOrEqual(t, answers[i].Latency, least, "request %d", i)
	}
}

// Nothing due at or after the deadline is sent: it is counted as not sent.
func TestOpenLoop_SendsNothingDueAtOrAfterTheDeadline(t *testing.T) {
	const requests, rate = 30, 100
	s, host := serve(t, 0)
	start := time.Now().Add(20 * time.Millisecond)
	deadline := start.Add(100 * time.Millisecond) // requests 10 and on are due at or after it

	answers, sent, notSent, _ := bench.RunOpenLoop(host, "/lobby", requests, rate, 2, start, deadline)

	require.Equal(t, requests, sent+notSent)
	require.GreaterOrEqual(t, notSent, requests-10)
	require.Len(t, answers, sent)
	for i, a := range answers {
		require.True(t, a.Due.Before(deadline), "request %d was due at the deadline or after it, and sent", i)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 10; i < requests; i++ {
		require.Empty(t, s.arrived[i], "request %d was due at the deadline or after it", i)
	}
}
