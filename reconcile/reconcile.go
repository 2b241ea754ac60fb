// Package reconcile compares, for every sale still settling, what Redis,
// Postgres and Temporal each believe, fixes what is safe to fix, and
// reports every drift as a metric and a structured log line. A Temporal
// Schedule runs it every minute (visible in the Temporal UI as
// "seckill-reconcile"). Each drift kind (seckill.DriftKinds):
//
//   - claim_without_saga: an admitted claim (in Redis) with no order row
//     and no saga after a grace period (its outbox entry was lost): start
//     its saga, with the relay's workflow ID and options, so a late relay
//     finds it started;
//
//   - order_without_saga, saga_ended_order_unsettled: an unsettled order
//     (QUEUED or AWAITING_PAYMENT) with no running saga: Temporal lost its
//     state, or the saga failed, was terminated or was cancelled before it
//     decided: start its saga again (a new run of the same workflow ID);
//     it reads the order as it stands and resumes, doing nothing twice. A
//     saga that completed with its order unsettled is only reported (it
//     would be a bug);
//
//   - stale_claim: a claim naming an order that is CLOSED (its release
//     was lost to a re-warm from an older snapshot): release it as the
//     saga would have;
//
//   - claim_missing: an active (not CLOSED) order whose user has no claim
//     in Redis: write it back, unless its release ran since (restore.lua
//     reads the release's mark where it writes: an order read active at
//     the start of the pass may have closed since);
//
//   - move_unfinished: units a mover left between the segments of a sale
//     (it stopped between take, give and forget): finish each move from
//     the state it is in;
//
//   - redis_above_db: Redis remaining above Postgres available (impossible
//     in normal operation: admission takes from Redis first and
//     compensation gives to Postgres first): lower Redis to the database's
//     figure, only if no claim or release moved it meanwhile. Redis is
//     never raised;
//
//   - stock_while_waiting: units in stock while buyers wait for one: hand
//     them to the waitlist, first come first served;
//
//   - restock_unapplied: a restock the database counts (its units are in
//     the variant's total and available) whose Redis half is not done
//     after a grace period (the request stopped between the halves, or
//     Redis did not answer, and the admin did not retry): run it now, as
//     the retry would (once per restock, however often it runs: the
//     waiting buyers first, then the stock) and mark it applied. A sale
//     Redis does not hold waits for its re-warm (which leaves such
//     restocks out of what it loads); one that has ended by then has
//     nothing left to place and is marked applied;
//
//   - payment_undelivered: a payment event recorded while its order's saga
//     could not take it (not started yet, being restarted, Temporal out of
//     reach), for an order never written, or for an order of a sale no
//     longer settling: deliver it now. Delivery refunds a successful
//     payment whose order can never be honoured (closed, refused, never
//     written and its admission gone);
//
//   - check_failed: a check or fix that failed (Redis, Postgres or
//     Temporal did not answer): the next pass tries again.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/saga"
)

// Sagas is what reconciliation asks of Temporal (saga.Client).
type Sagas interface {
	Describe(ctx context.Context, orderID int64) (saga.Run, error)
	Start(ctx context.Context, in seckill.SagaInput) error
}

// Store is what reconciliation reads in the database (store.Store).
type Store interface {
	SettlingSales(ctx context.Context, since time.Time) ([]*seckill.Sale, error)
	Sale(ctx context.Context, id int64) (*seckill.Sale, error)
	ActiveOrders(ctx context.Context, saleID int64) ([]*seckill.Order, error)
	Order(ctx context.Context, id int64) (*seckill.Order, error)
	UndeliveredPaymentEvents(ctx context.Context, saleID int64, olderThan time.Time) ([]*seckill.PaymentRecord, error)
	UndeliveredStrayPaymentEvents(ctx context.Context, settlingSince, olderThan time.Time, limit int) ([]*seckill.PaymentRecord, error)
	UnappliedRestocks(ctx context.Context, saleID int64, before time.Time) ([]seckill.Restock, error)
	MarkRestockApplied(ctx context.Context, saleID, id int64) error
}

