package shopevents_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/shopevents"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// The Standard Webhooks specification's own example: this key, id,
// timestamp and body sign to this signature.
func TestSignature_TheSpecificationsTestVector(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	sig, err := wh.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.NoError(t, err)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

// A receiver checks every delivery with the library, as a shop would.
func TestSend_ASignedEventTheReceiverVerifies(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	var got struct {
		header http.Header
		body   []byte
	}
	answer := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.header = r.Header.Clone()
		got.body, _ = io.ReadAll(r.Body)
		if err := wh.Verify(got.body, r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(answer)
	}))
	t.Cleanup(srv.Close)

	s, err := shopevents.New(srv.URL+"/hooks/seckill", secret, nil)
	require.NoError(t, err)
	paidAt := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	o := &seckill.Order{ID: 2124661271446081536, SaleID: 3, UserID: "auth0|5f3c", Status: seckill.StatusPaid,
		AmountCents: 990, Currency: "usd", CreatedAt: paidAt.Add(-time.Minute), PaidAt: &paidAt}
	ev := seckill.NewShopEvent(o, seckill.ShopOrderPaid, paidAt)
	require.NoError(t, s.Send(context.Background(), ev))

	require.Equal(t, "evt_2124661271446081536_paid", got.header.Get("webhook-id"))
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	var body struct {
		Type      string            `json:"type"`
		Timestamp time.Time         `json:"timestamp"`
		Data      seckill.OrderJSON `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got.body, &body))
	require.Equal(t, "order.paid", body.Type)
	require.Equal(t, paidAt, body.Timestamp)
	require.Equal(t, "2124661271446081536", body.Data.OrderID)
	require.Equal(t, seckill.StatusPaid, body.Data.Status)

	// Signed with another key: the receiver refuses it, and Send says so.
	other, err := shopevents.New(srv.URL, "whsec_"+"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB", nil)
	require.NoError(t, err)
	var refused *shopevents.RefusedError
	require.True(t, errors.As(other.Send(context.Background(), ev), &refused))
	require.Equal(t, http.StatusBadRequest, refused.Status)

	answer = http.StatusInternalServerError
	require.True(t, errors.As(s.Send(context.Background(), ev), &refused), "only a 2xx is delivered")
}

func TestNew_RefusesBadSettings(t *testing.T) {
	for name, tc := range map[string][2]string{
		"no scheme":           {"shop.example/hooks", secret},
		"ftp":                 {"ftp://shop.example/hooks", secret},
		"no whsec_ prefix":    {"https://shop.example/hooks", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		"not base64":          {"https://shop.example/hooks", "whsec_not base64!"},
		"a key too short":     {"https://shop.example/hooks", "whsec_c2hvcnQ="},
		"an empty whsec_ key": {"https://shop.example/hooks", "whsec_"},
	} {
		_, err := shopevents.New(tc[0], tc[1], nil)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "SECKILL_EVENTS_", name)
	}
}

// A URL that redirects is not delivered to: following a 301 or 302 would
// turn the POST into a GET without the event, whose 2xx is no delivery.
func TestSend_ARedirectIsNotADelivery(t *testing.T) {
	var gets, posts int
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets++
		} else {
			posts++
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(target.Close)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirect := httptest.NewServer(http.RedirectHandler(target.URL, code))
		s, err := shopevents.New(redirect.URL, secret, nil)
		require.NoError(t, err)
		err = s.Send(context.Background(), seckill.ShopEvent{ID: "evt_1_paid", OrderID: 1, Type: seckill.ShopOrderPaid})
		var refused *shopevents.RefusedError
		require.True(t, errors.As(err, &refused), "%d: %v", code, err)
		require.Equal(t, code, refused.Status)
		redirect.Close()
	}
	require.Zero(t, gets+posts, "the redirect's target is never asked")
}
