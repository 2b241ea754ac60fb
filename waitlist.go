package seckill

import "time"

// WaitlistEntry is a buyer's place in a variant's waiting line as the
// database keeps it (docs/DESIGN.md invariant 10): written after Redis
// put them in line and before they are answered, so that a re-warm of a
// sale whose Redis keys were lost rebuilds the line from it.
type WaitlistEntry struct {
	SaleID int64
	UserID string
	// Item is the variant of the line and the units the buyer waits for.
	Item Item
	// OrderID is an id minted for the row (never the join's own, which a
	// sale of several segments may have given another buyer): the order
	// the buyer gets when a re-warm serves them.
	OrderID int64
	// Place is the join sequence Redis gave the buyer (their score in the
	// line; one numbering over every segment of the sale): the lines'
	// first come, first served order.
	Place int64
	// JoinedAt is the joining process' clock just before the join: an
	// order of the buyer for the sale created at or after it means the
	// line served them.
	JoinedAt time.Time
}