// Redis is what reconciliation reads and repairs in Redis
// (redisstore.Store).
type Redis interface {
	KnowSegments(saleID int64, n int)
	KnowSKUs(saleID int64, skus []string)
	RemainingByVariant(ctx context.Context, saleIDs []int64) (map[int64]map[string]int64, error)
	Counts(ctx context.Context, saleIDs []int64) (map[int64]seckill.SaleCounts, error)
	Claims(ctx context.Context, saleID int64) (map[string]int64, error)
	Admission(ctx context.Context, orderID int64, saleIDs []int64) (a seckill.Admission, ok bool, err error)
	RestoreClaim(ctx context.Context, saleID int64, userID string, orderID int64, item seckill.Item) (bool, error)
	Release(ctx context.Context, saleID int64, userID string, orderID int64, item seckill.Item, next *seckill.NextOrder) (seckill.Released, error)
	UnitsHeld(ctx context.Context, saleIDs []int64, stuckBefore time.Time) (map[int64]seckill.Held, error)
	LowerRemaining(ctx context.Context, saleID int64, sku string, seen, target int64) (bool, error)
	HandOver(ctx context.Context, saleID int64, sku string, terms seckill.Terms, orderIDs []int64) (int, error)
	WaitingByVariant(ctx context.Context, saleID int64) (map[string]int64, error)
	FinishMoves(ctx context.Context, saleID int64, termsOf func(sku string) seckill.Terms, olderThan time.Duration, nextID func() (int64, error)) (int, error)
	Restock(ctx context.Context, r seckill.Restock, terms seckill.Terms, nextID func() (int64, error)) (seckill.Restocked, error)
}

// Reconciler holds the three stores.
type Reconciler struct {
	Store Store
	Redis Redis
	Sagas Sagas
	// Draws, when set, starts the draws of sales with a lobby that lack one.
	Draws *Draws
	Log   *slog.Logger
	// Grace is how old an admitted claim without a saga must be before it
	// counts as lost [30s]: younger ones may still be in the relay's hands.
	Grace time.Duration
	// Delivery hands undelivered payment events to their sagas
	// (delivery.Deliverer).
	Delivery interface {
		Deliver(ctx context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error)
	}
	// IDs hands out the ids of the orders a unit becomes when it is
	// handed to a waiting buyer (an idgen.Generator). Required. Its error
	// is temporary (the id node's lease is not confirmed): the fix that
	// needed the id fails, and the next pass tries it again.
	IDs interface{ Next() (int64, error) }

	drifts *prometheus.CounterVec
}

// Register adds the reconciler's metric (seckill_reconcile_drift_total by
// kind and fixed) to reg.
func (r *Reconciler) Register(reg prometheus.Registerer) error {
	r.drifts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_reconcile_drift_total",
		Help: "Disagreements between Redis, Postgres and Temporal found by reconciliation, by kind and whether fixed.",
	}, []string{"kind", "fixed"})
	// Every series exists from the start at 0, so a rate over it works
	// before the first drift.
	for _, kind := range seckill.DriftKinds {
		r.drifts.WithLabelValues(kind, "true")
		r.drifts.WithLabelValues(kind, "false")
	}
	return reg.Register(r.drifts)
}

// DefaultGrace is how old a claim without a saga must be before it is
// fixed, unless Reconciler.Grace says otherwise (SECKILL_RECONCILE_GRACE).
const DefaultGrace = 30 * time.Second

// SettleWindow is how long after its end a sale is still reconciled: its
// last orders may await payment for the longest payment timeout, and an
// hour more covers their settling.
const SettleWindow = seckill.MaxPaymentTimeout + time.Hour

