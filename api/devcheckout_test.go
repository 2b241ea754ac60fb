package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// The dev provider sends a payment event again, the same event, while the
// webhook answers 503 (recorded, not delivered: the saga's signal failed),
// as a real provider retries: the buyer's one press of "Pay" pays, and the
// event is recorded once.
func TestDevCheckout_RetriesTheSameEventWhileTheWebhookAnswers503(t *testing.T) {
	r := newHandlerRig(t, api.Config{Dev: api.DevTools{Checkout: true}})
	r.delivery.answer("", fmt.Errorf("signal: %w", seckill.ErrTemporal))
	saleID := r.createSale(t, 1)
	orderID := r.claim(t, saleID, "ann")
	r.write(t, orderID, saleID, "ann")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	// Two tries fail; the third is delivered.
	go func() {
		for len(r.delivery.calls()) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		r.delivery.answer(seckill.OutcomeDelivered, nil)
	}()
	req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+"/dev/checkout/"+strconv.FormatInt(orderID, 10),
		bytes.NewReader([]byte(`{"outcome":"succeeded"}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token(t, "ann", false))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	calls := r.delivery.calls()
	require.GreaterOrEqual(t, len(calls), 3)
	for _, c := range calls {
		require.Equal(t, calls[0].ev.EventID, c.ev.EventID, "every try sends the same event")
		require.Equal(t, orderID, c.orderID)
	}
}
