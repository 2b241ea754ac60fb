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
	"github.com/seckill/seckill/beacon"
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
	SaleID int64 `json:"sale_id,string"` // a string, as every ID in the API
	AtRest bool  `json:"at_rest"`
	// Stock is the sale's units summed over its variants; Variants are
	// each variant's, in the sale's order (docs/DESIGN.md invariant 1:
	// the invariants hold per variant, in units).
	Stock    seckill.Stock  `json:"stock"`
	Variants []VariantStock `json:"variants"`
	// Orders counts the sale's orders by status; Units the units they
	// hold (each order its quantity), by status.
	Orders map[string]int   `json:"orders"`
	Units  map[string]int64 `json:"units"`
	// Waiting is the length of the sale's waitlist (Redis), over its
	// variants' lines.
	Waiting int64 `json:"waiting"`
	// PaymentsHeld counts the payments for an order never written that
	// delivery still holds (within Options.Hold of the
	// admission, its saga may yet start); the sale is not at rest while
	// any is held.
	PaymentsHeld int     `json:"payments_held"`
	Checks       []Check `json:"checks"`
}

// VariantStock is one variant's figures, in units: its split in the
// database with its Redis stock (Stock.Remaining: the segments' stock and
// the units in flight between them, each once), and the units Redis'
// claims hold of it.
type VariantStock struct {
	SKU     string        `json:"sku"`
	Stock   seckill.Stock `json:"stock"`
	Claimed int64         `json:"claimed"`
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
	SKU             string `gorm:"column:sku"`
	Quantity        int64
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
	f, err := a.read(ctx, saleID, opts)
	if err != nil {
		return nil, err
	}
	rep := f.report()
	rep.Checks = append(rep.Checks, finish(noOversell(f)), finish(redisMatchesAtRest(f, rep.AtRest)), finish(oneActiveOrder(f)))
	c4, err := a.everyClaimEnds(ctx, f)
	if err != nil {
		return nil, err
	}
	c5, held := everyPaymentEnds(f)
	rep.PaymentsHeld = held
	rep.AtRest = rep.AtRest && held == 0
	rep.Checks = append(rep.Checks, finish(c4), finish(c5), finish(noStockCreated(f)), finish(countedOnce(f, rep.AtRest)), finish(paidInTime(f)))
	c9, err := a.drawToldTheTruth(ctx, saleID)
	if err != nil {
		return nil, err
	}
	rep.Checks = append(rep.Checks, finish(c9))
	c10, err := a.placesKept(ctx, f)
	if err != nil {
		return nil, err
	}
	rep.Checks = append(rep.Checks, finish(c10))
	return rep, nil
}

