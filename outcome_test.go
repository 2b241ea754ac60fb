package seckill_test

import (
	"testing"

	"github.com/seckill/seckill"
)

// A refusal's outcome is its problem code, so the metric label, the stats
// key and the answer's code cannot drift apart.
func TestOutcome_RefusalIsItsCode(t *testing.T) {
	refusals := map[seckill.Outcome]seckill.Code{
		seckill.SoldOut:        seckill.CodeSoldOut,
		seckill.AlreadyClaimed: seckill.CodeAlreadyClaimed,
		seckill.AlreadyWaiting: seckill.CodeAlreadyWaiting,
		seckill.WaitlistFull:   seckill.CodeWaitlistFull,
		seckill.SaleNotStarted: seckill.CodeSaleNotStarted,
		seckill.SaleEnded:      seckill.CodeSaleEnded,
		seckill.RateLimited:    seckill.CodeRateLimited,
		seckill.Unavailable:    seckill.CodeUnavailable,
		seckill.InvalidRequest: seckill.CodeInvalidRequest,
		seckill.SaleNotFound:   seckill.CodeSaleNotFound,
		seckill.Internal:       seckill.CodeInternal,
	}
	for o, code := range refusals {
		if !o.Refusal() || seckill.Code(o) != code {
			t.Errorf("%s: refusal %v, code %q, want a refusal with code %q", o, o.Refusal(), seckill.Code(o), code)
		}
	}
	for _, o := range []seckill.Outcome{seckill.Admitted, seckill.Waiting, seckill.Replayed} {
		if o.Refusal() {
			t.Errorf("%s is not a refusal", o)
		}
	}
}