// All reconciles every sale open now or ended within SettleWindow.
func (r *Reconciler) All(ctx context.Context) ([]seckill.Drift, error) {
	since := time.Now().Add(-SettleWindow)
	sales, err := r.Store.SettlingSales(ctx, since)
	if err != nil {
		return nil, err
	}
	// Payments of orders that have no row or whose sale is no longer
	// settling: no sale's pass sees them.
	all, err := r.strayPayments(ctx, since)
	if err != nil {
		all = append(all, r.checkFailed(0, 0, "deliver the payments no sale's pass reaches", err))
	}
	if r.Draws != nil {
		all = append(all, r.Draws.ensure(ctx, r)...)
	}
	for _, s := range sales {
		if ctx.Err() != nil {
			return all, ctx.Err()
		}
		// One sale that cannot be read (or one order that cannot be fixed,
		// inside Sale) stops nothing else: it is a drift of its own, and the
		// next pass tries again.
		d, err := r.Sale(ctx, s.ID)
		all = append(all, d...)
		if err != nil {
			all = append(all, r.checkFailed(s.ID, 0, "reconcile the sale", err))
		}
	}
	return all, nil
}

// checkFailed reports a check or fix that failed as a drift.
func (r *Reconciler) checkFailed(saleID, orderID int64, what string, err error) seckill.Drift {
	return r.noted(seckill.Drift{Kind: seckill.DriftCheckFailed, SaleID: saleID, OrderID: orderID, Detail: what + ": " + err.Error()})
}

// noted counts d in seckill_reconcile_drift_total and logs it, and
// returns it.
func (r *Reconciler) noted(d seckill.Drift) seckill.Drift {
	if r.drifts != nil {
		r.drifts.WithLabelValues(d.Kind, strconv.FormatBool(d.Fixed)).Inc()
	}
	r.Log.Warn("reconcile drift", "kind", d.Kind, "saleID", d.SaleID, "orderID", d.OrderID, "fixed", d.Fixed, "detail", d.Detail)
	return d
}