// placesKept is invariant 10: the database keeps every waiting buyer's
// place as Redis has it (a waitlist_entries row of the same variant,
// quantity and place), or a Redis loss would move them. A join writes its
// buyer's row, pending (no place), before it asks Redis, and fills it
// just after Redis put the buyer in line, before the 201; a buyer served
// meanwhile leaves both: Redis then the database are read again a second
// later before a difference counts. So a waiting buyer with no row at all
// is a row that went missing; one whose row is pending was never answered
// 201 (the join is in flight, or was answered 503, or its API stopped
// before answering) and is not counted.
func (a *Auditor) placesKept(ctx context.Context, f *facts) (Check, error) {
	c := Check{Invariant: 10, Name: "a place in a waiting line is kept by the database (each waiting buyer's row has their variant, quantity and place, and a row keeps a place only for a buyer waiting or served)"}
	if !f.warmed {
		return c, nil
	}
	type row struct {
		UserID   string
		SKU      string `gorm:"column:sku"`
		Quantity int
		Place    *int64 // nil: pending
	}
	missing := func() ([]string, error) {
		waiters, err := a.Redis.Waiters(ctx, f.saleID)
		if err != nil {
			return nil, fmt.Errorf("read the waiting buyers: %w", err)
		}
		var rows []row
		if err := a.DB.WithContext(ctx).Raw(`SELECT user_id, sku, quantity, place FROM waitlist_entries WHERE sale_id = ?`, f.saleID).
			Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("read the waitlist's rows: %w", err)
		}
		kept := make(map[string]row, len(rows))
		for _, r := range rows {
			kept[r.UserID] = r
		}
		var out []string
		waiting := make(map[string]bool, len(waiters))
		for _, w := range waiters {
			waiting[w.UserID] = true
			r, ok := kept[w.UserID]
			switch {
			case !ok && f.drawSettling(ctx, a, w.UserID):
				// Queued by the draw's batch being settled: its places are
				// saved with the batch (activities.SettleDraw).
			case !ok:
				out = append(out, fmt.Sprintf("%s waits for %d of %s at place %d; no row keeps it",
					w.UserID, w.Item.Quantity, w.Item.SKU, w.Place))
			case r.Place == nil: // a join never answered 201
			case r.SKU != w.Item.SKU || r.Quantity != w.Item.Quantity || *r.Place != w.Place:
				out = append(out, fmt.Sprintf("%s waits for %d of %s at place %d; the row says %d of %s at place %d",
					w.UserID, w.Item.Quantity, w.Item.SKU, w.Place, r.Quantity, r.SKU, *r.Place))
			}
		}
		// The other way: a row keeps a place only while its buyer waits, or
		// until the order the line served them with is written (they hold a
		// claim meanwhile). A place kept for a buyer in no line, with no
		// claim and no order, is one a re-warm would give back to someone
		// who is not waiting (or one the last re-warm already lost).
		for _, r := range rows {
			if r.Place == nil || waiting[r.UserID] {
				continue
			}
			claim, err := a.Redis.ClaimOf(ctx, f.saleID, r.UserID)
			if err != nil {
				return nil, fmt.Errorf("read the claim of %s: %w", r.UserID, err)
			}
			if claim != 0 {
				continue
			}
			var ordered bool
			if err := a.DB.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM orders WHERE sale_id = ? AND user_id = ? AND status <> ?)`,
				f.saleID, r.UserID, string(seckill.StatusClosed)).Scan(&ordered).Error; err != nil {
				return nil, fmt.Errorf("read the orders of %s: %w", r.UserID, err)
			}
			if !ordered {
				out = append(out, fmt.Sprintf("%s's row keeps place %d for %d of %s; they wait in no line and hold no claim or order",
					r.UserID, *r.Place, r.Quantity, r.SKU))
			}
		}
		return out, nil
	}
	bad, err := missing()
	if err == nil && len(bad) > 0 {
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(time.Second):
		}
		bad, err = missing()
	}
	if err != nil {
		return c, err
	}
	c.Violations = append(c.Violations, bad...)
	return c, nil
}

// drawSettling reports whether userID is an entrant of the sale's draw
// in progress not yet settled (ranked at or past its next rank): the
// draw queues a batch's entrants and saves their places with the batch.
func (f *facts) drawSettling(ctx context.Context, a *Auditor, userID string) bool {
	var settling bool
	err := a.DB.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM lobby_entries e JOIN sales s ON s.id = e.sale_id
		WHERE e.sale_id = ? AND e.user_id = ? AND s.draw_state = ? AND e.outcome IS NULL AND e.rank >= s.draw_next_rank)`,
		f.saleID, userID, seckill.DrawRanked).Scan(&settling).Error
	return err == nil && settling
}

// facts are what one audit reads of a sale: the database first, then
// Redis (a unit on its way between them is in Redis' claims before its
// order holds it, never in neither), and what follows from them.
type facts struct {
	saleID int64
	now    time.Time
	opts   Options
	sale   saleRow
	// variants are the sale's, in its order; units are the units its
	// orders hold of each (by sku), as its variants' counts must say.
	variants []variantRow
	units    map[string]*orderUnits
	// restocks are the restocks not marked applied; unplaced the units
	// of them (by sku) Redis has not placed yet: in flight between a
	// restock's halves, the database's only for now.
	restocks []restockRow
	unplaced map[string]int64
	orders   []orderRow
	byID     map[int64]orderRow
	// active are the order ids of each user's orders that are not CLOSED.
	active map[string][]int64
	queued int
	events []eventRow

	// Redis. warmed: every segment of every variant is loaded; held is
	// then what Redis holds of the sale, per variant (seckill.Held: the
	// one count of invariant 7).
	warmed  bool
	held    seckill.Held
	claims  map[string]int64
	outbox  int64
	waiting int64
	// waitingBy is each variant's line (sku -> buyers).
	waitingBy map[string]int64
	moves     []seckill.Move
	// claimsMatch: Redis' claims are exactly the active orders, by user
	// and order id.
	claimsMatch bool
}

type saleRow struct {
	ID                    int64
	PaymentTimeoutSeconds int64
	EndsAt                time.Time
	StockSegments         int
}

// variantRow is a variant's split in the database, in units.
type variantRow struct {
	SKU                            string `gorm:"column:sku"`
	Total, Available, Locked, Sold int64
}

// orderUnits are the units the orders of one variant hold: those PAID
// (as sold must count them), those holding stock (stock_locked, as locked
// must count them), and those of every order not CLOSED (as Redis' claims
// hold them at rest).
type orderUnits struct {
	paid, holding, active int64
	paidOrders, holders   int
}

