//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
)

// TestOrderWait_AnswersAtTheStatusAskedOrFailsNamingTheOrdersStatus: `seckill order wait` answers once the order has the
// status asked for (by default once it is decided and its saga has
// ended), fails at once for a status the order went past, and fails
// naming the status it is still in when the timeout passes.
func TestOrderWait_AnswersAtTheStatusAskedOrFailsNamingTheOrdersStatus(t *testing.T) {
	s := startSystem(t, systemOptions{})
	ctx := context.Background()
	sale := s.createSale(5, 30*time.Second)
	wait := func(orderID string, args ...string) (string, error) {
		var out bytes.Buffer
		err := app.OrderCommand(ctx, s.cfg, func(string) string { return "" },
			append([]string{"wait", "--api", s.info.APIURL, "--order", orderID}, args...), &out)
		return strings.TrimSpace(out.String()), err
	}

	r := s.claim(sale, "payer")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	payer := r.json(t)["order_id"].(string)
	out, err := wait(payer, "--status", "AWAITING_PAYMENT")
	require.NoError(t, err)
	require.Equal(t, "order "+payer+" AWAITING_PAYMENT", out)
	out, err = wait(payer, "--status", "QUEUED")
	require.ErrorContains(t, err, "it will not be QUEUED")
	require.Equal(t, "order "+payer+" AWAITING_PAYMENT", out)
	out, err = wait(payer, "--status", "PAID", "--timeout", "1s")
	require.ErrorContains(t, err, "is still AWAITING_PAYMENT after 1s")
	require.Equal(t, "order "+payer+" AWAITING_PAYMENT", out)

	r = s.webhook("evt_order_wait", seckill.PaymentSucceeded, payer, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	out, err = wait(payer)
	require.NoError(t, err)
	require.Equal(t, "order "+payer+" PAID", out)
	_, err = wait(payer, "--status", "CLOSED")
	require.ErrorContains(t, err, "it will not be CLOSED")

	// Cancelled: decided once the saga has closed it and ended.
	r = s.claim(sale, "canceller")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	canceller := r.json(t)["order_id"].(string)
	r = s.mustDo("POST", "/api/v1/orders/"+canceller+"/cancel", s.token("canceller", false), nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	out, err = wait(canceller)
	require.NoError(t, err)
	require.Equal(t, "order "+canceller+" CLOSED CANCELLED", out)
	require.Equal(t, int64(4), s.stock(sale).Remaining, "the unit is back in Redis once the saga has ended")

	_, err = wait(strconv.FormatInt(time.Now().UnixNano(), 10))
	require.ErrorContains(t, err, "has no order")
}
