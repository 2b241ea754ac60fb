package seckill

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// ShopEventType is the type of an order event sent to the shop
// (docs/API.md "Order events to the shop").
type ShopEventType string

// The order events, one per transition.
const (
	ShopOrderAwaitingPayment ShopEventType = "order.awaiting_payment"
	ShopOrderPaid            ShopEventType = "order.paid"
	ShopOrderClosed          ShopEventType = "order.closed"
	ShopOrderRefunded        ShopEventType = "order.refunded"
)

// ShopEventTypes lists every type, in the order an order's life meets them.
var ShopEventTypes = []ShopEventType{ShopOrderAwaitingPayment, ShopOrderPaid, ShopOrderClosed, ShopOrderRefunded}

// Temporal names of the delivery of order events: one ShopEvents workflow
// per order ("shop-events-<order id>"), told each event by the signal
// ShopEventSignal.
const (
	ShopEventsWorkflow = "ShopEvents"
	ShopEventSignal    = "shop-event"
)

// ShopEventsWorkflowID is the ID of orderID's ShopEvents workflow.
func ShopEventsWorkflowID(orderID int64) string {
	return "shop-events-" + strconv.FormatInt(orderID, 10)
}

// ShopEvent is one order event for the shop. ID is the webhook-id: stable
// per order and type, so a receiver drops repeats by it.
type ShopEvent struct {
	ID      string        `json:"id"`
	OrderID int64         `json:"order_id"`
	Type    ShopEventType `json:"type"`
	// At is when the transition happened (the body's timestamp).
	At    time.Time `json:"at"`
	Order OrderJSON `json:"order"`
	// Redelivery marks an event an operator sent again (seckill events
	// redeliver): it goes out even if this run of the delivery has sent
	// its id before.
	Redelivery bool `json:"redelivery,omitempty"`
}

// ShopEventID is the webhook-id of orderID's event of type typ:
// "evt_<order id>_<type without order.>", e.g. evt_2124661271446081536_paid.
func ShopEventID(orderID int64, typ ShopEventType) string {
	return "evt_" + strconv.FormatInt(orderID, 10) + "_" + strings.TrimPrefix(string(typ), "order.")
}

// NewShopEvent is the event of type typ for o as it stands now.
func NewShopEvent(o *Order, typ ShopEventType, at time.Time) ShopEvent {
	return ShopEvent{ID: ShopEventID(o.ID, typ), OrderID: o.ID, Type: typ, At: at.UTC(), Order: o.JSON()}
}

// ShopEventOf is the event o's current state announces: AWAITING_PAYMENT,
// PAID and CLOSED each have one; QUEUED has none.
func ShopEventOf(o *Order) (ShopEventType, bool) {
	switch o.Status {
	case StatusAwaitingPayment:
		return ShopOrderAwaitingPayment, true
	case StatusPaid:
		return ShopOrderPaid, true
	case StatusClosed:
		return ShopOrderClosed, true
	}
	return "", false
}

// Body is the JSON the shop receives: {"type", "timestamp", "data"}, data
// being the order as GET /orders/{id} shows it to an admin.
func (e ShopEvent) Body() ([]byte, error) {
	return json.Marshal(struct {
		Type      ShopEventType `json:"type"`
		Timestamp time.Time     `json:"timestamp"`
		Data      OrderJSON     `json:"data"`
	}{e.Type, e.At.UTC(), e.Order})
}

// ShopEventsInput starts an order's ShopEvents workflow.
type ShopEventsInput struct {
	OrderID int64 `json:"order_id"`
	// RetryFor is how long one event is retried before it is kept as
	// undelivered (DefaultShopEventRetryFor when zero).
	RetryFor time.Duration `json:"retry_for"`
}

// DefaultShopEventRetryFor is how long a delivery is retried: docs/API.md
// asks for at least 3 days.
const DefaultShopEventRetryFor = 3*24*time.Hour + time.Hour

// KeptShopEvent is an event whose delivery gave up, kept for `seckill
// events failed` and `redeliver`.
type KeptShopEvent struct {
	Event  ShopEvent
	Error  string
	KeptAt time.Time
}

// KeepShopEventsInput keeps events whose delivery gave up.
type KeepShopEventsInput struct {
	Events []ShopEvent `json:"events"`
	Error  string      `json:"error"`
}
