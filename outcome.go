package seckill

// Outcome is how a claim or a waitlist join was answered, in the API's own
// words: the status of an acceptance (ADMITTED, WAITING, or REPLAYED for
// the first answer to an Idempotency-Key given again) or the error code
// of a refusal (SOLD_OUT, ALREADY_CLAIMED, ...). The one name of each
// answer everywhere: the admission scripts' results (redisstore maps
// their integer codes to it once), the outcome label of
// seckill_claims_total and seckill_waitlist_joins_total, a sale's stats
// (stored as text in sale_claims.outcome) and the problem's code.
type Outcome string

// The outcomes of claims and joins. A refusal's string is its Code.
const (
	Admitted       Outcome = "ADMITTED"                        // 202 (a claim) or 201 ADMITTED (a join)
	Replayed       Outcome = "REPLAYED"                        // the first answer to an Idempotency-Key, again
	Waiting        Outcome = "WAITING"                         // 201 WAITING: on the waitlist
	SoldOut        Outcome = Outcome(CodeSoldOut)              // 409
	NotEnoughStock Outcome = Outcome(CodeNotEnoughStock)       // 409, fewer units left than the quantity asked
	KeyReused      Outcome = Outcome(CodeIdempotencyKeyReused) // 422: the Idempotency-Key was used with another body
	AlreadyClaimed Outcome = Outcome(CodeAlreadyClaimed)       // 409, with the user's active order
	AlreadyWaiting Outcome = Outcome(CodeAlreadyWaiting)       // 409, with the user's place in line
	WaitlistFull   Outcome = Outcome(CodeWaitlistFull)         // 409
	SaleNotStarted Outcome = Outcome(CodeSaleNotStarted)       // 409
	SaleEnded      Outcome = Outcome(CodeSaleEnded)            // 409
	RateLimited    Outcome = Outcome(CodeRateLimited)          // 429
	Unavailable    Outcome = Outcome(CodeUnavailable)          // 503: Redis did not answer, or the sale is not loaded in it
	InvalidRequest Outcome = Outcome(CodeInvalidRequest)       // 400 (a bad Idempotency-Key)
	SaleNotFound   Outcome = Outcome(CodeSaleNotFound)         // 404
	Internal       Outcome = Outcome(CodeInternal)             // anything else (500)
)

// Refusal reports whether o refused the buyer: every outcome but
// ADMITTED, WAITING and REPLAYED. A refusal's Code is Code(o).
func (o Outcome) Refusal() bool {
	switch o {
	case Admitted, Waiting, Replayed:
		return false
	}
	return true
}
