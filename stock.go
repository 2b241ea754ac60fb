package seckill

import "time"

// A sale's stock as the Redis hot path (redisstore) holds it: what warm-up
// loads, the figures and holdings it reads back, and what it tells of
// changes, in the words its consumers' interfaces use (the API, warm-up,
// reconciliation, the health gauges, the audit).

// WarmSpec is what warm-up loads for one sale.
type WarmSpec struct {
	SaleID int64
	// Variants are the units to load of each variant, in the sale's order.
	Variants []VariantUnits
	StartsAt time.Time
	EndsAt   time.Time
	// PresaleStartsAt is when the sale's members may claim and join (zero:
	// the sale has no presale): the scripts admit a caller who says the
	// buyer is a member from then on.
	PresaleStartsAt time.Time
	// Segments is how many segments the stock is split into (stock_segments;
	// 0 means 1).
	Segments int
	// Restocks are the sale's restocks the database has not marked
	// applied: Variants leave their units out (store.WarmSnapshot), and
	// re-warm adds back what Redis placed of them already, so each is
	// counted once whichever segment was lost (redisstore.RewarmAdmitting).
	Restocks []Restock
	// LastPlace is the highest place the sale's lines gave that the
	// database recorded, of rows still waiting or not (served or left:
	// store.WaitlistHighPlace). A re-warm numbers the joins after it (and
	// after the live segments' lines), so no place is given twice.
	LastPlace int64
}

// VariantUnits are units of one variant.
type VariantUnits struct {
	SKU   string
	Units int64
}

// SKUs lists the spec's skus, in order.
func (w WarmSpec) SKUs() []string {
	out := make([]string, len(w.Variants))
	for i, v := range w.Variants {
		out[i] = v.SKU
	}
	return out
}

// heldStart is the start a sale with a lobby has in Redis until its draw
// is done (the last millisecond of year 9999): open claims and joins are
// held back; the draw's own claims and joins pass. Opening the sale's
// claims when the draw is done ends it.
var heldStart = time.UnixMilli(253402300799999).UTC()

// ClaimsOpenAt is the start sale has in Redis: its starts_at, or, for a
// sale with a lobby whose draw is not done, a start that never comes
// (the draw opens the claims when it is done).
func ClaimsOpenAt(sale *Sale) time.Time {
	if sale.LobbyOpensAt != nil && sale.Drawn == nil {
		return heldStart
	}
	return sale.StartsAt
}

// ActiveClaim is a user's order that still counts as their one claim,
// with the units it holds (the zero Item: DefaultItem).
type ActiveClaim struct {
	UserID  string
	OrderID int64
	Item    Item
}

// SaleCounts are a live sale's Redis figures, over all its segments.
type SaleCounts struct {
	// Remaining is the stock (admissions still possible), in units, over
	// every variant; Variants is each variant's.
	Remaining int64
	Variants  map[string]int64
	// Waiting is the waitlist's length.
	Waiting int64
	// FromWaitlist counts the orders the waitlist has given buyers.
	FromWaitlist int64
	// ForWaiting is the units held for waiting buyers, over every variant.
	ForWaiting int64
}

// Held is what Redis holds of a sale's units at one read (holdings, the
// one count of docs/DESIGN.md invariant 7), each unit once, as the health
// gauge of stranded units weighs it against the database's total.
type Held struct {
	// Stock is the units in the segments' stock and in flight between
	// them (Remaining).
	Stock int64
	// Stuck is the part of Stock in flight since before the caller's
	// cut-off: taken from a segment and not given to another, by a mover
	// that seems to have stopped (reconciliation lands it).
	Stuck int64
	// ForWaiting is the units held for the head of a waiting line, who
	// waits for more units than have come back (not admissible: not in
	// Stock).
	ForWaiting int64
	// Claimed is the units the buyers' claims hold (each its quantity),
	// whatever the state of its order: from the admission (queued,
	// awaiting payment, paid) until its release forgets it.
	Claimed int64
	// Variants are the same figures per variant (sku); the fields above
	// are their sums.
	Variants map[string]Held
}

// Move is a move of units between the segments of a sale, as the audit
// reports one.
type Move struct {
	ID    string
	SKU   string
	From  int
	Dest  int // -1: a released unit not aimed yet
	Units int64
	At    time.Time
	// Given: the units reached Dest; only the record is left to forget.
	Given bool
}

// Changes are told what the installation says of its sales and orders as
// they change: a sale has stock again (a unit was released to it) or an
// order's row changed.
type Changes struct {
	Restocked    func(saleID int64)
	OrderChanged func(orderID int64)
	// Subscribed is called on each (re)subscription: messages may have
	// been missed while the connection was down.
	Subscribed func()
	// Interrupted is called when the subscription broke; it is renewed.
	Interrupted func(error)
}

// WarmSpecOf is the spec that loads sale with units of each variant (by
// sku; a variant missing from units gets none), in the sale's order.
func WarmSpecOf(sale *Sale, units map[string]int64) WarmSpec {
	spec := WarmSpec{SaleID: sale.ID, StartsAt: ClaimsOpenAt(sale), EndsAt: sale.EndsAt, Segments: sale.StockSegments}
	if sale.Presale != nil {
		spec.PresaleStartsAt = sale.Presale.StartsAt
	}
	for _, v := range sale.Variants {
		spec.Variants = append(spec.Variants, VariantUnits{SKU: v.SKU, Units: units[v.SKU]})
	}
	return spec
}
