package seckill

import "time"

// SaleStats is a sale's funnel, from claims to paid orders, as the
// database counts it.
type SaleStats struct {
	Sale *Sale
	// Claims counts the claims answered, by outcome.
	Claims map[Outcome]int64
	// Orders counts the orders by status; Closed by close reason.
	Orders map[OrderStatus]int64
	Closed map[CloseReason]int64
	// Refunds counts refunds by status (RefundPending, RefundSucceeded),
	// and their amount.
	Refunds      map[string]int64
	RefundsCents int64
	// PaidCents is the sum of the paid orders' amounts.
	PaidCents int64
	// SoldOutAt is when a claim was first refused as sold out, if ever.
	SoldOutAt *time.Time
}

// SaleStatsJSON is a sale's funnel (GET /api/v1/sales/{id}/stats, admin):
// how its claims were answered, what became of its orders, and how fast
// it sold out.
type SaleStatsJSON struct {
	SaleID  string      `json:"sale_id"`
	Name    string      `json:"name"`
	State   SaleState   `json:"state"`
	Stock   Stock       `json:"stock"`
	Claims  ClaimStats  `json:"claims"`
	Orders  OrderStats  `json:"orders"`
	Refunds RefundStats `json:"refunds"`
	// RevenueCents is the sum of the paid orders' amounts.
	RevenueCents int64  `json:"revenue_cents"`
	Currency     string `json:"currency"`
	// SoldOutAt is when a claim was first refused as sold out; null while
	// units remain. TimeToSellOutSeconds counts from the sale's start.
	SoldOutAt            *time.Time `json:"sold_out_at"`
	TimeToSellOutSeconds *float64   `json:"time_to_sell_out_seconds"`
}

// ClaimStats counts claim answers. The API processes add their counts
// about once a second, so the last second may be missing.
type ClaimStats struct {
	Total    int64 `json:"total"`
	Admitted int64 `json:"admitted"`
	// Rejected is keyed by the API's error code (SOLD_OUT,
	// ALREADY_CLAIMED, SALE_NOT_STARTED, SALE_ENDED, RATE_LIMITED,
	// UNAVAILABLE, INVALID_REQUEST).
	Rejected map[Code]int64 `json:"rejected"`
	// Replayed counts repeats answered from an Idempotency-Key's record.
	Replayed int64 `json:"replayed"`
}

// OrderStats counts the sale's orders by status, read from the database.
type OrderStats struct {
	Total           int64                 `json:"total"`
	Queued          int64                 `json:"queued"`
	AwaitingPayment int64                 `json:"awaiting_payment"`
	Paid            int64                 `json:"paid"`
	Closed          int64                 `json:"closed"`
	ClosedByReason  map[CloseReason]int64 `json:"closed_by_reason"`
}

// RefundStats counts the refunds of payments the sale could not honour.
type RefundStats struct {
	Pending     int64 `json:"pending"`
	Succeeded   int64 `json:"succeeded"`
	AmountCents int64 `json:"amount_cents"`
}
