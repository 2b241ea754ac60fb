package seckill

import (
	"strconv"
	"time"
)

// OrderStatus is the life stage of an order. Only CLOSED is not "active".
type OrderStatus string

// Order statuses of docs/API.md.
const (
	StatusQueued          OrderStatus = "QUEUED"
	StatusAwaitingPayment OrderStatus = "AWAITING_PAYMENT"
	StatusPaid            OrderStatus = "PAID"
	StatusClosed          OrderStatus = "CLOSED"
)

// Terminal reports whether no further transition can happen.
func (s OrderStatus) Terminal() bool { return s == StatusPaid || s == StatusClosed }

// CloseReason says why an order was closed.
type CloseReason string

// Close reasons of docs/API.md.
const (
	ClosePaymentTimeout CloseReason = "PAYMENT_TIMEOUT"
	CloseCancelled      CloseReason = "CANCELLED"
	ClosePaymentFailed  CloseReason = "PAYMENT_FAILED"
	CloseSoldOut        CloseReason = "SOLD_OUT"

	// CloseSecondActiveOrder closes an order refused because its buyer
	// already held an active order of the sale (Redis admitted it after
	// losing the first claim). docs/API.md v3 lists no reason of its own
	// for this, so it reads CANCELLED on the wire; the name says what it
	// is wherever the code decides it.
	CloseSecondActiveOrder = CloseCancelled
)

// Refund statuses (docs/API.md's refund.status).
const (
	RefundPending   = "PENDING"
	RefundSucceeded = "SUCCEEDED"
)

// Refund is a payment taken for an order that could not be honoured.
type Refund struct {
	Status      string `json:"status"`
	AmountCents int64  `json:"amount_cents"`
}

// Order is the order object of docs/API.md.
type Order struct {
	ID     int64
	SaleID int64
	UserID string
	// Item is the variant and the units the order holds.
	Item Item
	// GiveBack is, for an order the database refused as SOLD_OUT, how many
	// of its units Redis may have back (migrations/00016); 0 otherwise.
	GiveBack    int
	Status      OrderStatus
	CloseReason CloseReason
	AmountCents int64
	Currency    string
	PayBy       *time.Time
	CreatedAt   time.Time
	PaidAt      *time.Time
	ClosedAt    *time.Time
	Refund      *Refund
	// Payment is the provider's payment object for the order (a provider
	// other than dev), nil until one is made.
	Payment *Intent
	// PaidWith is the PaymentIntent whose payment made the order PAID
	// ("" until then): another event of the same PaymentIntent reports
	// the same payment, not a second one.
	PaidWith string
	// TraceParent is the W3C traceparent of the order's saga when it was
	// traced, "" otherwise: a payment webhook's span links to it.
	TraceParent string
	// Drawn: the sale's draw admitted the order (SagaInput.Drawn), so a
	// saga the API starts for it (an early cancel) writes it as the
	// draw's. Not on the wire: docs/API.md's order object has no such
	// field.
	Drawn bool
}

// OrderJSON is the wire form of an Order: IDs as strings, times in UTC.
type OrderJSON struct {
	OrderID     string       `json:"order_id"`
	SaleID      string       `json:"sale_id"`
	UserID      string       `json:"user_id"`
	SKU         string       `json:"sku"`
	Quantity    int          `json:"quantity"`
	Status      OrderStatus  `json:"status"`
	CloseReason *CloseReason `json:"close_reason"`
	AmountCents int64        `json:"amount_cents"`
	Currency    string       `json:"currency"`
	PayBy       *time.Time   `json:"pay_by"`
	CreatedAt   time.Time    `json:"created_at"`
	PaidAt      *time.Time   `json:"paid_at"`
	ClosedAt    *time.Time   `json:"closed_at"`
	Refund      *Refund      `json:"refund"`
	// Payment is set when the provider made a payment object for the
	// order; ClientSecret only in its owner's view (OwnerView).
	Payment *PaymentJSON `json:"payment,omitempty"`
}

// PaymentJSON is an order's payment object as docs/API.md shows it.
type PaymentJSON struct {
	Provider        string `json:"provider"`
	PaymentIntentID string `json:"payment_intent_id"`
	ClientSecret    string `json:"client_secret,omitempty"`
}

// JSON returns the wire form of o.
func (o *Order) JSON() OrderJSON {
	j := OrderJSON{
		OrderID:     strconv.FormatInt(o.ID, 10),
		SaleID:      strconv.FormatInt(o.SaleID, 10),
		UserID:      o.UserID,
		SKU:         o.Item.OrDefault().SKU,
		Quantity:    o.Item.OrDefault().Quantity,
		Status:      o.Status,
		AmountCents: o.AmountCents,
		Currency:    o.Currency,
		PayBy:       utc(o.PayBy),
		CreatedAt:   o.CreatedAt.UTC(),
		PaidAt:      utc(o.PaidAt),
		ClosedAt:    utc(o.ClosedAt),
		Refund:      o.Refund,
	}
	if o.Payment != nil {
		j.Payment = &PaymentJSON{Provider: o.Payment.Provider, PaymentIntentID: o.Payment.ID}
	}
	if o.CloseReason != "" {
		r := o.CloseReason
		j.CloseReason = &r
	}
	return j
}

// OwnerView is o's wire form for its owner: with the client secret the
// provider's checkout needs.
func (o *Order) OwnerView() OrderJSON {
	j := o.JSON()
	if j.Payment != nil {
		j.Payment.ClientSecret = o.Payment.ClientSecret
	}
	return j
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
