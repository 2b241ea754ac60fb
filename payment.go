package seckill

import "context"

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
