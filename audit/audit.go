// Package audit checks the invariants of docs/DESIGN.md for one
// sale, from the outside: it reads Postgres, Redis and Temporal and reports
// every violation it finds. `seckill audit` and the tests use it.
package audit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/saga"
)

// Check is one invariant's result.
type Check struct {
	Invariant int    `json:"invariant"`
	Name      string `json:"name"`
	OK        bool   `json:"ok"`
	// Violations name what breaks the invariant (empty when OK).
	Violations []string `json:"violations,omitempty"`
}

// Report is the audit of one sale.
type Report struct {
	SaleID int64          `json:"sale_id,string"` // a string, as every ID in the API
	AtRest bool           `json:"at_rest"`
	Stock  seckill.Stock  `json:"stock"`
	Orders map[string]int `json:"orders"`
	// Waiting is the length of the sale's waitlist (Redis).
	Waiting int64 `json:"waiting"`
	// PaymentsHeld counts the payments for an order never written that
	// delivery still holds (within Options.Hold of the
	// admission, its saga may yet start); the sale is not at rest while
	// any is held.
	PaymentsHeld int     `json:"payments_held"`
	Checks       []Check `json:"checks"`
}

// OK reports whether every check passed.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Options tune the audit.
type Options struct {
	// Grace is how long past its deadline an order may take to settle, and
	// a claim to reach its saga, before it counts as stuck [60s].
	Grace time.Duration
	// Hold is how long delivery holds a payment for an order never
	// written (SECKILL_PAYMENT_HOLD) [delivery.PendingWindow].
	Hold time.Duration
}

// Auditor reads the three stores. Sagas may be nil: sagas are then not
// checked (claims without an order row, unsettled orders).
type Auditor struct {
	DB    *gorm.DB
	Redis *redisstore.Store
	Sagas *saga.Client
}

type orderRow struct {
	ID              int64
	UserID          string
	Status          string
	CloseReason     *string
	StockLocked     bool
	PayBy           *time.Time
	CreatedAt       time.Time
	PaymentIntentID *string
	// HasIntent: the provider made a payment object for the order.
	HasIntent bool
}

// eventRow is a successful payment event with what became of it: its
// order (Status "" when the order has no row) and its refund.
type eventRow struct {
	ID              string
	OrderID         int64
	PaymentIntentID *string
	AmountCents     int64
	Currency        string
	Outcome         string
	ReceivedAt      time.Time
	RefundStatus    *string
	Status          string
	CloseReason     *string
	PayBy           *time.Time
	ClosedAt        *time.Time
	AwaitingAt      *time.Time
	OrderAmount     int64
	OrderCurrency   string
	PaidWith        *string
}

