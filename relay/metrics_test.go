package relay_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
)

// relayCounter reads a counter without labels from reg (0 when absent).
func relayCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// seckill_relay_start_errors_total counts every workflow start that failed
// (each retried), and only those: the starts that succeed are
// seckill_relay_started_total.
func TestRelay_CountsStartErrors(t *testing.T) {
	testenv.NoLeaks(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	const saleID, units = 9, 30
	admitAll(t, rs, saleID, units)
	reg := prometheus.NewPedanticRegistry()
	st := &starter{started: map[int64]int{}, failed: map[int64]bool{}, failEvery: 5} // orders 5, 10, ... 30 fail once
	r := relay.New(rs, st, relay.Config{Consumer: "relay-metrics", BatchSize: 16, Parallel: 4,
		Block: 50 * time.Millisecond, Refresh: 50 * time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, r.Register(reg))
	require.Zero(t, relayCounter(t, reg, "seckill_relay_start_errors_total"), "exported at 0 before any failure")

	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	require.Eventually(t, func() bool {
		orders, _ := st.count()
		return orders == units
	}, 30*time.Second, 20*time.Millisecond, "every claim started")
	stop()
	require.NoError(t, <-done)

	require.Equal(t, float64(units/5), relayCounter(t, reg, "seckill_relay_start_errors_total"), "one failure per fifth order")
	require.Equal(t, float64(units), relayCounter(t, reg, "seckill_relay_started_total"))
}
