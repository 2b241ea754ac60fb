package seckill

import "time"

// A claim, a waitlist join and the release of a unit as the Redis hot path
// (redisstore) answers them: the vocabulary its consumers' interfaces name
// (the API, reconciliation, the activities, payment delivery), so none of
// them imports the adapter to speak of an admission.

// Terms are what a buyer admitted to one variant owes per unit and for how
// long they may pay: the variant's price and the sale's payment timeout,
// fixed at admission. An order of Quantity units owes Quantity x
// UnitPriceCents.
type Terms struct {
	PaymentTimeout time.Duration
	UnitPriceCents int64
	Currency       string
	// Member: the buyer's token carries the sale's presale claim, so the
	// scripts admit them from the presale's start (docs/API.md "Presale").
	// TermsOf leaves it false; the API sets it per buyer.
	Member bool
}

// TermsOf are the terms of sale's variant sku for every buyer it admits
// (ok false: the sale has no such variant).
func TermsOf(sale Sale, sku string) (Terms, bool) {
	v, ok := sale.Variant(sku)
	if !ok {
		return Terms{}, false
	}
	return Terms{PaymentTimeout: sale.PaymentTimeout, UnitPriceCents: v.PriceCents, Currency: sale.Currency}, true
}

// Amount is what an order of quantity units owes under t.
func (t Terms) Amount(quantity int) int64 { return int64(quantity) * t.UnitPriceCents }

// ClaimResult is the outcome of one admission.
type ClaimResult struct {
	// Outcome is one of Admitted, SoldOut, AlreadyClaimed,
	// SaleNotStarted, SaleEnded, RateLimited, or Unavailable (the sale is
	// not loaded in Redis: fail closed).
	Outcome Outcome
	// OrderID is the new order (Admitted) or the user's active order
	// (AlreadyClaimed); zero otherwise.
	OrderID int64
	// Replayed is set when the result is the recorded first answer to the
	// same Idempotency-Key.
	Replayed bool
	// RetryAfter is how long a RateLimited user must wait.
	RetryAfter time.Duration
	// PayBy is the admitted order's payment deadline, fixed at admission
	// (Admitted only).
	PayBy time.Time
	// Tentative marks a SOLD_OUT that is true now but may not stay so (a
	// sale of several segments with units still moving between them, or owed
	// to the waiting buyers of the claimant's segment): it was not recorded
	// for the Idempotency-Key, and is no reason to answer other buyers
	// SOLD_OUT.
	Tentative bool
	// Owed marks a Tentative SOLD_OUT given because the claimant's segment
	// has buyers waiting: units that come go to them first, so asking
	// again, or landing the moves in flight, gets this claimant none.
	Owed bool
	// Remaining is the variant's units left when fewer than the quantity
	// asked (NotEnoughStock).
	Remaining int64
}

// Admission is an admitted order as Redis holds it until its saga has
// written it down.
type Admission struct {
	OrderID int64
	SaleID  int64
	UserID  string
	PayBy   time.Time
	// Item is the variant and the units admitted (DefaultItem for
	// admissions recorded before v4).
	Item Item
	// Drawn: the sale's draw admitted it (SagaInput.Drawn), so a saga
	// started from the admission rather than from its outbox entry (an
	// early cancel, reconciliation) writes the order as the draw's too.
	// False for admissions recorded before the marker was.
	Drawn bool
}

// JoinResult is the answer to a waitlist join (join.lua).
type JoinResult struct {
	// Outcome is one of Waiting, Admitted, AlreadyWaiting,
	// AlreadyClaimed, SaleNotStarted, SaleEnded, WaitlistFull, or
	// Unavailable (the sale is not loaded in Redis).
	Outcome Outcome
	// Position is the buyer's place in line, 1 next (Waiting,
	// AlreadyWaiting).
	Position int64
	// OrderID is the order a unit in stock became at once (Admitted), or
	// the user's active order (AlreadyClaimed).
	OrderID int64
	// PayBy is the admitted order's deadline (Admitted).
	PayBy time.Time
}

// WaitState is where a buyer stands on a sale's waitlist.
type WaitState struct {
	// Waiting is set while they wait, at Position (1 is next).
	Waiting  bool
	Position int64
	// OrderID is the order the waitlist gave them (0: none).
	OrderID int64
}

// NextOrder is what released units become when buyers are waiting for
// them: fresh order ids, one per unit released (each waiting buyer takes
// one unit), and the variant's terms.
type NextOrder struct {
	IDs   []int64
	Terms Terms
	// Units is how many of the order's units go back: 0 means all of
	// them; fewer for an order the database refused as SOLD_OUT
	// (Order.GiveBack).
	Units int
}

// Released is what a release of a claim did.
type Released struct {
	// Now is set when the claim still named the order and was released
	// by this call.
	Now bool
	// HandedTo are the waiting buyers who got a unit, as new admissions;
	// empty when nobody did (the units went back to the stock, or stayed
	// out of it).
	HandedTo []Admission
}

// ProofUse is what the single-use record of proofs of work found of one
// proof.
type ProofUse int

const (
	// ProofUsed: another request used it; it does not count.
	ProofUsed ProofUse = iota
	// ProofTaken: nobody had used it; it is recorded now, as this
	// request's (giving it back undoes that).
	ProofTaken
	// ProofRetried: the same request (its Idempotency-Key) took it before
	// and still holds it; it counts again, and is not this request's to
	// give back.
	ProofRetried
)

// TermsBySKU returns the terms of each of sale's variants by sku, for the
// steps that admit buyers to whichever variant comes (a release's waiting
// buyers, a move landing, a re-warm). A sku the sale does not have gets
// zero terms: it cannot come, Redis holds only the sale's variants.
func TermsBySKU(sale Sale) func(sku string) Terms {
	return func(sku string) Terms {
		t, _ := TermsOf(sale, sku)
		return t
	}
}