// Sale reconciles one sale.
func (r *Reconciler) Sale(ctx context.Context, saleID int64) ([]seckill.Drift, error) {
	grace := r.grace()
	var drifts []seckill.Drift
	failed := func(orderID int64, what string, err error) {
		drifts = append(drifts, r.checkFailed(saleID, orderID, what, err))
	}
	report := func(d seckill.Drift) { drifts = append(drifts, r.noted(d)) }
	sale, err := r.Store.Sale(ctx, saleID)
	if err != nil {
		return nil, err
	}
	// The sale's number of stock segments comes from the database, never
	// from Redis keys that may have been lost.
	r.Redis.KnowSegments(saleID, sale.StockSegments)
	r.Redis.KnowSKUs(saleID, sale.SKUs())

	// Claims admitted in Redis whose saga never started, and claims that
	// outlived their order.
	claims, err := r.Redis.Claims(ctx, saleID)
	if err != nil {
		return drifts, err
	}
	for user, orderID := range claims {
		if orderID == 0 {
			continue // names no order: the audit reports it
		}
		o, err := r.Store.Order(ctx, orderID)
		switch {
		case err == nil && o.Status == seckill.StatusClosed:
			// The order closed but its claim stayed (its release met a
			// Redis being re-warmed from an older snapshot): release it
			// now, returning the unit the database has back, exactly as
			// the saga would have.
			give := o.Item.OrDefault().Quantity
			if o.CloseReason == seckill.CloseSoldOut {
				give = o.GiveBack // the database had only these to give back
			}
			released, err := r.release(ctx, saleID, user, orderID, o.Item, give)
			if err != nil {
				failed(orderID, "release the claim of a closed order", err)
				continue
			}
			if released {
				report(seckill.Drift{Kind: seckill.DriftStaleClaim, SaleID: saleID, OrderID: orderID, Fixed: true,
					Detail: fmt.Sprintf("claim of %s names an order CLOSED with %s; released", user, o.CloseReason)})
			}
			continue
		case err == nil:
			continue
		case !errors.Is(err, seckill.ErrNotFound):
			failed(orderID, "read the order of a claim", err)
			continue
		}
		if time.Since(idgen.Time(orderID)) < grace {
			continue
		}
		run, err := r.Sagas.Describe(ctx, orderID)
		if err != nil {
			failed(orderID, "describe the saga of a claim", err)
			continue
		}
		if run.Running || run.Status == saga.RunCompleted {
			continue // running: it will write its row; completed: it decided
		}
		in := seckill.SagaInput{OrderID: orderID, SaleID: saleID, UserID: user, AdmittedAt: idgen.Time(orderID)}
		adm, ok, err := r.Redis.Admission(ctx, orderID, []int64{saleID})
		if err != nil {
			// Not started from a guess: without its admission the saga
			// would have no pay_by and a draw's order would not say it is
			// the draw's (invariant 9). The next pass tries again.
			failed(orderID, "read the admission of a claim", err)
			continue
		}
		if ok {
			// The draw's admission stays the draw's, as its outbox entry
			// would have said.
			in.PayBy, in.Drawn, in.Item = adm.PayBy, adm.Drawn, adm.Item
		}
		err = r.Sagas.Start(ctx, in)
		report(seckill.Drift{Kind: seckill.DriftClaimWithoutSaga, SaleID: saleID, OrderID: orderID, Fixed: err == nil,
			Detail: fmt.Sprintf("claim of %s admitted %s ago has no running saga (%s)", user,
				time.Since(idgen.Time(orderID)).Round(time.Second), run.State())})
	}

	// Active orders whose claim Redis lost; unsettled ones whose saga
	// Temporal does not have.
	orders, err := r.Store.ActiveOrders(ctx, saleID)
	if err != nil {
		return drifts, err
	}
	for _, o := range orders {
		if _, ok := claims[o.UserID]; !ok && time.Since(o.CreatedAt) > grace {
			// An active order whose claim Redis lost: one buyer, one active
			// order, so write it back (never over another claim, and never
			// for an order released since it was read: restore.lua checks).
			restored, err := r.Redis.RestoreClaim(ctx, saleID, o.UserID, o.ID, o.Item)
			if err != nil {
				failed(o.ID, "restore the claim of an active order", err)
				continue
			}
			report(seckill.Drift{Kind: seckill.DriftClaimMissing, SaleID: saleID, OrderID: o.ID, Fixed: restored,
				Detail: fmt.Sprintf("order of %s is %s but Redis has no claim for it", o.UserID, o.Status)})
		}
		if o.Status == seckill.StatusPaid {
			continue
		}
		run, err := r.Sagas.Describe(ctx, o.ID)
		if err != nil {
			failed(o.ID, "describe the saga of an order", err)
			continue
		}
		if run.Running {
			continue
		}
		if run.Found {
			// The saga may have settled the order since it was read.
			if now, err := r.Store.Order(ctx, o.ID); err == nil && now.Status.Terminal() {
				continue
			}
		}
		in := seckill.SagaInput{OrderID: o.ID, SaleID: saleID, UserID: o.UserID, AdmittedAt: o.CreatedAt,
			AmountCents: o.AmountCents, Currency: o.Currency, Drawn: o.Drawn, Item: o.Item}
		if o.PayBy != nil {
			in.PayBy = *o.PayBy
		}
		switch {
		case run.Status == saga.RunCompleted:
			report(seckill.Drift{Kind: seckill.DriftSagaEndedOrderUnsettled, SaleID: saleID, OrderID: o.ID,
				Detail: fmt.Sprintf("order is %s but its saga completed", o.Status)})
		case run.Found:
			err := r.Sagas.Start(ctx, in)
			report(seckill.Drift{Kind: seckill.DriftSagaEndedOrderUnsettled, SaleID: saleID, OrderID: o.ID, Fixed: err == nil,
				Detail: fmt.Sprintf("order is %s but its saga ended %s; a new run resumes it", o.Status, run.State())})
		default:
			err := r.Sagas.Start(ctx, in)
			report(seckill.Drift{Kind: seckill.DriftOrderWithoutSaga, SaleID: saleID, OrderID: o.ID, Fixed: err == nil,
				Detail: fmt.Sprintf("order is %s with no saga; saga restarted to resume it", o.Status)})
		}
	}

	// Payment events recorded while their order's saga could not take them.
	events, err := r.Store.UndeliveredPaymentEvents(ctx, saleID, time.Now().Add(-grace))
	if err != nil {
		return drifts, err
	}
	for _, e := range events {
		outcome, err := r.Delivery.Deliver(ctx, e.Signal(), e.OrderID)
		if errors.Is(err, seckill.ErrPaymentNotYet) {
			continue // its saga is being restarted above; next pass
		}
		report(seckill.Drift{Kind: seckill.DriftPaymentUndelivered, SaleID: saleID, OrderID: e.OrderID, Fixed: err == nil,
			Detail: fmt.Sprintf("payment event %s recorded but not delivered; delivered now: %s", e.ID, outcome)})
	}

	// Restocks whose Redis half never finished: placed before the moves
	// are finished and the stock is weighed against the line below, which
	// then see their units.
	restocked, err := r.applyRestocks(ctx, sale, grace)
	drifts = append(drifts, restocked...)
	if err != nil {
		return drifts, err
	}

	// Units a mover left in flight between the segments of the sale (it
	// stopped between the steps): land them, and forget the moves given
	// but not forgotten. (Each is counted once either way; landed first,
	// the check below reads no move half done.)
	moved, err := r.Redis.FinishMoves(ctx, saleID, seckill.TermsBySKU(*sale), grace, r.IDs.Next)
	if err != nil {
		return drifts, err
	}
	if moved > 0 {
		report(seckill.Drift{Kind: seckill.DriftMoveUnfinished, SaleID: saleID, Fixed: true,
			Detail: fmt.Sprintf("%d moves of units between the sale's segments were left in flight; finished", moved)})
	}

	// Redis above the database, variant by variant: lower it, never raise
	// it. Redis' figure is every unit it holds outside the claims, each
	// once (UnitsHeld, docs/DESIGN.md invariant 7): in stock, in flight
	// and held for a line's head, which the database counts available.
	all, err := r.Redis.UnitsHeld(ctx, []int64{saleID}, time.Now())
	h, warmed := all[saleID]
	if err != nil || !warmed {
		return drifts, err // not warmed: the re-warmer's job
	}
	seen := make(map[string]int64, len(h.Variants))
	for sku, v := range h.Variants {
		seen[sku] = v.Stock + v.ForWaiting
	}
	// The database's figure is read after Redis': a unit released in
	// between raises it, never lowers it, so Redis is never lowered below
	// what the database has (the sale read at the start is too old).
	if sale, err = r.Store.Sale(ctx, saleID); err != nil {
		return drifts, err
	}
	for _, v := range sale.Variants {
		if seen[v.SKU] <= v.Stock.Available {
			continue
		}
		lowered, err := r.Redis.LowerRemaining(ctx, saleID, v.SKU, seen[v.SKU], v.Stock.Available)
		if err != nil {
			return drifts, err
		}
		report(seckill.Drift{Kind: seckill.DriftRedisAboveDB, SaleID: saleID, Fixed: lowered,
			Detail: fmt.Sprintf("variant %s: Redis holds %d (stock, in flight, held) > database available %d", v.SKU, seen[v.SKU], v.Stock.Available)})
	}

	// Units in stock while buyers wait for one (a counter re-loaded while
	// the waitlist survived, a join in one segment while another had a unit):
	// give them to the waitlist.
	counts, err := r.Redis.Counts(ctx, []int64{saleID})
	if err != nil {
		return drifts, err
	}
	c := counts[saleID]
	if c.Waiting == 0 {
		return drifts, nil
	}
	waiting, err := r.Redis.WaitingByVariant(ctx, saleID)
	if err != nil {
		return drifts, err
	}
	for _, v := range sale.Variants {
		if waiting[v.SKU] == 0 {
			continue // a variant on sale while buyers wait for another is a drop's normal state
		}
		// Units in the variant's stock while buyers wait for it are a
		// drift; units held for its head whose quantity they cover (the
		// step that held them ran out of order ids) are served silently.
		left := c.Variants[v.SKU]
		handed, err := r.handOver(ctx, sale, v.SKU, min(max(left, c.ForWaiting), waiting[v.SKU], maxHandOver))
		if err != nil {
			return drifts, err
		}
		if left > 0 {
			report(seckill.Drift{Kind: seckill.DriftStockWhileWaiting, SaleID: saleID, Fixed: handed > 0,
				Detail: fmt.Sprintf("variant %s: %d units in stock while %d buyers waited for it; %d served", v.SKU, left, waiting[v.SKU], handed)})
		}
	}
	return drifts, nil
}

