package devpay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/devpay"
)

func TestRefund_OncePerIdempotencyKey(t *testing.T) {
	st, _ := testenv.Store(t)
	p := devpay.Provider{Ledger: st}
	req := seckill.RefundRequest{IdempotencyKey: "evt_1", PaymentIntentID: "pi_1", AmountCents: 990, Currency: "usd"}

	first, err := p.Refund(context.Background(), req)
	require.NoError(t, err)
	require.Regexp(t, `^re_dev_[0-9a-f]{24}$`, first)
	again, err := p.Refund(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, first, again, "a repeat is the same refund")

	other, err := p.Refund(context.Background(), seckill.RefundRequest{IdempotencyKey: "evt_2", PaymentIntentID: "pi_1", AmountCents: 990, Currency: "usd"})
	require.NoError(t, err)
	require.NotEqual(t, first, other)
}