// read reads the sale from the database and Redis.
func (a *Auditor) read(ctx context.Context, saleID int64, opts Options) (*facts, error) {
	f := &facts{saleID: saleID, now: time.Now(), opts: opts, units: map[string]*orderUnits{}, byID: map[int64]orderRow{}, active: map[string][]int64{}}
	db := a.DB.WithContext(ctx)
	if err := db.Raw(`SELECT id, payment_timeout_seconds, ends_at, stock_segments FROM sales WHERE id = ?`, saleID).
		Scan(&f.sale).Error; err != nil {
		return nil, fmt.Errorf("read sale: %w", err)
	}
	if f.sale.ID == 0 {
		return nil, fmt.Errorf("sale %d: %w", saleID, seckill.ErrNotFound)
	}
	if err := db.Raw(`SELECT sku, total, available, locked, sold FROM sale_variants WHERE sale_id = ? ORDER BY position`, saleID).
		Scan(&f.variants).Error; err != nil {
		return nil, fmt.Errorf("read the sale's variants: %w", err)
	}
	if len(f.variants) == 0 {
		return nil, fmt.Errorf("sale %d has no variant", saleID)
	}
	if err := db.Raw(`SELECT id, user_id, sku, quantity, status, close_reason, stock_locked, pay_by, created_at, payment_intent_id,
			EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.order_id = orders.id) AS has_intent
		FROM orders WHERE sale_id = ?`, saleID).Scan(&f.orders).Error; err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	// Every successful payment of the sale's orders, and every one naming
	// an order that has no row (no sale's orders lead to those: each
	// sale's audit reports them).
	if err := db.Raw(`SELECT e.id, e.order_id, e.payment_intent_id, e.amount_cents, e.currency, e.outcome, e.received_at,
			r.status AS refund_status, COALESCE(o.status, '') AS status, o.close_reason, o.pay_by, o.closed_at, o.awaiting_at,
			COALESCE(o.amount_cents, 0) AS order_amount, COALESCE(o.currency, '') AS order_currency, o.payment_intent_id AS paid_with
		FROM payment_events e LEFT JOIN orders o ON o.id = e.order_id
		LEFT JOIN refunds r ON r.event_id = e.id
		WHERE e.type = ? AND e.order_id IS NOT NULL AND (o.sale_id = ? OR o.id IS NULL)`,
		string(seckill.PaymentSucceeded), saleID).Scan(&f.events).Error; err != nil {
		return nil, fmt.Errorf("read payment events: %w", err)
	}
	if err := db.Raw(`SELECT id, sku, added FROM sale_restocks WHERE sale_id = ? AND applied_at IS NULL`, saleID).
		Scan(&f.restocks).Error; err != nil {
		return nil, fmt.Errorf("read the restocks not applied: %w", err)
	}
	f.tally()
	return f, a.readRedis(ctx, f)
}

// restockRow is a restock the database counts whose Redis half is not
// marked done.
type restockRow struct {
	ID    int64
	SKU   string `gorm:"column:sku"`
	Added int64
}

// tally sums the orders by user and by variant.
func (f *facts) tally() {
	for _, v := range f.variants {
		f.units[v.SKU] = &orderUnits{}
	}
	for _, o := range f.orders {
		f.byID[o.ID] = o
		u := f.units[o.SKU]
		if u == nil { // no such variant: noOversell names it
			u = &orderUnits{}
			f.units[o.SKU] = u
		}
		if o.Status != string(seckill.StatusClosed) {
			f.active[o.UserID] = append(f.active[o.UserID], o.ID)
			u.active += o.Quantity
		}
		if o.Status == string(seckill.StatusPaid) {
			u.paid += o.Quantity
			u.paidOrders++
		}
		if o.StockLocked {
			u.holding += o.Quantity
			u.holders++
		}
		if o.Status == string(seckill.StatusQueued) {
			f.queued++
		}
	}
}

