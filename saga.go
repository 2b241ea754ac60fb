package seckill

import "time"

// Activity inputs and results of the OrderSaga. One struct each, so fields
// can be added without breaking running histories.

// ConfirmPaymentInput makes the order PAID, and records EventID APPLIED
// in the same transaction.
type ConfirmPaymentInput struct {
	OrderID         int64
	EventID         string
	PaymentIntentID string
	PaidAt          time.Time
}

// ReleaseClaimInput is the Redis half of compensation.
type ReleaseClaimInput struct {
	SaleID  int64
	OrderID int64
	UserID  string
	// Item is the variant and the units the claim holds (zero: DefaultItem).
	Item Item
	// ReturnUnit gives the units back to the Redis counter; false only
	// forgets the claim (the database never had the units to give), but
	// for GiveBack units (an order the database refused as SOLD_OUT:
	// StartOrderResult.GiveBack).
	ReturnUnit bool
	GiveBack   int
}

// PaymentOutcomeInput records what a payment event did.
type PaymentOutcomeInput struct {
	EventID string
	Outcome PaymentOutcome
}

// RefundInput gives back the payment of one provider event.
type RefundInput struct {
	EventID         string
	OrderID         int64
	SaleID          int64
	UserID          string
	PaymentIntentID string
	AmountCents     int64
	Currency        string
	// Reason is why the payment was not honoured: LATE, DUPLICATE or MISMATCH.
	Reason PaymentOutcome
}

// StartOrderInput is the first step of a saga: write the admitted claim
// as an order and take its database unit, in one transaction.
type StartOrderInput struct {
	OrderID    int64
	SaleID     int64
	UserID     string
	AdmittedAt time.Time
	// PayBy fixed at admission; zero: AdmittedAt plus the sale's timeout.
	PayBy time.Time
	// Drawn: the sale's draw admitted this order (SagaInput.Drawn).
	Drawn bool
	// Item is the variant and the units the order locks (zero: DefaultItem).
	Item Item
}

// StartOrderResult is the order as it stands after the first step (new,
// or as an earlier run left it), and the payments that reached seckill
// before the saga ran, oldest first.
type StartOrderResult struct {
	Status      OrderStatus
	CloseReason CloseReason
	AmountCents int64
	Currency    string
	PayBy       time.Time
	// Payments recorded for the order that no saga has acted on yet.
	Payments []PaymentEvent
	// Handled are the ids of the order's payment events a saga has
	// already acted on (applied, refunded, recorded): a signal carrying one
	// of them again changes nothing.
	Handled []string
	// Intents is set when the payment provider makes a payment object per
	// order (Stripe): the saga then makes it once the order awaits payment
	// and cancels it before the unit is given back. Recorded with the
	// step, so a saga that ran without it replays without it.
	Intents bool
	// PaidWith is the PaymentIntent whose payment made the order PAID (a
	// PAID order only): another event of it reports the same payment.
	PaidWith string
	// Item is the variant and the units the order holds, as its row says
	// (zero in results recorded before v4: DefaultItem).
	Item Item
	// GiveBack: a SOLD_OUT order's units Redis may have back (Order.GiveBack).
	GiveBack int
}

// IntentInput asks for order OrderID's payment object, or for its
// cancellation (IntentID).
type IntentInput struct {
	OrderID     int64
	AmountCents int64
	Currency    string
	IntentID    string
}

// ReleaseOrderInput is compensation: close the order with Reason, give
// its database unit back, then forget the user's claim in Redis and give
// the unit back there.
type ReleaseOrderInput struct {
	OrderID int64
	SaleID  int64
	UserID  string
	// Item is the variant and the units the order holds (zero: DefaultItem).
	Item     Item
	Reason   CloseReason
	ClosedAt time.Time
	// EventID is the failed payment that closed the order, if any: it is
	// recorded APPLIED in the same transaction.
	EventID string
	// IntentID is the order's own PaymentIntent as the saga knows it (""
	// when it made none): a payment through it counts whenever it was
	// received, as the saga counts it.
	IntentID string
}

// OwnPaymentWait bounds a saga's wait for the event of a payment the
// order's own PaymentIntent took (the provider's answer to its cancel said
// it had succeeded): past it the order is paid from that answer, so a
// webhook endpoint not subscribed to the event, or a rotated webhook
// secret, never leaves a paid order AWAITING_PAYMENT for ever.
const OwnPaymentWait = 10 * time.Minute