// Run audits sale saleID at now.
func (a *Auditor) Run(ctx context.Context, saleID int64, opts Options) (*Report, error) {
	if opts.Hold <= 0 {
		opts.Hold = delivery.PendingWindow
	}
	if opts.Grace <= 0 {
		opts.Grace = 60 * time.Second
	}
	now := time.Now()
	rep := &Report{SaleID: saleID, Orders: map[string]int{}}

	// Postgres.
	var sale struct {
		Total, Available, Locked, Sold int64
		PaymentTimeoutSeconds          int64
		EndsAt                         time.Time
		StockSegments                  int
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT total, available, locked, sold, payment_timeout_seconds, ends_at, stock_segments FROM sales WHERE id = ?`, saleID).
		Scan(&sale).Error; err != nil {
		return nil, fmt.Errorf("read sale: %w", err)
	}
	if sale.Total == 0 {
		return nil, fmt.Errorf("sale %d: %w", saleID, seckill.ErrNotFound)
	}
	a.Redis.KnowSegments(saleID, sale.StockSegments)
	var orders []orderRow
	if err := a.DB.WithContext(ctx).Raw(`SELECT id, user_id, status, close_reason, stock_locked, pay_by, created_at, payment_intent_id,
			EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.order_id = orders.id) AS has_intent
		FROM orders WHERE sale_id = ?`, saleID).Scan(&orders).Error; err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	// Every successful payment of the sale's orders, and every one naming
	// an order that has no row (no sale's orders lead to those: each
	// sale's audit reports them).
	var events []eventRow
	if err := a.DB.WithContext(ctx).Raw(`SELECT e.id, e.order_id, e.payment_intent_id, e.amount_cents, e.currency, e.outcome, e.received_at,
			r.status AS refund_status, COALESCE(o.status, '') AS status, o.close_reason, o.pay_by, o.closed_at, o.awaiting_at,
			COALESCE(o.amount_cents, 0) AS order_amount, COALESCE(o.currency, '') AS order_currency, o.payment_intent_id AS paid_with
		FROM payment_events e LEFT JOIN orders o ON o.id = e.order_id
		LEFT JOIN refunds r ON r.event_id = e.id
		WHERE e.type = ? AND e.order_id IS NOT NULL AND (o.sale_id = ? OR o.id IS NULL)`,
		string(seckill.PaymentSucceeded), saleID).Scan(&events).Error; err != nil {
		return nil, fmt.Errorf("read payment events: %w", err)
	}

	// Redis.
	remaining, warmed, err := a.Redis.Remaining(ctx, saleID)
	if err != nil {
		return nil, err
	}
	claims, err := a.Redis.Claims(ctx, saleID)
	if err != nil {
		return nil, err
	}
	outboxLen, err := a.Redis.OutboxBacklog(ctx, []int64{saleID})
	if err != nil {
		return nil, err
	}
	counts, err := a.Redis.Counts(ctx, []int64{saleID})
	if err != nil {
		return nil, err
	}
	rep.Waiting = counts[saleID].Waiting

	rep.Stock = seckill.Stock{Total: sale.Total, Remaining: remaining, Available: sale.Available, Locked: sale.Locked, Sold: sale.Sold}
	byID := map[int64]orderRow{}
	active := map[string][]int64{}
	var paid, holding int64
	queued := 0
	for _, o := range orders {
		rep.Orders[o.Status]++
		byID[o.ID] = o
		if o.Status != string(seckill.StatusClosed) {
			active[o.UserID] = append(active[o.UserID], o.ID)
		}
		if o.Status == string(seckill.StatusPaid) {
			paid++
		}
		if o.StockLocked {
			holding++
		}
		if o.Status == string(seckill.StatusQueued) {
			queued++
		}
	}
	// At rest: nothing admitted waits for its saga, nothing written waits
	// for its unit, and Redis' claims are exactly the active orders.
	claimsMatch := len(claims) == len(active)
	for user, ids := range active {
		if claims[user] != ids[0] {
			claimsMatch = false
		}
	}
	rep.AtRest = warmed && outboxLen == 0 && queued == 0 && claimsMatch

	// 1. No oversell.
	c1 := Check{Invariant: 1, Name: "no oversell: sold+locked <= total, total = available+locked+sold, counts match orders"}
	if sale.Sold+sale.Locked > sale.Total {
		c1.Violations = append(c1.Violations, fmt.Sprintf("sold %d + locked %d > total %d", sale.Sold, sale.Locked, sale.Total))
	}
	if sale.Available+sale.Locked+sale.Sold != sale.Total {
		c1.Violations = append(c1.Violations, fmt.Sprintf("available %d + locked %d + sold %d != total %d", sale.Available, sale.Locked, sale.Sold, sale.Total))
	}
	if paid != sale.Sold {
		c1.Violations = append(c1.Violations, fmt.Sprintf("%d PAID orders but sold = %d", paid, sale.Sold))
	}
	if holding != sale.Locked {
		c1.Violations = append(c1.Violations, fmt.Sprintf("%d orders hold a unit but locked = %d", holding, sale.Locked))
	}
	rep.Checks = append(rep.Checks, finish(c1))

	// 2. At rest, Redis remaining (stocks and units in flight between
	// segments, each once) == DB available.
	c2 := Check{Invariant: 2, Name: "at rest: Redis remaining == DB available"}
	switch {
	case !warmed:
		c2.Violations = append(c2.Violations, "the sale is not loaded in Redis (the worker's re-warmer loads an open sale within SECKILL_REWARM_EVERY + 5 s; is a worker running on this REDIS_URL and SECKILL_REDIS_PREFIX?)")
	case rep.AtRest && remaining != sale.Available:
		c2.Violations = append(c2.Violations, fmt.Sprintf("remaining %d != available %d", remaining, sale.Available))
	case !rep.AtRest:
		c2.Violations = append(c2.Violations, fmt.Sprintf("not at rest: %d outbox entries, %d QUEUED orders, claims match orders: %v",
			outboxLen, queued, claimsMatch))
	}
	rep.Checks = append(rep.Checks, finish(c2))

	// 3. One active order per user.
	c3 := Check{Invariant: 3, Name: "one active order per (sale, user)"}
	for user, ids := range active {
		if len(ids) > 1 {
			c3.Violations = append(c3.Violations, fmt.Sprintf("user %s has %d active orders %v", user, len(ids), ids))
		}
	}
	rep.Checks = append(rep.Checks, finish(c3))

	// 4. Every admitted claim ends PAID or CLOSED in time; no orphans.
	c4 := Check{Invariant: 4, Name: "every claim reaches a saga and a terminal state in time"}
	timeout := time.Duration(sale.PaymentTimeoutSeconds) * time.Second
	for _, o := range orders {
		switch o.Status {
		case string(seckill.StatusQueued):
			if now.Sub(o.CreatedAt) > opts.Grace {
				c4.Violations = append(c4.Violations, fmt.Sprintf("order %d QUEUED since %s", o.ID, o.CreatedAt.Format(time.RFC3339)))
			}
		case string(seckill.StatusAwaitingPayment):
			late := opts.Grace
			if o.HasIntent {
				// Its saga may be waiting for the event of a payment the
				// PaymentIntent took before its cancel (seckill.OwnPaymentWait).
				late += seckill.OwnPaymentWait
			}
			if o.PayBy != nil && now.Sub(*o.PayBy) > late {
				c4.Violations = append(c4.Violations, fmt.Sprintf("order %d AWAITING_PAYMENT %s past its deadline", o.ID, now.Sub(*o.PayBy).Round(time.Second)))
			}
		default:
			continue
		}
		// An unsettled order needs a running saga, or nothing will ever
		// settle it (a saga cancelled, terminated or failed half way).
		if a.Sagas == nil {
			continue
		}
		run, err := a.Sagas.Describe(ctx, o.ID)
		if err != nil {
			return nil, err
		}
		if run.Running {
			continue
		}
		var status string
		if err := a.DB.WithContext(ctx).Raw(`SELECT status FROM orders WHERE id = ?`, o.ID).Scan(&status).Error; err != nil {
			return nil, fmt.Errorf("reread order %d: %w", o.ID, err)
		}
		if status != string(seckill.StatusPaid) && status != string(seckill.StatusClosed) { // not forgotten meanwhile
			c4.Violations = append(c4.Violations, fmt.Sprintf("order %d is %s with no running saga (%s)", o.ID, status, run.State()))
		}
	}
	for user, id := range claims {
		if id == 0 {
			c4.Violations = append(c4.Violations, fmt.Sprintf("claim of %s names no order", user))
			continue
		}
		if _, ok := byID[id]; ok {
			continue
		}
		// Admitted, no row yet: its saga must run (or the claim is young).
		if a.Sagas != nil {
			run, err := a.Sagas.Describe(ctx, id)
			if err != nil {
				return nil, err
			}
			if !run.Running && now.Sub(idgen.Time(id)) > opts.Grace {
				c4.Violations = append(c4.Violations, fmt.Sprintf("claim of %s (order %d) has no running saga after %s", user, id, now.Sub(idgen.Time(id)).Round(time.Second)))
			}
		}
	}
	// A drawn sale's winners (and the queued entrants the waitlist
	// served) were told their order: each must exist, or still be
	// admitted in Redis on its way to its saga (checked above).
	var lost []struct {
		Rank    int
		UserID  string
		OrderID int64
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT e.rank, e.user_id, e.order_id FROM lobby_entries e
		LEFT JOIN orders o ON o.id = e.order_id
		WHERE e.sale_id = ? AND e.order_id IS NOT NULL AND o.id IS NULL ORDER BY e.rank`, saleID).Scan(&lost).Error; err != nil {
		return nil, fmt.Errorf("read the draw's entries: %w", err)
	}
	for _, e := range lost {
		if claims[e.UserID] != e.OrderID && now.Sub(idgen.Time(e.OrderID)) > opts.Grace {
			c4.Violations = append(c4.Violations, fmt.Sprintf("draw rank %d (%s) was given order %d, which has neither a row nor an admission", e.Rank, e.UserID, e.OrderID))
		}
	}
	rep.Checks = append(rep.Checks, finish(c4))

	// 5. Every successful payment ends as a PAID order or a refund,
	// checked from the payment events, whether or not the order has a row.
	c5 := Check{Invariant: 5, Name: "every successful payment ends as a PAID order or a refund (from the payment events)"}
	for _, e := range events {
		refunded := e.RefundStatus != nil && *e.RefundStatus == seckill.RefundSucceeded
		appliedHere := e.Status == string(seckill.StatusPaid) && e.PaidWith != nil && e.PaymentIntentID != nil && *e.PaidWith == *e.PaymentIntentID
		order := fmt.Sprintf("order %d (%s)", e.OrderID, e.Status)
		if e.Status == "" {
			order = fmt.Sprintf("order %d (never written)", e.OrderID)
		}
		age := now.Sub(e.ReceivedAt)
		switch {
		case appliedHere && refunded:
			c5.Violations = append(c5.Violations, fmt.Sprintf("event %s both paid %s and was refunded", e.ID, order))
		case appliedHere || refunded:
		case e.Status == "" && e.Outcome == string(seckill.OutcomeReceived) && held(e.OrderID, now, opts):
			// Held by delivery: refunded once the window has passed.
			rep.PaymentsHeld++
		case e.Outcome == string(seckill.OutcomeReceived) && age > opts.Grace:
			c5.Violations = append(c5.Violations, fmt.Sprintf("event %s for %s still RECEIVED after %s: never delivered", e.ID, order, age.Round(time.Second)))
		case age <= opts.Grace+timeout && (e.RefundStatus != nil ||
			e.Outcome == string(seckill.OutcomeDelivered) && e.Status != string(seckill.StatusClosed) && e.Status != string(seckill.StatusPaid)):
			// Still in flight: its refund is under way, or its order undecided.
		case age <= opts.Grace:
		default:
			c5.Violations = append(c5.Violations, fmt.Sprintf("event %s (outcome %s) for %s: neither paid nor refunded", e.ID, e.Outcome, order))
		}
	}
	rep.Checks = append(rep.Checks, finish(c5))
	rep.AtRest = rep.AtRest && rep.PaymentsHeld == 0

	// 6. Compensation never creates stock: Redis never above the database.
	c6 := Check{Invariant: 6, Name: "Redis never holds stock the database lacks"}
	if warmed && remaining > sale.Available {
		c6.Violations = append(c6.Violations, fmt.Sprintf("remaining %d > available %d", remaining, sale.Available))
	}
	if remaining < 0 {
		c6.Violations = append(c6.Violations, fmt.Sprintf("remaining %d < 0", remaining))
	}
	rep.Checks = append(rep.Checks, finish(c6))

	// 7. A unit is counted once wherever it is, and none is stranded: no
	// move between segments left half done past the grace (Remaining counts
	// one that is once; a mover that stopped leaves it for reconciliation
	// to finish), no unit in a stock while buyers wait for one.
	c7 := Check{Invariant: 7, Name: "no unit stranded between segments, moves and the waitlist"}
	moves, err := a.Redis.Moves(ctx, saleID)
	if err != nil {
		return nil, err
	}
	for _, m := range moves {
		if age := now.Sub(m.At); age > opts.Grace {
			state := "in flight to segment " + fmt.Sprint(m.Dest)
			switch {
			case m.Dest < 0:
				state = "released and not aimed"
			case m.Given:
				state = fmt.Sprintf("given to segment %d, not forgotten", m.Dest)
			}
			c7.Violations = append(c7.Violations, fmt.Sprintf("move %s of %d units from segment %d %s for %s", m.ID, m.Units, m.From, state, age.Round(time.Second)))
		}
	}
	if rep.AtRest && remaining > 0 && rep.Waiting > 0 && now.Before(sale.EndsAt) {
		c7.Violations = append(c7.Violations, fmt.Sprintf("%d units in stock while %d buyers wait", remaining, rep.Waiting))
	}
	rep.Checks = append(rep.Checks, finish(c7))

	// 8. A payment counts when seckill received it: one received by
	// pay_by (and before its order closed), for the order's amount, makes
	// the order PAID however late its signal came. An order that never held a unit (refused: SOLD_OUT,
	// or a second active order of its buyer) cannot be paid: its payment
	// is refunded, and invariant 5 checks that.
	c8 := Check{Invariant: 8, Name: "a payment received by pay_by makes its order PAID"}
	for _, e := range events {
		// Received by pay_by and before the order closed (a buyer who paid
		// after cancelling pays for a unit given back: refunded).
		inTime := e.PayBy != nil && !e.ReceivedAt.After(*e.PayBy) && e.AmountCents == e.OrderAmount && e.Currency == e.OrderCurrency &&
			(e.ClosedAt == nil || e.ReceivedAt.Before(*e.ClosedAt))
		heldUnit := e.AwaitingAt != nil && (e.CloseReason == nil || *e.CloseReason != string(seckill.CloseSoldOut))
		if inTime && heldUnit && e.Status == string(seckill.StatusClosed) {
			c8.Violations = append(c8.Violations, fmt.Sprintf("event %s received %s, by pay_by %s, but order %d closed as %s",
				e.ID, e.ReceivedAt.UTC().Format(time.RFC3339Nano), e.PayBy.UTC().Format(time.RFC3339Nano), e.OrderID, deref(e.CloseReason)))
		}
	}
	rep.Checks = append(rep.Checks, finish(c8))

	c9, err := a.drawToldTheTruth(ctx, saleID)
	if err != nil {
		return nil, err
	}
	rep.Checks = append(rep.Checks, finish(c9))
	return rep, nil
}