// handOver serves up to n buyers waiting for sale's variant sku from its
// stock and the units held for them (redisstore's HandOver), each with a
// fresh order id.
func (r *Reconciler) handOver(ctx context.Context, sale *seckill.Sale, sku string, n int64) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	ids := make([]int64, n)
	for i := range ids {
		var err error
		if ids[i], err = r.IDs.Next(); err != nil {
			return 0, err
		}
	}
	terms, _ := seckill.TermsOf(*sale, sku)
	return r.Redis.HandOver(ctx, sale.ID, sku, terms, ids)
}

// applyRestocks runs the Redis half of each of sale's restocks recorded
// more than grace ago that the database does not know applied, and marks
// those Redis now holds (or, the sale having ended unloaded, never will)
// applied. A restock that cannot be placed is a drift of its own; the
// next pass tries it again.
func (r *Reconciler) applyRestocks(ctx context.Context, sale *seckill.Sale, grace time.Duration) ([]seckill.Drift, error) {
	pending, err := r.Store.UnappliedRestocks(ctx, sale.ID, time.Now().Add(-grace))
	if err != nil || len(pending) == 0 {
		return nil, err
	}
	var drifts []seckill.Drift
	for _, rs := range pending {
		terms, ok := seckill.TermsOf(*sale, rs.SKU)
		if !ok {
			drifts = append(drifts, r.checkFailed(sale.ID, 0, "apply a restock", fmt.Errorf("restock %d names no variant %q", rs.ID, rs.SKU)))
			continue
		}
		res, err := r.Redis.Restock(ctx, rs, terms, r.IDs.Next)
		// Re-warm loads only open sales: one that ended while Redis did not
		// hold it is never loaded again, and sells nothing more.
		moot := res.Outcome == seckill.RestockNotWarmed && !time.Now().Before(sale.EndsAt)
		if !res.Applied() && !moot {
			if err != nil {
				drifts = append(drifts, r.checkFailed(sale.ID, 0, fmt.Sprintf("apply restock %d", rs.ID), err))
				continue
			}
			drifts = append(drifts, r.noted(seckill.Drift{Kind: seckill.DriftRestockUnapplied, SaleID: sale.ID,
				Detail: fmt.Sprintf("restock %d (%d units of %s, %s ago) waits for the sale's stock to be loaded into Redis again",
					rs.ID, rs.Added, rs.SKU, time.Since(rs.At).Round(time.Second))}))
			continue
		}
		if err := r.Store.MarkRestockApplied(ctx, sale.ID, rs.ID); err != nil {
			drifts = append(drifts, r.checkFailed(sale.ID, 0, fmt.Sprintf("mark restock %d applied", rs.ID), err))
			continue
		}
		done := fmt.Sprintf("placed now, %d to waiting buyers", len(res.HandedTo))
		switch {
		case moot:
			done = "the sale ended while Redis did not hold it: nothing left to place"
		case res.Outcome == seckill.RestockAppliedBefore:
			done = "Redis had placed them; marked applied"
		case err != nil:
			done += fmt.Sprintf(" (a move left in flight: %v)", err)
		}
		drifts = append(drifts, r.noted(seckill.Drift{Kind: seckill.DriftRestockUnapplied, SaleID: sale.ID, Fixed: true,
			Detail: fmt.Sprintf("restock %d (%d units of %s, %s ago) was not applied in Redis; %s",
				rs.ID, rs.Added, rs.SKU, time.Since(rs.At).Round(time.Second), done)}))
	}
	return drifts, nil
}

