// Package stripepay is the Stripe payment provider, on the official
// stripe-go client: a PaymentIntent per order, created once (idempotency
// key from the order id, and a new one per retry after a failure),
// cancelled before the order's unit is given back,
// and refunds (idempotency key from the payment event id). Payments
// themselves reach seckill through the signed webhook (api/), as Stripe
// sends them.
package stripepay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/seckill/seckill"
)

// DefaultAPIBase is Stripe's own API.
const DefaultAPIBase = "https://api.stripe.com"

// Provider is Stripe.
type Provider struct {
	c *stripe.Client
}

var (
	_ seckill.PaymentProvider = (*Provider)(nil)
	_ seckill.PaymentIntents  = (*Provider)(nil)
)

// Option adjusts a Provider.
type Option func(*http.Client)

// WithTransport sends the provider's requests through rt (tests record
// them with it).
func WithTransport(rt http.RoundTripper) Option { return func(c *http.Client) { c.Transport = rt } }

// New returns the provider for secretKey (sk_live_... or sk_test_...,
// STRIPE_SECRET_KEY) on the API at apiBase ("" for Stripe's own;
// STRIPE_API_BASE, e.g. stripe-mock in tests). Requests time out after
// 30 s and stripe-go retries network errors twice, with the same
// idempotency key.
func New(secretKey, apiBase string, opts ...Option) (*Provider, error) {
	if err := CheckKey(secretKey); err != nil {
		return nil, err
	}
	if apiBase == "" {
		apiBase = DefaultAPIBase
	}
	u, err := url.Parse(apiBase)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("STRIPE_API_BASE must be an http(s) URL such as %s, got %q", DefaultAPIBase, apiBase)
	}
	base := strings.TrimRight(apiBase, "/")
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, o := range opts {
		o(hc)
	}
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{URL: &base, HTTPClient: hc})
	return &Provider{c: stripe.NewClient(secretKey, stripe.WithBackends(backends))}, nil
}

// CheckKey says what is wrong with a STRIPE_SECRET_KEY, or nil.
func CheckKey(key string) error {
	switch {
	case key == "":
		return errors.New("STRIPE_SECRET_KEY is required with SECKILL_PAYMENT_PROVIDER=stripe: your secret key from the Stripe dashboard (sk_test_... in test mode)")
	case strings.HasPrefix(key, "pk_"):
		return errors.New("STRIPE_SECRET_KEY is a publishable key (pk_...): use the secret key (sk_... or rk_...)")
	case !strings.HasPrefix(key, "sk_") && !strings.HasPrefix(key, "rk_"):
		return errors.New("STRIPE_SECRET_KEY must be a Stripe secret key (sk_live_..., sk_test_... or a restricted rk_...)")
	}
	return nil
}

// Name is "stripe".
func (p *Provider) Name() string { return "stripe" }

// IntentKey is the idempotency key of order orderID's PaymentIntent,
// asked for the retry-th time after failures: the saga's first attempt and
// the buyer's request share retry 0, so Stripe makes one; a retry after a
// failure uses a key of its own, since Stripe replays the first answer to
// a key, a 500 included, for 24 hours.
func IntentKey(orderID int64, retry int) string {
	key := "seckill-order-" + strconv.FormatInt(orderID, 10)
	if retry > 0 {
		key += "-retry-" + strconv.Itoa(retry)
	}
	return key
}

// CreateIntent creates the order's PaymentIntent (amount, currency,
// metadata.order_id, which the webhook reads back), once per order.
func (p *Provider) CreateIntent(ctx context.Context, r seckill.IntentRequest) (seckill.Intent, error) {
	params := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(r.AmountCents),
		Currency: stripe.String(r.Currency),
	}
	params.AddMetadata("order_id", strconv.FormatInt(r.OrderID, 10))
	params.SetIdempotencyKey(IntentKey(r.OrderID, r.Retry))
	pi, err := p.c.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return seckill.Intent{}, fmt.Errorf("stripe: create the PaymentIntent of order %d: %w", r.OrderID, err)
	}
	return p.intent(pi), nil
}

// CancelIntent cancels the order's PaymentIntent: Stripe answers the
// cancel call with the PaymentIntent it cancelled. One that can no longer
// be cancelled is read back: succeeded (the buyer paid first) or already
// canceled is an answer; one still processing a payment is an error, so
// the caller asks again once it has settled.
func (p *Provider) CancelIntent(ctx context.Context, orderID int64, intentID string) (seckill.Intent, error) {
	// No idempotency key of ours: cancelling is safe to repeat (a
	// cancelled intent answers payment_intent_unexpected_state, read back
	// below), and a key per order would replay a first failure (a 500, or
	// "processing") to every retry for a day.
	params := &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String(string(stripe.PaymentIntentCancellationReasonAbandoned))}
	pi, err := p.c.V1PaymentIntents.Cancel(ctx, intentID, params)
	if err == nil {
		in := p.intent(pi)
		in.Status, in.AmountCents = seckill.IntentCanceled, 0
		return in, nil
	}
	var serr *stripe.Error
	if !errors.As(err, &serr) || serr.Code != stripe.ErrorCodePaymentIntentUnexpectedState {
		return seckill.Intent{}, fmt.Errorf("stripe: cancel the PaymentIntent %s of order %d: %w", intentID, orderID, err)
	}
	if pi, err = p.c.V1PaymentIntents.Retrieve(ctx, intentID, nil); err != nil {
		return seckill.Intent{}, fmt.Errorf("stripe: read the PaymentIntent %s of order %d: %w", intentID, orderID, err)
	}
	in := p.intent(pi)
	if in.Status == seckill.IntentOpen {
		return in, fmt.Errorf("stripe: the PaymentIntent %s of order %d is %s: it cannot be cancelled yet", intentID, orderID, pi.Status)
	}
	return in, nil
}

// Refund refunds r.AmountCents of the PaymentIntent, once per
// r.IdempotencyKey (the payment event's id).
func (p *Provider) Refund(ctx context.Context, r seckill.RefundRequest) (string, error) {
	params := &stripe.RefundCreateParams{
		PaymentIntent: stripe.String(r.PaymentIntentID),
		Amount:        stripe.Int64(r.AmountCents),
	}
	params.SetIdempotencyKey("seckill-refund-" + r.IdempotencyKey)
	re, err := p.c.V1Refunds.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: refund %s: %w", r.PaymentIntentID, err)
	}
	return re.ID, nil
}

func (p *Provider) intent(pi *stripe.PaymentIntent) seckill.Intent {
	in := seckill.Intent{Provider: p.Name(), ID: pi.ID, ClientSecret: pi.ClientSecret, Status: seckill.IntentOpen,
		Currency: string(pi.Currency)}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		in.Status, in.AmountCents = seckill.IntentSucceeded, pi.AmountReceived
	case stripe.PaymentIntentStatusCanceled:
		in.Status = seckill.IntentCanceled
	}
	return in
}
