// Package devpay is the development payment provider: buyers "pay" on the
// dev checkout page (api/), which sends the signed webhook a real provider
// would; refunds are recorded durably in seckill's database, idempotent by
// key, and always succeed.
package devpay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/seckill/seckill"
)

// Ledger keeps the dev provider's refunds (store.Store, in its table
// dev_provider_refunds): one per idempotency key, like a real provider's
// API, returning the refund id recorded first.
type Ledger interface {
	DevProviderRefund(ctx context.Context, key, id, paymentIntentID string, amountCents int64, currency string) (string, error)
}

// Provider is the development payment provider.
type Provider struct {
	Ledger Ledger
}

var _ seckill.PaymentProvider = Provider{}

// Refund records the refund and returns its id.
func (p Provider) Refund(ctx context.Context, r seckill.RefundRequest) (string, error) {
	sum := sha256.Sum256([]byte(r.IdempotencyKey))
	id := "re_dev_" + hex.EncodeToString(sum[:12])
	return p.Ledger.DevProviderRefund(ctx, r.IdempotencyKey, id, r.PaymentIntentID, r.AmountCents, r.Currency)
}