// maxStrayPayments bounds the payments no sale's pass reaches that one
// pass delivers (the next pass delivers the rest).
const maxStrayPayments = 500

// strayPayments delivers again the payment events recorded longer than
// the grace ago and never delivered that no sale's pass reaches: those of
// orders that have no row, and those of orders whose sale ended at or
// before settlingSince. For an unwritten order, while it may still come
// (Redis holds its admission, or it was admitted within
// delivery.PendingWindow) delivery keeps them; after, it refunds a
// successful one, for an order that can never be honoured. A written
// order of a sale that stopped settling is decided, so its payment is
// refunded (or applied to the order the saga still waits on).
func (r *Reconciler) strayPayments(ctx context.Context, settlingSince time.Time) ([]seckill.Drift, error) {
	events, err := r.Store.UndeliveredStrayPaymentEvents(ctx, settlingSince, time.Now().Add(-r.grace()), maxStrayPayments)
	if err != nil {
		return nil, err
	}
	var drifts []seckill.Drift
	for _, e := range events {
		outcome, err := r.Delivery.Deliver(ctx, e.Signal(), e.OrderID)
		if errors.Is(err, seckill.ErrPaymentNotYet) {
			continue // its order may still come
		}
		drifts = append(drifts, r.noted(seckill.Drift{Kind: seckill.DriftPaymentUndelivered, OrderID: e.OrderID, Fixed: err == nil,
			Detail: fmt.Sprintf("payment event %s, which no settling sale's pass reaches; delivered now: %s", e.ID, outcome)}))
	}
	return drifts, nil
}