// readRedis reads what Redis holds of the sale: its stock and claims per
// variant in one read (UnitsHeld), then the claims by user, the outbox,
// the waitlist and the moves between segments.
func (a *Auditor) readRedis(ctx context.Context, f *facts) error {
	skus := make([]string, len(f.variants))
	for i, v := range f.variants {
		skus[i] = v.SKU
	}
	a.Redis.KnowSegments(f.saleID, f.sale.StockSegments)
	a.Redis.KnowSKUs(f.saleID, skus)
	held, err := a.Redis.UnitsHeld(ctx, []int64{f.saleID}, f.now.Add(-f.opts.Grace))
	if err != nil {
		return err
	}
	f.held, f.warmed = held[f.saleID]
	if f.claims, err = a.Redis.Claims(ctx, f.saleID); err != nil {
		return err
	}
	if f.outbox, err = a.Redis.OutboxBacklog(ctx, []int64{f.saleID}); err != nil {
		return err
	}
	if f.waitingBy, err = a.Redis.WaitingByVariant(ctx, f.saleID); err != nil {
		return fmt.Errorf("count the waitlist: %w", err)
	}
	for _, w := range f.waitingBy {
		f.waiting += w
	}
	if f.moves, err = a.Redis.Moves(ctx, f.saleID); err != nil {
		return err
	}
	// The units of the restocks between their halves that Redis has not
	// placed yet: the database counts them, Redis does not yet (read after
	// the holdings, so a restock placed in between is counted placed and
	// its units, missing from the holdings read, show as a violation for
	// this read only, never hide one).
	f.unplaced = map[string]int64{}
	if len(f.restocks) > 0 {
		placed, err := a.Redis.RestocksPlaced(ctx, f.saleID)
		if err != nil {
			return err
		}
		for _, r := range f.restocks {
			f.unplaced[r.SKU] += max(r.Added-placed[r.ID], 0)
		}
	}
	f.claimsMatch = len(f.claims) == len(f.active)
	for user, ids := range f.active {
		if f.claims[user] != ids[0] {
			f.claimsMatch = false
		}
	}
	return nil
}

// report is the report's figures. At rest: nothing admitted waits for its
// saga, nothing written waits for its units, and Redis' claims are exactly
// the active orders (payments held are weighed later).
func (f *facts) report() *Report {
	rep := &Report{SaleID: f.saleID, Orders: map[string]int{}, Units: map[string]int64{}, Waiting: f.waiting,
		AtRest: f.warmed && f.outbox == 0 && f.queued == 0 && f.claimsMatch}
	for _, o := range f.orders {
		rep.Orders[o.Status]++
		rep.Units[o.Status] += o.Quantity
	}
	for _, v := range f.variants {
		h := f.heldOf(v.SKU)
		vs := VariantStock{SKU: v.SKU, Claimed: h.Claimed,
			Stock: seckill.Stock{Total: v.Total, Remaining: h.Stock, Available: v.Available, Locked: v.Locked, Sold: v.Sold}}
		rep.Variants = append(rep.Variants, vs)
		rep.Stock.Total += vs.Stock.Total
		rep.Stock.Remaining += vs.Stock.Remaining
		rep.Stock.Available += vs.Stock.Available
		rep.Stock.Locked += vs.Stock.Locked
		rep.Stock.Sold += vs.Stock.Sold
	}
	return rep
}

// heldOf is what Redis holds of variant sku (zero when the sale is not
// warmed).
func (f *facts) heldOf(sku string) seckill.Held { return f.held.Variants[sku] }

// noOversell checks invariant 1 per variant, in units: the split adds up
// and never sells more than the total, sold counts the units of the PAID
// orders and locked those of the orders holding stock.
func noOversell(f *facts) Check {
	c := Check{Invariant: 1, Name: "no oversell, per variant in units: sold+locked <= total, total = available+locked+sold, sold and locked count the orders' units"}
	for _, v := range f.variants {
		u := f.units[v.SKU]
		if v.Sold+v.Locked > v.Total {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: sold %d + locked %d > total %d", v.SKU, v.Sold, v.Locked, v.Total))
		}
		if v.Available+v.Locked+v.Sold != v.Total {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: available %d + locked %d + sold %d != total %d", v.SKU, v.Available, v.Locked, v.Sold, v.Total))
		}
		if u.paid != v.Sold {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: %d PAID orders hold %d units but sold = %d", v.SKU, u.paidOrders, u.paid, v.Sold))
		}
		if u.holding != v.Locked {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: %d orders holding stock hold %d units but locked = %d", v.SKU, u.holders, u.holding, v.Locked))
		}
	}
	for _, o := range f.orders {
		if !f.hasVariant(o.SKU) {
			c.Violations = append(c.Violations, fmt.Sprintf("order %d holds %d units of variant %s, which the sale does not have", o.ID, o.Quantity, o.SKU))
		}
	}
	return c
}

func (f *facts) hasVariant(sku string) bool {
	for _, v := range f.variants {
		if v.SKU == sku {
			return true
		}
	}
	return false
}

