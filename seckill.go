// Package seckill is the domain of the flash-sale system: the names shared
// by the API, the relay, the workflow and the activities, the order and sale
// types, and the error codes of the public contract (docs/API.md).
//
// The packages below it do the work: lua/ (Redis admission), store/
// (Postgres), workflows/ and activities/ (the OrderSaga), relay/ (outbox to
// Temporal), api/ (HTTP), worker/ (Temporal worker), app/ (wiring) and
// cmd/seckill (the binary).
package seckill

import (
	"strconv"
	"time"
)

// Temporal names. Changing one breaks running workflows.
const (
	// DefaultTaskQueue is the task queue when TEMPORAL_TASK_QUEUE is unset.
	DefaultTaskQueue = "seckill-orders"
	// DefaultDrawTaskQueue is the task queue of the sale draws (SaleDraw and
	// its activities) when TEMPORAL_DRAW_TASK_QUEUE is unset: a queue of
	// their own, so a draw's next step does not wait behind the thousands of
	// sagas its own admissions start on DefaultTaskQueue (BENCHMARKS.md
	// "What limits the draw").
	DefaultDrawTaskQueue = "seckill-draws"
	// OrderSagaWorkflow is the workflow type of one admitted claim.
	OrderSagaWorkflow = "OrderSaga"
	// PaymentSignal carries a PaymentEvent from the webhook to the saga.
	PaymentSignal = "payment"
	// CancelSignal asks the saga to close an unpaid order (reason CANCELLED).
	CancelSignal = "cancel"
	// StatusQuery answers the saga's current OrderStatus.
	StatusQuery = "status"
	// SagaBaseChange is the workflow.GetVersion change id every supported
	// OrderSaga run records at version 1, as SagaBaseChange+"-1" in its
	// TemporalChangeVersion search attribute (payable at admission, local
	// activities). A run without it started on the retired saga of earlier
	// releases, which today's worker refuses to replay.
	SagaBaseChange = "payable-at-admission"
)

// Memo fields of an OrderSaga, set when the order starts waiting for
// payment, so the Temporal UI shows what the buyer owes and until when.
const (
	MemoAmountCents = "amount_cents"
	MemoCurrency    = "currency"
	MemoPayBy       = "pay_by" // RFC 3339, UTC
)

// Metrics the saga counts through the workflow's replay-safe metrics
// handler; Prometheus shows them with a _total suffix.
const (
	// MetricSagaOutcomes counts finished sagas by status and reason.
	MetricSagaOutcomes = "seckill_saga_outcomes"
	// MetricSagaCompensations counts sagas that gave their unit back, by
	// reason (PAYMENT_TIMEOUT, CANCELLED, PAYMENT_FAILED).
	MetricSagaCompensations = "seckill_saga_compensations"
)

// OrderWorkflowID is the workflow ID of the saga of order id. Deterministic,
// so a retried start after an ambiguous error finds the same workflow.
func OrderWorkflowID(orderID int64) string {
	return "order-" + strconv.FormatInt(orderID, 10)
}

// SagaInput starts an OrderSaga. One struct, so fields can be added without
// breaking running histories.
type SagaInput struct {
	OrderID int64
	SaleID  int64
	UserID  string
	// AdmittedAt is when the Lua admission accepted the claim (Redis time).
	AdmittedAt time.Time
	// PayBy is the payment deadline fixed at admission (AdmittedAt plus
	// the sale's payment timeout), told to the buyer in the 202. The saga
	// waits until then however late it starts. Zero in inputs written
	// before payable-at-admission: the saga then derives it from
	// AdmittedAt and the sale.
	PayBy time.Time
	// AmountCents and Currency are what the buyer owes (the sale's price
	// at admission), shown in the saga's memo.
	AmountCents int64
	Currency    string
	// Item is the variant and the units the order holds; the zero Item
	// (inputs written before v4) is DefaultItem (Item.OrDefault).
	Item Item
	// Drawn marks an admission of the sale's draw (docs/API.md "Fair
	// start"): the order row records it, so the audit can hold the draw's
	// record of each entrant to the orders (invariant 9). False in inputs
	// written before it.
	Drawn bool
}

// SagaResult is how an OrderSaga ended.
type SagaResult struct {
	Status      OrderStatus
	CloseReason CloseReason
}

// PaymentEventType is the type of a payment provider event seckill acts on.
type PaymentEventType string

// The Stripe event types seckill handles; others are recorded and ignored.
const (
	PaymentSucceeded PaymentEventType = "payment_intent.succeeded"
	PaymentFailed    PaymentEventType = "payment_intent.payment_failed"
)

