package stripepay_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/stripemock"
	"github.com/seckill/seckill/payments/stripepay"
)

// recorder keeps every request the provider sends (method, path, the
// Idempotency-Key header and the form) and passes it on.
type recorder struct {
	mu   sync.Mutex
	sent []sent
}

type sent struct {
	method, path, key string
	form              url.Values
	status            int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var form url.Values
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		form, _ = url.ParseQuery(string(b))
		req.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	r.mu.Lock()
	r.sent = append(r.sent, sent{req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"), form, status})
	r.mu.Unlock()
	return resp, err
}

// Every request seckill makes of Stripe is one Stripe's own API mock
// (its OpenAPI specification) accepts, each with its idempotency key
// (stripe-go's own, fresh per request, for the cancel).
func TestProvider_RequestsStripeAccepts(t *testing.T) {
	rec := &recorder{}
	p, err := stripepay.New("sk_test_seckill", stripemock.Start(t), stripepay.WithTransport(rec))
	require.NoError(t, err)
	ctx := t.Context()

	in, err := p.CreateIntent(ctx, seckill.IntentRequest{OrderID: 42, AmountCents: 990, Currency: "usd"})
	require.NoError(t, err)
	require.NotEmpty(t, in.ID)
	require.NotEmpty(t, in.ClientSecret)
	require.Equal(t, "stripe", in.Provider)

	cancelled, err := p.CancelIntent(ctx, 42, in.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.IntentCanceled, cancelled.Status)

	refund, err := p.Refund(ctx, seckill.RefundRequest{IdempotencyKey: "evt_1", PaymentIntentID: in.ID, AmountCents: 990, Currency: "usd"})
	require.NoError(t, err)
	require.NotEmpty(t, refund)

	require.Len(t, rec.sent, 3)
	for _, s := range rec.sent {
		require.Equal(t, http.StatusOK, s.status, "%s %s", s.method, s.path)
		require.Equal(t, http.MethodPost, s.method)
	}
	create, cancel, ref := rec.sent[0], rec.sent[1], rec.sent[2]
	require.Equal(t, "/v1/payment_intents", create.path)
	require.Equal(t, "seckill-order-42", create.key)
	require.Equal(t, "990", create.form.Get("amount"))
	require.Equal(t, "usd", create.form.Get("currency"))
	require.Equal(t, "42", create.form.Get("metadata[order_id]"))
	require.Equal(t, "/v1/payment_intents/"+in.ID+"/cancel", cancel.path)
	require.NotContains(t, cancel.key, "seckill-", "a cancel has no key of the order's: a failure must not be replayed to its retry")
	require.Equal(t, "abandoned", cancel.form.Get("cancellation_reason"))
	require.Equal(t, "/v1/refunds", ref.path)
	require.Equal(t, "seckill-refund-evt_1", ref.key)
	require.Equal(t, in.ID, ref.form.Get("payment_intent"))
	require.Equal(t, "990", ref.form.Get("amount"))
}

// A PaymentIntent that took a payment before the cancel reached Stripe
// cannot be cancelled: read back, it is honoured as succeeded; one still
// processing is an error (ask again).
func TestProvider_CancelFindsTheIntentSucceeded(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   seckill.IntentStatus
		err    bool
	}{{"succeeded", seckill.IntentSucceeded, false}, {"canceled", seckill.IntentCanceled, false}, {"processing", seckill.IntentOpen, true}} {
		t.Run(tc.status, func(t *testing.T) {
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if strings.HasSuffix(r.URL.Path, "/cancel") {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state","message":"You cannot cancel this PaymentIntent because it has a status of `+tc.status+`."}}`)
					return
				}
				fmt.Fprintf(w, `{"id":"pi_1","object":"payment_intent","status":%q,"amount":990,"amount_received":990,"currency":"usd"}`, tc.status)
			}))
			defer fake.Close()
			p, err := stripepay.New("sk_test_seckill", fake.URL)
			require.NoError(t, err)

			in, err := p.CancelIntent(t.Context(), 42, "pi_1")

			require.Equal(t, tc.err, err != nil, "%v", err)
			require.Equal(t, tc.want, in.Status)
			if tc.want == seckill.IntentSucceeded {
				require.Equal(t, int64(990), in.AmountCents)
				require.Equal(t, "usd", in.Currency)
			}
		})
	}
}

func TestNew_ExplainsABadKeyOrBase(t *testing.T) {
	for key, want := range map[string]string{
		"":            "STRIPE_SECRET_KEY is required",
		"pk_test_abc": "publishable key",
		"abc":         "must be a Stripe secret key",
	} {
		_, err := stripepay.New(key, "")
		require.ErrorContains(t, err, want)
	}
	_, err := stripepay.New("sk_test_abc", "localhost:12111")
	require.ErrorContains(t, err, "STRIPE_API_BASE must be an http(s) URL")
}

// replaying is a Stripe that answers a request the way Stripe answers
// one under an idempotency key it has seen: with the first answer,
// errors included. Its first answer to each path is a 500.
type replaying struct {
	mu    sync.Mutex
	first map[string]int // key -> status of its first answer
	seen  map[string]bool
}

func (f *replaying) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	key := r.Header.Get("Idempotency-Key")
	status, replay := f.first[key]
	if !replay {
		status = http.StatusOK
		if !f.seen[r.URL.Path] {
			status = http.StatusInternalServerError
		}
		f.seen[r.URL.Path] = true
		if key != "" {
			f.first[key] = status
		}
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
		fmt.Fprint(w, `{"error":{"type":"api_error","message":"Something went wrong on Stripe's end."}}`)
		return
	}
	fmt.Fprint(w, `{"id":"pi_1","object":"payment_intent","status":"canceled","amount":990,"currency":"usd","client_secret":"pi_1_secret"}`)
}

// A create or cancel that failed once succeeds when asked again: neither
// retry is sent under the key whose failure Stripe would replay for a day.
func TestProvider_AFailureIsNotReplayedToTheRetry(t *testing.T) {
	fake := httptest.NewServer(&replaying{first: map[string]int{}, seen: map[string]bool{}})
	defer fake.Close()
	p, err := stripepay.New("sk_test_seckill", fake.URL)
	require.NoError(t, err)
	ctx := t.Context()

	_, err = p.CreateIntent(ctx, seckill.IntentRequest{OrderID: 42, AmountCents: 990, Currency: "usd"})
	require.Error(t, err)
	_, err = p.CreateIntent(ctx, seckill.IntentRequest{OrderID: 42, AmountCents: 990, Currency: "usd"})
	require.Error(t, err, "the same key: Stripe replays the failure")
	in, err := p.CreateIntent(ctx, seckill.IntentRequest{OrderID: 42, AmountCents: 990, Currency: "usd", Retry: 1})
	require.NoError(t, err, "a retry asks under its own key")
	require.Equal(t, "pi_1", in.ID)

	_, err = p.CancelIntent(ctx, 42, "pi_1")
	require.Error(t, err)
	got, err := p.CancelIntent(ctx, 42, "pi_1")
	require.NoError(t, err, "a cancel asked again is a new request")
	require.Equal(t, seckill.IntentCanceled, got.Status)
}