// grace is Grace, or DefaultGrace when unset.
func (r *Reconciler) grace() time.Duration {
	if r.Grace <= 0 {
		return DefaultGrace
	}
	return r.Grace
}

// maxHandOver bounds the units one pass hands to a sale's waitlist (the
// next pass hands the rest), so one script stays short.
const maxHandOver = 256

// release forgets a closed order's claim and gives give of its units
// (item) back as the saga would: to the first waiting buyers, or the stock.
func (r *Reconciler) release(ctx context.Context, saleID int64, user string, orderID int64, item seckill.Item, give int) (bool, error) {
	item = item.OrDefault()
	var next *seckill.NextOrder
	if give > 0 {
		sale, err := r.Store.Sale(ctx, saleID)
		if err != nil {
			return false, err
		}
		terms, ok := seckill.TermsOf(*sale, item.SKU)
		if !ok {
			return false, fmt.Errorf("sale %d has no variant %q", saleID, item.SKU)
		}
		next = &seckill.NextOrder{Terms: terms, Units: give}
		for range min(give, item.Quantity) {
			id, err := r.IDs.Next()
			if err != nil {
				return false, err
			}
			next.IDs = append(next.IDs, id)
		}
	}
	res, err := r.Redis.Release(ctx, saleID, user, orderID, item, next)
	return res.Now, err
}

// Activities exposes the reconciler to the Reconcile workflow.
type Activities struct {
	R *Reconciler
}

// ReconcileAll reconciles every settling sale and returns what it found.
// Safe to repeat: each fix checks the state it fixes first.
func (a *Activities) ReconcileAll(ctx context.Context) ([]seckill.Drift, error) {
	return a.R.All(ctx)
}