// redisMatchesAtRest checks invariant 2 per variant: at rest, Redis'
// remaining (its stocks and the units in flight between segments, each
// once) is the database's available.
func redisMatchesAtRest(f *facts, atRest bool) Check {
	c := Check{Invariant: 2, Name: "at rest: Redis remaining == DB available, per variant"}
	switch {
	case !f.warmed:
		c.Violations = append(c.Violations, "the sale is not loaded in Redis (the worker's re-warmer loads an open sale within SECKILL_REWARM_EVERY + 5 s; is a worker running on this REDIS_URL and SECKILL_REDIS_PREFIX?)")
	case !atRest:
		c.Violations = append(c.Violations, fmt.Sprintf("not at rest: %d outbox entries, %d QUEUED orders, claims match orders: %v",
			f.outbox, f.queued, f.claimsMatch))
	default:
		for _, v := range f.variants {
			// Units held for a waiting buyer are the database's available
			// too, on their way to that buyer's order.
			// A restock between its halves: the units its Redis half has
			// not placed yet are the database's only, for now.
			if h, r := f.heldOf(v.SKU), f.unplaced[v.SKU]; h.Stock+h.ForWaiting+r != v.Available {
				c.Violations = append(c.Violations, fmt.Sprintf("variant %s: remaining %d + held for the line %d%s != available %d",
					v.SKU, h.Stock, h.ForWaiting, unplacedNote(r, " + restocked, not yet placed in Redis, %d"), v.Available))
			}
		}
	}
	return c
}

// oneActiveOrder checks invariant 3.
func oneActiveOrder(f *facts) Check {
	c := Check{Invariant: 3, Name: "one active order per (sale, user)"}
	for user, ids := range f.active {
		if len(ids) > 1 {
			c.Violations = append(c.Violations, fmt.Sprintf("user %s has %d active orders %v", user, len(ids), ids))
		}
	}
	return c
}