// drawToldTheTruth checks invariant 9 on a sale whose draw is done: every
// entrant told WON names an order, and every order the draw admitted
// (orders.drawn) is the one its buyer's entry names, as WON (or WAITING,
// for an entrant the waitlist served at once), never held by an entrant
// told LOST, or by nobody the draw recorded. While the draw runs, the
// batch being settled holds admissions not yet recorded: not checked.
func (a *Auditor) drawToldTheTruth(ctx context.Context, saleID int64) (Check, error) {
	c := Check{Invariant: 9, Name: "what the draw tells an entrant is true (WON holds its order, LOST and WAITING hold no order of the draw's)"}
	var state *string
	if err := a.DB.WithContext(ctx).Raw(`SELECT draw_state FROM sales WHERE id = ?`, saleID).Scan(&state).Error; err != nil {
		return c, fmt.Errorf("read the draw's state: %w", err)
	}
	if state == nil || *state != "DONE" {
		return c, nil
	}
	var wonEmpty []struct {
		Rank   int
		UserID string
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT rank, user_id FROM lobby_entries
		WHERE sale_id = ? AND outcome = 'WON' AND order_id IS NULL ORDER BY rank`, saleID).Scan(&wonEmpty).Error; err != nil {
		return c, fmt.Errorf("read the draw's winners: %w", err)
	}
	for _, e := range wonEmpty {
		c.Violations = append(c.Violations, fmt.Sprintf("draw rank %d (%s) is told WON with no order", e.Rank, e.UserID))
	}
	var othersOrder []struct {
		Rank    int
		UserID  string
		OrderID int64
		Holder  string
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT e.rank, e.user_id, e.order_id, o.user_id AS holder FROM lobby_entries e
		JOIN orders o ON o.id = e.order_id
		WHERE e.sale_id = ? AND (o.user_id <> e.user_id OR o.sale_id <> e.sale_id) ORDER BY e.rank`, saleID).Scan(&othersOrder).Error; err != nil {
		return c, fmt.Errorf("read the draw's orders by holder: %w", err)
	}
	for _, e := range othersOrder {
		c.Violations = append(c.Violations, fmt.Sprintf("draw rank %d (%s) is told order %d, which is %s's", e.Rank, e.UserID, e.OrderID, e.Holder))
	}
	var misinformed []struct {
		OrderID int64
		UserID  string
		Rank    *int
		Outcome *string
		Told    *int64
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT o.id AS order_id, o.user_id, e.rank, e.outcome, e.order_id AS told FROM orders o
		LEFT JOIN lobby_entries e ON e.sale_id = o.sale_id AND e.user_id = o.user_id
		WHERE o.sale_id = ? AND o.drawn
		  AND (e.user_id IS NULL OR e.order_id IS DISTINCT FROM o.id OR e.outcome NOT IN ('WON', 'WAITING'))
		ORDER BY o.id`, saleID).Scan(&misinformed).Error; err != nil {
		return c, fmt.Errorf("read the draw's orders: %w", err)
	}
	for _, m := range misinformed {
		if m.Rank == nil {
			c.Violations = append(c.Violations, fmt.Sprintf("order %d of %s was admitted by the draw, but %s has no ranked entry", m.OrderID, m.UserID, m.UserID))
			continue
		}
		told := "no order"
		if m.Told != nil {
			told = fmt.Sprintf("order %d", *m.Told)
		}
		c.Violations = append(c.Violations, fmt.Sprintf("draw rank %d (%s) holds order %d the draw admitted, but is told %s with %s",
			*m.Rank, m.UserID, m.OrderID, deref(m.Outcome), told))
	}
	return c, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func finish(c Check) Check {
	c.OK = len(c.Violations) == 0
	return c
}

// Wait audits until the sale is at rest and every check passes, or until
// within has passed; it returns the last report.
func (a *Auditor) Wait(ctx context.Context, saleID int64, opts Options, within time.Duration) (*Report, error) {
	deadline := time.Now().Add(within)
	for {
		rep, err := a.Run(ctx, saleID, opts)
		if err != nil || (rep.AtRest && rep.OK()) || time.Now().After(deadline) {
			return rep, err
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// String renders the report for people.
func (r *Report) String() string {
	var b strings.Builder
	statuses := make([]string, 0, len(r.Orders))
	for status, n := range r.Orders {
		statuses = append(statuses, fmt.Sprintf("%s %d", status, n))
	}
	sort.Strings(statuses)
	orders := strings.Join(statuses, ", ")
	if orders == "" {
		orders = "none"
	}
	held := ""
	if r.PaymentsHeld > 0 {
		held = fmt.Sprintf("; %d payments held for orders never written (refunded once their hold has passed)", r.PaymentsHeld)
	}
	fmt.Fprintf(&b, "sale %d: total %d, remaining %d (Redis), available %d, locked %d, sold %d; waiting %d; at rest: %v%s; orders: %s\n",
		r.SaleID, r.Stock.Total, r.Stock.Remaining, r.Stock.Available, r.Stock.Locked, r.Stock.Sold, r.Waiting, r.AtRest, held, orders)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %d. %s\n", mark, c.Invariant, c.Name)
		for _, v := range c.Violations {
			fmt.Fprintf(&b, "         - %s\n", v)
		}
	}
	return b.String()
}

// held reports whether delivery may still hold a payment for orderID,
// never written: admitted (by its id's time) within opts.Hold, plus the
// grace for the reconcile pass that refunds it, and not in the future (a
// number that is no recent seckill order id is never held).
func held(orderID int64, now time.Time, opts Options) bool {
	at := idgen.Time(orderID)
	return at.Before(now.Add(time.Minute)) && now.Before(at.Add(opts.Hold+opts.Grace))
}
