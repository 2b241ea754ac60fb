package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/idgen"
)

// payOnDevCheckout serves r's API on a loopback port (the dev provider
// posts its event to the API's own URL), has user ann claim and the saga
// write an order of a new sale, presses Pay on the dev checkout once, and
// returns the answer's status.
func payOnDevCheckout(t *testing.T, r *handlerRig) int {
	t.Helper()
	saleID := r.createSale(t, 1)
	orderID := r.claim(t, saleID, "ann")
	r.write(t, orderID, saleID, "ann")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+"/dev/checkout/"+strconv.FormatInt(orderID, 10),
		bytes.NewReader([]byte(`{"outcome":"succeeded"}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token(t, "ann", false))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The dev provider sends a payment event again, the same event, while the
// webhook answers 503 (recorded, not delivered: the saga's signal failed),
// as a real provider retries: the buyer's one press of "Pay" pays, and the
// event is recorded once.
func TestDevCheckout_RetriesTheSameEventWhileTheWebhookAnswers503(t *testing.T) {
	r := newHandlerRig(t, api.Config{Dev: api.DevTools{Checkout: true}})
	r.delivery.answer("", fmt.Errorf("signal: %w", seckill.ErrTemporal))
	// Two tries fail; the third is delivered.
	go func() {
		for len(r.delivery.calls()) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		r.delivery.answer(seckill.OutcomeDelivered, nil)
	}()
	require.Equal(t, http.StatusOK, payOnDevCheckout(t, r))

	calls := r.delivery.calls()
	require.GreaterOrEqual(t, len(calls), 3)
	for _, c := range calls {
		require.Equal(t, calls[0].ev.EventID, c.ev.EventID, "every try sends the same event")
	}
}

// blockingDelivery is a saga signal that misses the webhook's request
// deadline on its first try (a loaded machine: the Temporal call returns
// only when the webhook's context expires), then is delivered.
type blockingDelivery struct {
	mu    sync.Mutex
	tries int
}

func (d *blockingDelivery) Deliver(ctx context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error) {
	d.mu.Lock()
	d.tries++
	first := d.tries == 1
	d.mu.Unlock()
	if first {
		<-ctx.Done()
		return "", fmt.Errorf("signal: %w: %w", ctx.Err(), seckill.ErrTemporal)
	}
	return seckill.OutcomeDelivered, nil
}

// Hostile review (issue 32, fourth) finding 3: the provider's try had a
// deadline as long as the webhook's, started earlier, so it gave up (an
// error, not a 503) before the webhook answered 503 and no try followed:
// the buyer was told "try again" although the event was recorded, and a
// second press paid a second time.
func TestDevCheckout_RetriesASignalThatMissedTheDeadline(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids, err := idgen.New(t.Context(), r.rs.IDNodes(), log)
	require.NoError(t, err)
	d := &blockingDelivery{}
	r.srv = api.New(api.Config{Store: r.st, Redis: r.rs, Log: log, IDs: ids, Sagas: r.sagas, Delivery: d,
		JWTSecret: r.jwt, WebhookSecret: r.webhookSecret, Dev: api.DevTools{Checkout: true}, RequestTimeout: 300 * time.Millisecond})
	require.Equal(t, http.StatusOK, payOnDevCheckout(t, r))
	d.mu.Lock()
	defer d.mu.Unlock()
	require.Equal(t, 2, d.tries, "the first try missed the deadline, the second was delivered")
}