// everyClaimEnds checks invariant 4: every admitted claim ends PAID or
// CLOSED in time; no orphans.
func (a *Auditor) everyClaimEnds(ctx context.Context, f *facts) (Check, error) {
	c := Check{Invariant: 4, Name: "every claim reaches a saga and a terminal state in time"}
	now, opts := f.now, f.opts
	for _, o := range f.orders {
		switch o.Status {
		case string(seckill.StatusQueued):
			if now.Sub(o.CreatedAt) > opts.Grace {
				c.Violations = append(c.Violations, fmt.Sprintf("order %d QUEUED since %s", o.ID, o.CreatedAt.Format(time.RFC3339)))
			}
		case string(seckill.StatusAwaitingPayment):
			late := opts.Grace
			if o.HasIntent {
				// Its saga may be waiting for the event of a payment the
				// PaymentIntent took before its cancel (seckill.OwnPaymentWait).
				late += seckill.OwnPaymentWait
			}
			if o.PayBy != nil && now.Sub(*o.PayBy) > late {
				c.Violations = append(c.Violations, fmt.Sprintf("order %d AWAITING_PAYMENT %s past its deadline", o.ID, now.Sub(*o.PayBy).Round(time.Second)))
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
			return c, err
		}
		if run.Running {
			continue
		}
		var status string
		if err := a.DB.WithContext(ctx).Raw(`SELECT status FROM orders WHERE id = ?`, o.ID).Scan(&status).Error; err != nil {
			return c, fmt.Errorf("reread order %d: %w", o.ID, err)
		}
		if status != string(seckill.StatusPaid) && status != string(seckill.StatusClosed) { // not forgotten meanwhile
			c.Violations = append(c.Violations, fmt.Sprintf("order %d is %s with no running saga (%s)", o.ID, status, run.State()))
		}
	}
	for user, id := range f.claims {
		if id == 0 {
			c.Violations = append(c.Violations, fmt.Sprintf("claim of %s names no order", user))
			continue
		}
		if _, ok := f.byID[id]; ok {
			continue
		}
		// Admitted, no row yet: its saga must run (or the claim is young).
		if a.Sagas != nil {
			run, err := a.Sagas.Describe(ctx, id)
			if err != nil {
				return c, err
			}
			if !run.Running && now.Sub(idgen.Time(id)) > opts.Grace {
				c.Violations = append(c.Violations, fmt.Sprintf("claim of %s (order %d) has no running saga after %s", user, id, now.Sub(idgen.Time(id)).Round(time.Second)))
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
		WHERE e.sale_id = ? AND e.order_id IS NOT NULL AND o.id IS NULL ORDER BY e.rank`, f.saleID).Scan(&lost).Error; err != nil {
		return c, fmt.Errorf("read the draw's entries: %w", err)
	}
	for _, e := range lost {
		if f.claims[e.UserID] != e.OrderID && now.Sub(idgen.Time(e.OrderID)) > opts.Grace {
			c.Violations = append(c.Violations, fmt.Sprintf("draw rank %d (%s) was given order %d, which has neither a row nor an admission", e.Rank, e.UserID, e.OrderID))
		}
	}
	return c, nil
}

// everyPaymentEnds checks invariant 5 from the payment events, whether or
// not the order has a row: every successful payment ends as a PAID order
// or a refund. It returns the payments delivery still holds too.
func everyPaymentEnds(f *facts) (c Check, held int) {
	c = Check{Invariant: 5, Name: "every successful payment ends as a PAID order or a refund (from the payment events)"}
	timeout := time.Duration(f.sale.PaymentTimeoutSeconds) * time.Second
	for _, e := range f.events {
		refunded := e.RefundStatus != nil && *e.RefundStatus == seckill.RefundSucceeded
		appliedHere := e.Status == string(seckill.StatusPaid) && e.PaidWith != nil && e.PaymentIntentID != nil && *e.PaidWith == *e.PaymentIntentID
		order := fmt.Sprintf("order %d (%s)", e.OrderID, e.Status)
		if e.Status == "" {
			order = fmt.Sprintf("order %d (never written)", e.OrderID)
		}
		age := f.now.Sub(e.ReceivedAt)
		switch {
		case appliedHere && refunded:
			c.Violations = append(c.Violations, fmt.Sprintf("event %s both paid %s and was refunded", e.ID, order))
		case appliedHere || refunded:
		case e.Status == "" && e.Outcome == string(seckill.OutcomeReceived) && isHeld(e.OrderID, f.now, f.opts):
			// Held by delivery: refunded once the window has passed.
			held++
		case e.Outcome == string(seckill.OutcomeReceived) && age > f.opts.Grace:
			c.Violations = append(c.Violations, fmt.Sprintf("event %s for %s still RECEIVED after %s: never delivered", e.ID, order, age.Round(time.Second)))
		case age <= f.opts.Grace+timeout && (e.RefundStatus != nil ||
			e.Outcome == string(seckill.OutcomeDelivered) && e.Status != string(seckill.StatusClosed) && e.Status != string(seckill.StatusPaid)):
			// Still in flight: its refund is under way, or its order undecided.
		case age <= f.opts.Grace:
		default:
			c.Violations = append(c.Violations, fmt.Sprintf("event %s (outcome %s) for %s: neither paid nor refunded", e.ID, e.Outcome, order))
		}
	}
	return c, held
}

// noStockCreated checks invariant 6 per variant: compensation never
// creates stock, so Redis never holds more of a variant than the
// database has available.
func noStockCreated(f *facts) Check {
	c := Check{Invariant: 6, Name: "Redis never holds stock the database lacks, per variant"}
	if !f.warmed {
		return c
	}
	for _, v := range f.variants {
		r := f.heldOf(v.SKU).Stock + f.heldOf(v.SKU).ForWaiting
		if r > v.Available {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: remaining and held for the line %d > available %d", v.SKU, r, v.Available))
		}
		if r < 0 {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: remaining %d < 0", v.SKU, r))
		}
	}
	return c
}

// countedOnce checks invariant 7 per variant: a unit is counted once
// wherever it is, and none is stranded. At rest, what Redis holds of each
// variant (seckill.Held: its stock, the units in flight between segments
// and those its claims hold) is the variant's total, and its claims hold
// the units of the active orders. At any time, no move between segments
// is left half done past the grace (Remaining counts one that is once; a
// mover that stopped leaves it for reconciliation to finish), and no unit
// waits in a stock while buyers wait in its line.
func countedOnce(f *facts, atRest bool) Check {
	c := Check{Invariant: 7, Name: "a unit is counted once, per variant (stock, moves, claims); none stranded between segments, moves and the waitlist"}
	for _, m := range f.moves {
		if age := f.now.Sub(m.At); age > f.opts.Grace {
			state := "in flight to segment " + fmt.Sprint(m.Dest)
			switch {
			case m.Dest < 0:
				state = "released and not aimed"
			case m.Given:
				state = fmt.Sprintf("given to segment %d, not forgotten", m.Dest)
			}
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: move %s of %d units from segment %d %s for %s", m.SKU, m.ID, m.Units, m.From, state, age.Round(time.Second)))
		}
	}
	if !atRest {
		return c
	}
	for _, v := range f.variants {
		h := f.heldOf(v.SKU)
		if n, r := h.Stock+h.ForWaiting+h.Claimed, f.unplaced[v.SKU]; n+r != v.Total {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: Redis holds %d units (stock and moves %d, held for the line %d, claims %d)%s but its total is %d",
				v.SKU, n, h.Stock, h.ForWaiting, h.Claimed, unplacedNote(r, " and restocks have %d not yet placed in Redis,"), v.Total))
		}
		if u := f.units[v.SKU].active; h.Claimed != u {
			c.Violations = append(c.Violations, fmt.Sprintf("variant %s: Redis' claims hold %d units but its active orders hold %d", v.SKU, h.Claimed, u))
		}
	}
	if f.waiting > 0 && f.now.Before(f.sale.EndsAt) {
		c.Violations = append(c.Violations, f.strandedWhileWaiting()...)
	}
	return c
}

// unplacedNote is format with the units of restocks not yet placed in
// Redis, or nothing when there are none.
func unplacedNote(units int64, format string) string {
	if units == 0 {
		return ""
	}
	return fmt.Sprintf(format, units)
}

// strandedWhileWaiting names the units left in stock of a variant while
// buyers wait in its line.
func (f *facts) strandedWhileWaiting() []string {
	var out []string
	for _, v := range f.variants {
		if r, w := f.heldOf(v.SKU).Stock, f.waitingBy[v.SKU]; r > 0 && w > 0 {
			out = append(out, fmt.Sprintf("variant %s: %d units in stock while %d buyers wait for it", v.SKU, r, w))
		}
	}
	return out
}

// paidInTime checks invariant 8: a payment counts when seckill received
// it: one received by pay_by (and before its order closed), for the
// order's amount, makes the order PAID however late its signal came. An
// order that never held its units (refused: SOLD_OUT, or a second active
// order of its buyer) cannot be paid: its payment is refunded, and
// invariant 5 checks that.
func paidInTime(f *facts) Check {
	c := Check{Invariant: 8, Name: "a payment received by pay_by makes its order PAID"}
	for _, e := range f.events {
		// Received by pay_by and before the order closed (a buyer who paid
		// after cancelling pays for units given back: refunded).
		inTime := e.PayBy != nil && !e.ReceivedAt.After(*e.PayBy) && e.AmountCents == e.OrderAmount && e.Currency == e.OrderCurrency &&
			(e.ClosedAt == nil || e.ReceivedAt.Before(*e.ClosedAt))
		heldUnit := e.AwaitingAt != nil && (e.CloseReason == nil || *e.CloseReason != string(seckill.CloseSoldOut))
		if inTime && heldUnit && e.Status == string(seckill.StatusClosed) {
			c.Violations = append(c.Violations, fmt.Sprintf("event %s received %s, by pay_by %s, but order %d closed as %s",
				e.ID, e.ReceivedAt.UTC().Format(time.RFC3339Nano), e.PayBy.UTC().Format(time.RFC3339Nano), e.OrderID, deref(e.CloseReason)))
		}
	}
	return c
}

// drawBeaconRow is what a sale's row records of its draw's beacon.
type drawBeaconRow struct {
	DrawState           *string
	DrawBeaconChain     *string
	DrawBeaconRound     *int64
	DrawBeaconRoundAt   *time.Time
	Committed           bool
	DrawCommittedAt     *time.Time
	DrawBeaconSignature []byte
}

// beaconViolations: a draw that waits for a beacon round ranks nobody
// before its entries are committed and the round's signature, recorded,
// verifies against the pinned chain's key (docs/API.md "A draw nobody can
// bias"); a signature that does not verify is never used.
func (d drawBeaconRow) beaconViolations() []string {
	ranked := d.DrawState != nil && (*d.DrawState == seckill.DrawRanked || *d.DrawState == seckill.DrawDone)
	if d.DrawBeaconChain == nil || d.DrawBeaconRound == nil {
		return nil
	}
	var v []string
	if ranked && !d.Committed {
		v = append(v, "the draw ranked its entries without committing them (no entries tree recorded)")
	}
	if d.Committed && d.DrawCommittedAt == nil {
		v = append(v, "the entries' commit has no time recorded: nothing shows it came before the beacon round")
	}
	if d.DrawCommittedAt != nil && d.DrawBeaconRoundAt != nil && !d.DrawCommittedAt.Before(*d.DrawBeaconRoundAt) {
		v = append(v, fmt.Sprintf("the entries were committed at %s, not before beacon round %d's time %s: whoever committed them could have known its randomness",
			d.DrawCommittedAt.UTC().Format(time.RFC3339Nano), *d.DrawBeaconRound, d.DrawBeaconRoundAt.UTC().Format(time.RFC3339)))
	}
	if d.DrawBeaconSignature == nil {
		if ranked {
			v = append(v, fmt.Sprintf("the draw ranked its entries without beacon round %d (no signature recorded)", *d.DrawBeaconRound))
		}
		return v
	}
	chain, ok := beacon.Lookup(*d.DrawBeaconChain)
	if !ok {
		return append(v, fmt.Sprintf("the draw waits for chain %s, which is not a pinned chain", *d.DrawBeaconChain))
	}
	if err := chain.Verify(uint64(*d.DrawBeaconRound), d.DrawBeaconSignature); err != nil {
		v = append(v, fmt.Sprintf("the beacon round %d recorded for the draw does not verify: %v", *d.DrawBeaconRound, err))
	}
	return v
}

// drawToldTheTruth checks invariant 9 on a sale whose draw is done: every
// entrant told WON names an order of theirs holding the item they entered
// for, and every order the draw admitted (orders.drawn) is the one its
// buyer's entry names, as WON (or WAITING, for an entrant the waitlist
// served at once), never held by an entrant told LOST, or by nobody the
// draw recorded. While the draw runs, the
// batch being settled holds admissions not yet recorded: not checked.
func (a *Auditor) drawToldTheTruth(ctx context.Context, saleID int64) (Check, error) {
	c := Check{Invariant: 9, Name: "what the draw tells an entrant is true (WON holds its order, of its variant and quantity; LOST and WAITING hold no order of the draw's)"}
	var d drawBeaconRow
	if err := a.DB.WithContext(ctx).Raw(`SELECT draw_state, draw_beacon_chain, draw_beacon_round, draw_beacon_round_at,
		draw_entries_tree IS NOT NULL AS committed, draw_committed_at, draw_beacon_signature
		FROM sales WHERE id = ?`, saleID).Scan(&d).Error; err != nil {
		return c, fmt.Errorf("read the draw's state: %w", err)
	}
	c.Violations = append(c.Violations, d.beaconViolations()...)
	if d.DrawState == nil || *d.DrawState != "DONE" {
		return c, nil
	}
	// A done draw told every entrant where they stand: a rank and an
	// outcome each (an entry left without one reads ENTERED for ever).
	var untold struct {
		N       int
		FirstID *string
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT count(*) AS n, min(user_id) AS first_id FROM lobby_entries
		WHERE sale_id = ? AND (rank IS NULL OR outcome IS NULL)`, saleID).Scan(&untold).Error; err != nil {
		return c, fmt.Errorf("read the draw's untold entrants: %w", err)
	}
	if untold.N > 0 {
		c.Violations = append(c.Violations, fmt.Sprintf("the draw is done, and %d entrants (%s first) have no rank or no outcome", untold.N, *untold.FirstID))
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
	// A winner's order holds what their entry asked for (the draw claims
	// the entry's item); an entrant the waitlist served holds a unit of
	// the variant they entered for (a waitlist gives one unit a buyer).
	var otherItem []struct {
		Rank          int
		UserID        string
		OrderID       int64
		Outcome       string
		SKU           string `gorm:"column:sku"`
		Quantity      int
		OrderSKU      string `gorm:"column:order_sku"`
		OrderQuantity int
	}
	if err := a.DB.WithContext(ctx).Raw(`SELECT e.rank, e.user_id, e.order_id, e.outcome, e.sku, e.quantity, o.sku AS order_sku, o.quantity AS order_quantity
		FROM lobby_entries e JOIN orders o ON o.id = e.order_id AND o.user_id = e.user_id AND o.sale_id = e.sale_id
		WHERE e.sale_id = ? AND (e.outcome = 'WON' AND (o.sku <> e.sku OR o.quantity <> e.quantity) OR e.outcome = 'WAITING' AND o.sku <> e.sku)
		ORDER BY e.rank`, saleID).Scan(&otherItem).Error; err != nil {
		return c, fmt.Errorf("read the draw's orders by item: %w", err)
	}
	for _, e := range otherItem {
		asked, holds := seckill.Item{SKU: e.SKU, Quantity: e.Quantity}, seckill.Item{SKU: e.OrderSKU, Quantity: e.OrderQuantity}
		c.Violations = append(c.Violations, fmt.Sprintf("draw rank %d (%s), told %s, entered for %s, but order %d holds %s",
			e.Rank, e.UserID, e.Outcome, asked, e.OrderID, holds))
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
		statuses = append(statuses, fmt.Sprintf("%s %d (%d units)", status, n, r.Units[status]))
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
	for _, v := range r.Variants {
		fmt.Fprintf(&b, "  variant %s: total %d, remaining %d (Redis), available %d, locked %d, sold %d; claims hold %d (Redis)\n",
			v.SKU, v.Stock.Total, v.Stock.Remaining, v.Stock.Available, v.Stock.Locked, v.Stock.Sold, v.Claimed)
	}
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

// isHeld reports whether delivery may still hold a payment for orderID,
// never written: admitted (by its id's time) within opts.Hold, plus the
// grace for the reconcile pass that refunds it, and not in the future (a
// number that is no recent seckill order id is never held).
func isHeld(orderID int64, now time.Time, opts Options) bool {
	at := idgen.Time(orderID)
	return at.Before(now.Add(time.Minute)) && now.Before(at.Add(opts.Hold+opts.Grace))
}
