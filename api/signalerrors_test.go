package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// seckill_payment_signal_errors_total counts the webhook's events that
// could not reach Temporal (seckill.ErrTemporal), and no other failure.
func TestWebhook_CountsTemporalErrors(t *testing.T) {
	reg := api.NewRegistry()
	r := newHandlerRig(t, api.Config{Registry: reg})
	saleID := r.createSale(t, 5)
	id := r.claim(t, saleID, "ann")
	signalErrors := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "seckill_payment_signal_errors_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("seckill_payment_signal_errors_total is not exported")
		return 0
	}
	require.Zero(t, signalErrors())

	r.delivery.answer("", fmt.Errorf("signal the saga: %w", errors.Join(seckill.ErrTemporal, errors.New("connection refused"))))
	a := r.hook(t, paid("evt_temporal", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status, "recorded: answered 200, reconciliation delivers it")
	require.Equal(t, "RECEIVED", a.body["outcome"])
	require.Equal(t, 1.0, signalErrors(), "Temporal refused the signal")

	r.delivery.answer("", errors.New("database unreachable"))
	a = r.hook(t, paid("evt_db", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status)
	r.delivery.answer("", seckill.ErrPaymentNotYet)
	a = r.hook(t, paid("evt_not_yet", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status)
	r.delivery.answer(seckill.OutcomeDelivered, nil)
	a = r.hook(t, paid("evt_temporal", 990), id, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, 1.0, signalErrors(), "other failures, a saga not running yet and deliveries are not Temporal errors")
}
