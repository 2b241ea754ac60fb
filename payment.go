package seckill

import (
	"context"
	"time"
)

// PaymentProvider is the provider that takes buyers' payments. It takes
// each payment on its own page and tells seckill through the signed
// webhook (api/); what goes the other way is here. payments/devpay is the
// development provider.
type PaymentProvider interface {
	// Refund gives a payment back, once per IdempotencyKey however often
	// it is called, and returns the provider's refund id. An error means
	// the outcome is unknown: call again with the same key.
	Refund(ctx context.Context, r RefundRequest) (string, error)
}

// RefundRequest asks the provider to give back a payment.
type RefundRequest struct {
	// IdempotencyKey makes repeats of the same refund one refund (the
	// provider event id that took the payment).
	IdempotencyKey  string
	PaymentIntentID string
	AmountCents     int64
	Currency        string
}

// PaymentIntents is a provider whose checkout needs a payment object made
// for each order before the buyer pays (Stripe's PaymentIntent) and which
// can stop it, so no payment is taken for a unit that has been given back.
// The dev provider has none: its checkout needs nothing beforehand.
type PaymentIntents interface {
	// Name is the provider's name on the order ("stripe").
	Name() string
	// CreateIntent makes the order's payment object, once per order and
	// retry (its idempotency key is derived from the order id and
	// r.Retry), and returns it. An error means the outcome is unknown:
	// call again, with r.Retry counting the calls that failed. Calls with
	// different Retry may make two objects: the caller keeps the first one
	// recorded and cancels the other.
	CreateIntent(ctx context.Context, r IntentRequest) (Intent, error)
	// CancelIntent stops the order's payment object so it takes no
	// payment. When it took one first, the result says IntentSucceeded
	// with what was paid: the buyer paid in time by the provider's clock,
	// and the order is honoured. Safe to repeat: each call is a request of
	// its own, so a failure is never replayed to a later call.
	CancelIntent(ctx context.Context, orderID int64, intentID string) (Intent, error)
}

// IntentRequest asks for the payment object of one order.
type IntentRequest struct {
	OrderID     int64
	AmountCents int64
	Currency    string
	// Retry is set on a request made again after one failed: a provider
	// that replays its first answer to an idempotency key (Stripe does,
	// errors included, for a day) must then be asked under another key.
	Retry int
}

// IntentStatus is where a payment object stands.
type IntentStatus string

// Intent statuses: open (may still take a payment), succeeded (took it),
// canceled (can take none).
const (
	IntentOpen      IntentStatus = "open"
	IntentSucceeded IntentStatus = "succeeded"
	IntentCanceled  IntentStatus = "canceled"
)

// Intent is an order's payment object at the provider.
type Intent struct {
	Provider string
	ID       string
	// ClientSecret is what the buyer's browser hands the provider's
	// checkout (Stripe.js); shown to the order's owner only.
	ClientSecret string
	Status       IntentStatus
	// AmountCents and Currency are what it took (IntentSucceeded).
	AmountCents int64
	Currency    string
}

// PaymentRecord is a provider event as seckill recorded it
// (payment_events): what the webhook received and what became of it.
type PaymentRecord struct {
	ID              string
	Type            string
	OrderID         int64 // 0: the event names no order
	PaymentIntentID string
	AmountCents     int64
	Currency        string
	Payload         []byte
	Outcome         PaymentOutcome
	ReceivedAt      time.Time
	DeliveredAt     *time.Time
}

// Signal is the event as its order's saga takes it.
func (e *PaymentRecord) Signal() PaymentEvent {
	return PaymentEvent{
		EventID: e.ID, Type: PaymentEventType(e.Type), PaymentIntentID: e.PaymentIntentID,
		AmountCents: e.AmountCents, Currency: e.Currency, ReceivedAt: e.ReceivedAt.UTC(),
	}
}

// Pending reports whether no saga has decided what e does yet: it is only
// RECEIVED, or DELIVERED to a saga run that may have ended without acting
// on it (a run that failed or was terminated).
func (e *PaymentRecord) Pending() bool {
	return e.Outcome == OutcomeReceived || e.Outcome == OutcomeDelivered
}