// PaymentEvent is a verified, recorded provider event for one order, as the
// webhook signals it to the order's saga.
type PaymentEvent struct {
	EventID         string
	Type            PaymentEventType
	PaymentIntentID string
	AmountCents     int64
	Currency        string
	// ReceivedAt is when seckill recorded the event (the webhook's row).
	// A payment counts when it was received by the order's pay_by,
	// whenever the saga gets to it. Zero in signals sent before
	// payable-at-admission.
	ReceivedAt time.Time
}

// InTime reports whether ev reached seckill by payBy. An event without a
// receipt time (an older signal) counts as in time: it is judged by when
// the saga sees it, as before.
func (ev PaymentEvent) InTime(payBy time.Time) bool {
	return ev.ReceivedAt.IsZero() || !ev.ReceivedAt.After(payBy)
}

// PaymentOutcome records what a payment event did, for operators.
type PaymentOutcome string

// Payment outcomes, stored on the payment_events row.
const (
	OutcomeReceived     PaymentOutcome = "RECEIVED"      // recorded, not yet delivered
	OutcomeDelivered    PaymentOutcome = "DELIVERED"     // signalled to a running saga
	OutcomeApplied      PaymentOutcome = "APPLIED"       // changed the order
	OutcomeDuplicate    PaymentOutcome = "DUPLICATE"     // order already decided by another event
	OutcomeLate         PaymentOutcome = "LATE"          // order already CLOSED
	OutcomeMismatch     PaymentOutcome = "MISMATCH"      // amount or currency differ from the order
	OutcomeUnknownOrder PaymentOutcome = "UNKNOWN_ORDER" // no such order (refunded when it names one: it can never be honoured)
	OutcomeIgnored      PaymentOutcome = "IGNORED"       // event type seckill does not handle
)

// RefundWorkflow gives back one payment that seckill could not honour,
// started by the webhook when the order's saga has already ended.
const RefundWorkflow = "PaymentRefund"

// RefundWorkflowID is the workflow ID of the refund of provider event id:
// one refund per event, however often the event is delivered.
func RefundWorkflowID(eventID string) string { return "refund-" + eventID }

// Reconciliation names.
const (
	// ReconcileWorkflow runs one reconciliation pass over every settling sale.
	ReconcileWorkflow = "Reconcile"
	// ReconcileActivity is the activity doing the pass.
	ReconcileActivity = "ReconcileAll"
	// ReconcileScheduleID is the Temporal Schedule running it every minute.
	ReconcileScheduleID = "seckill-reconcile"
)

// Drift kinds found by reconciliation.
const (
	DriftClaimWithoutSaga        = "claim_without_saga"
	DriftOrderWithoutSaga        = "order_without_saga"
	DriftSagaEndedOrderUnsettled = "saga_ended_order_unsettled"
	DriftRedisAboveDB            = "redis_above_db"
	DriftPaymentUndelivered      = "payment_undelivered"
	DriftStaleClaim              = "stale_claim"
	DriftClaimMissing            = "claim_missing"
	// DriftStockWhileWaiting: units sat in a sale's stock while buyers
	// waited on its waitlist; they are handed to the waitlist.
	DriftStockWhileWaiting = "stock_while_waiting"
	// DriftMoveUnfinished: units moving between the segments of a sale's
	// stock were left in flight by a mover that stopped; they are landed.
	DriftMoveUnfinished = "move_unfinished"
	// DriftRestockUnapplied: a restock the database counts whose Redis
	// half never finished (the process stopped between the halves and
	// the admin did not retry); it is applied.
	DriftRestockUnapplied = "restock_unapplied"
	// DriftCheckFailed: checking or fixing one order (or one sale) failed;
	// the pass went on with the others and the next pass tries again.
	DriftCheckFailed = "check_failed"
)

// DriftKinds lists every drift kind.
var DriftKinds = []string{
	DriftClaimWithoutSaga, DriftOrderWithoutSaga, DriftSagaEndedOrderUnsettled, DriftRedisAboveDB,
	DriftPaymentUndelivered, DriftStaleClaim, DriftClaimMissing, DriftStockWhileWaiting, DriftMoveUnfinished,
	DriftRestockUnapplied, DriftCheckFailed,
}

// Drift is one disagreement between Redis, Postgres and Temporal.
type Drift struct {
	Kind    string `json:"kind"`
	SaleID  int64  `json:"sale_id"`
	OrderID int64  `json:"order_id,omitempty"`
	Detail  string `json:"detail"`
	Fixed   bool   `json:"fixed"`
}
