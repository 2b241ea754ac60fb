// Package payments is seckill's side of the payment provider: giving back
// a payment that could not be honoured. The provider takes the payment on
// its own page and tells seckill through the signed webhook (api/); only
// refunds go the other way.
package payments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/seckill/seckill/store"
)

// RefundRequest asks the provider to give back a payment.
type RefundRequest struct {
	// IdempotencyKey makes repeats of the same refund one refund (the
	// provider event id that took the payment).
	IdempotencyKey  string
	PaymentIntentID string
	AmountCents     int64
	Currency        string
}

// Provider refunds payments.
type Provider interface {
	// Refund gives the payment back, once per IdempotencyKey however often
	// it is called, and returns the provider's refund id. An error means
	// the outcome is unknown: call again with the same key.
	Refund(ctx context.Context, r RefundRequest) (string, error)
}

// DevProvider is the development payment provider: it "refunds" by
// recording the refund durably in its own table (dev_provider_refunds),
// idempotent by key, and always succeeds.
type DevProvider struct {
	Store *store.Store
}

// Refund records the refund and returns its id.
func (p DevProvider) Refund(ctx context.Context, r RefundRequest) (string, error) {
	sum := sha256.Sum256([]byte(r.IdempotencyKey))
	id := "re_dev_" + hex.EncodeToString(sum[:12])
	return p.Store.DevProviderRefund(ctx, r.IdempotencyKey, id, r.PaymentIntentID, r.AmountCents, r.Currency)
}
