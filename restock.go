package seckill

import "time"

// Restocking (docs/API.md v4 "Restocking"): an admin adds units to one
// variant of a sale, once per Idempotency-Key. The database is the
// authority: its half (store) records the key and adds the units to the
// variant's total and available in one transaction; its Redis half
// (redisstore) hands them to the variant's waiting buyers first and puts
// the rest in the stock for open claims. A restock stays "not applied" in
// the database until its Redis half is done, so a crash between the two
// halves leaves it findable: a retry with the same key, or
// reconciliation, runs the Redis half again (idempotent per restock), and
// re-warm leaves a restock that is not applied out of what it loads.

// MaxRestock bounds the units one restock adds.
const MaxRestock = 10_000_000

// Restock is one restock of a sale's variant as the database records it
// under its Idempotency-Key.
type Restock struct {
	// ID names the restock in Redis (the Redis half's idempotency).
	ID     int64
	SaleID int64
	SKU    string
	// Added is the units it adds.
	Added int64
	At    time.Time
	// Applied: its Redis half is done, so every load of the sale into
	// Redis from the database counts its units.
	Applied bool
}

// RestockOutcome is what the Redis half of a restock found.
type RestockOutcome int

const (
	// RestockAppliedNow: this call placed the restock's last units.
	RestockAppliedNow RestockOutcome = iota + 1
	// RestockAppliedBefore: an earlier call had placed them all; nothing
	// happened again.
	RestockAppliedBefore
	// RestockNotWarmed: the variant's stock is not loaded in Redis
	// (segment 0): nothing happened. A re-warm loads the sale from the
	// database without the units of restocks not applied, and the Redis
	// half is run again after it.
	RestockNotWarmed
)

// Restocked is what the Redis half of a restock did.
type Restocked struct {
	Outcome RestockOutcome
	// HandedTo are the waiting buyers this call gave a unit to, as new
	// admissions (the outbox relay starts their sagas).
	HandedTo []Admission
}

// Applied reports whether Redis holds all the restock's units now, so
// the database may record it as applied.
func (r Restocked) Applied() bool {
	return r.Outcome == RestockAppliedNow || r.Outcome == RestockAppliedBefore
}

// RestockJSON is the body of POST /api/v1/sales/{id}/variants/{sku}/stock:
// the units to add, 1..MaxRestock.
type RestockJSON struct {
	Add *int64 `json:"add"`
}
