package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// Serve starts the pub/sub listener, the funnel's flusher and the HTTP
// server; when its context ends, all of them stop.
func TestServe_StopsEverythingItStarted(t *testing.T) {
	testenv.NoLeaks(t)
	r := newClaimRig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// Asked to stop, Serve first turns not ready and keeps serving for its
// delay, every answer closing its connection (so keep-alive clients go
// through their load balancer to a server that stays); then it stops.
func TestServe_TurnsNotReadyAndDrainsBeforeItStops(t *testing.T) {
	testenv.NoLeaks(t)
	r := newClaimRigWith(t, api.Config{ShutdownDelay: 1500 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(path string) *http.Response {
		resp, err := client.Get(base + path)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	require.Eventually(t, func() bool {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	require.False(t, get("/healthz").Close, "a serving server keeps connections alive")

	asked := time.Now()
	cancel()
	require.Eventually(t, func() bool { return get("/readyz").StatusCode == http.StatusServiceUnavailable },
		time.Second, 10*time.Millisecond, "not ready once asked to stop")
	during := get("/healthz")
	require.Equal(t, http.StatusOK, during.StatusCode, "still serving during the delay")
	require.True(t, during.Close, "each answer during the delay closes its connection")
	select {
	case err := <-done:
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(asked), 1500*time.Millisecond, "served through the delay")
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
	_, err = client.Get(base + "/healthz")
	require.Error(t, err, "stopped: no longer listening")
}

// A connection on which no whole request arrives within ReadTimeout is
// answered a bare 408 and closed: the answer HTTP clients take for "the
// server closed an idle connection", never one that reads like the answer
// to a request (a 400 problem here once made Go's client log an
// unsolicited response, and could have been taken for a claim's answer).
func TestServe_AConnectionWithoutARequestTimesOutWith408(t *testing.T) {
	testenv.NoLeaks(t)
	r := newClaimRigWith(t, api.Config{ReadTimeout: 300 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	for name, sent := range map[string]string{
		"nothing sent":  "",
		"half a header": "POST /api/v1/sales/1/claims HTTP/1.1\r\nHost: x\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, sent)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			answer, err := io.ReadAll(conn) // to the server's close
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(answer), "HTTP/1.1 408 "), "answer: %q", answer)
			require.Contains(t, string(answer), "Connection: close")
			require.NotContains(t, string(answer), "problem+json")
		})
	}
}
