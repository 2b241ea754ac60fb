package seckill

// ClaimOutcome is how one claim was answered: the label of the
// seckill_claims_total metric and the key of a sale's funnel (stored as
// text in sale_claims.outcome). One vocabulary for the API, the metrics
// and the stats.
type ClaimOutcome string

// The outcomes of a claim.
const (
	ClaimAdmitted       ClaimOutcome = "admitted"        // 202
	ClaimReplayed       ClaimOutcome = "replayed"        // the first answer to an Idempotency-Key, again
	ClaimSoldOut        ClaimOutcome = "sold_out"        // 409 SOLD_OUT
	ClaimAlreadyClaimed ClaimOutcome = "already_claimed" // 409 ALREADY_CLAIMED
	ClaimNotStarted     ClaimOutcome = "not_started"     // 409 SALE_NOT_STARTED
	ClaimEnded          ClaimOutcome = "ended"           // 409 SALE_ENDED
	ClaimRateLimited    ClaimOutcome = "rate_limited"    // 429 RATE_LIMITED
	ClaimNotWarmed      ClaimOutcome = "not_warmed"      // 503: the sale is not loaded in Redis
	ClaimUnavailable    ClaimOutcome = "unavailable"     // 503: Redis did not answer (or its replicas)
	ClaimInvalid        ClaimOutcome = "invalid"         // 400 (a bad Idempotency-Key)
	ClaimSaleNotFound   ClaimOutcome = "sale_not_found"  // 404
	ClaimError          ClaimOutcome = "error"           // anything else (500)
)

// Code is the error code a refused claim was answered with; ok is false
// for the outcomes that are not refusals (admitted, replayed).
func (o ClaimOutcome) Code() (code Code, ok bool) {
	switch o {
	case ClaimSoldOut:
		return CodeSoldOut, true
	case ClaimAlreadyClaimed:
		return CodeAlreadyClaimed, true
	case ClaimNotStarted:
		return CodeSaleNotStarted, true
	case ClaimEnded:
		return CodeSaleEnded, true
	case ClaimRateLimited:
		return CodeRateLimited, true
	case ClaimInvalid:
		return CodeInvalidRequest, true
	case ClaimSaleNotFound:
		return CodeSaleNotFound, true
	case ClaimError:
		return CodeInternal, true
	case ClaimAdmitted, ClaimReplayed:
		return "", false
	}
	return CodeUnavailable, true // not warmed, unavailable, and any unknown text
}
