package seckill_test

import (
	"testing"

	"github.com/seckill/seckill"
)

func TestClaimOutcome_CodeIsTheAnswer(t *testing.T) {
	for outcome, want := range map[seckill.ClaimOutcome]seckill.Code{
		seckill.ClaimSoldOut:        seckill.CodeSoldOut,
		seckill.ClaimAlreadyClaimed: seckill.CodeAlreadyClaimed,
		seckill.ClaimNotStarted:     seckill.CodeSaleNotStarted,
		seckill.ClaimEnded:          seckill.CodeSaleEnded,
		seckill.ClaimRateLimited:    seckill.CodeRateLimited,
		seckill.ClaimNotWarmed:      seckill.CodeUnavailable,
		seckill.ClaimUnavailable:    seckill.CodeUnavailable,
		seckill.ClaimInvalid:        seckill.CodeInvalidRequest,
		seckill.ClaimSaleNotFound:   seckill.CodeSaleNotFound,
		seckill.ClaimError:          seckill.CodeInternal,
		"typo_from_an_old_version":  seckill.CodeUnavailable,
	} {
		if got, ok := outcome.Code(); !ok || got != want {
			t.Errorf("%s: got %q %v, want %q", outcome, got, ok, want)
		}
	}
	for _, o := range []seckill.ClaimOutcome{seckill.ClaimAdmitted, seckill.ClaimReplayed} {
		if _, ok := o.Code(); ok {
			t.Errorf("%s is not a refusal", o)
		}
	}
}
