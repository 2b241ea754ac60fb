// Package activities holds the OrderSaga's side effects. Every activity is
// idempotent by order id (or event id): Temporal may run it more than once,
// and a second run finds the work done and returns the same answer.
// Business refusals are non-retryable ApplicationErrors typed with the
// seckill.ErrType* constants; every other error is retried.
package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/tracing"
)

// Activities holds the activities' dependencies.
type Activities struct {
	store    *store.Store
	redis    Redis
	drawPass Admitter
	provider seckill.PaymentProvider
	intents  seckill.PaymentIntents // nil: the provider needs no payment object per order
	ids      IDs
	// shop tells the shop's delivery of each transition; nil when no
	// SECKILL_EVENTS_URL is set. send posts an event to the shop.
	shop ShopTeller
	send ShopSender
	// stockSlots bounds how many transactions touch the sales rows at once:
	// one sale's row is a single hot row, and past a few concurrent
	// updaters Postgres spends its time on lock waits, not commits.
	stockSlots chan struct{}
	// settleSlice is how long one SettleDraw call goes on settling batch
	// after batch (0: one batch a call; WithSettleSlice).
	settleSlice time.Duration
	// beacon reads the rounds draws wait for (nil: none, so a draw that
	// waits for one cannot run); chains are the chains trusted besides
	// the pinned ones (WithBeacon).
	beacon Beacon
	chains []beacon.Chain
}

// Redis is what the activities ask of the Redis hot path (redisstore.Store):
// the release of a claim, the draw's clock, claims and moves, and news of an
// order's change for the API's event streams. Every method is safe to repeat.
type Redis interface {
	// KnowSegments tells Redis how many stock segments a sale has, as the
	// database says.
	KnowSegments(saleID int64, n int)
	// KnowSKUs tells Redis the skus of a sale's variants.
	KnowSKUs(saleID int64, skus []string)
	// Admission finds an admitted order among the admissions of saleIDs.
	Admission(ctx context.Context, orderID int64, saleIDs []int64) (seckill.Admission, bool, error)
	// Release forgets userID's claim on saleID if it still names orderID
	// and, when next is not nil, gives the unit back: to the first waiting
	// buyer as order next.ID, or to the stock. An error means the outcome
	// is unknown: call again.
	Release(ctx context.Context, saleID int64, userID string, orderID int64, item seckill.Item, next *seckill.NextOrder) (seckill.Released, error)
	// ClaimOf is the order userID's claim on saleID names; 0 when none.
	ClaimOf(ctx context.Context, saleID int64, userID string) (int64, error)
	// Now is Redis' clock, the one its scripts decide "started" and
	// "ended" by, on the server that holds saleID.
	Now(ctx context.Context, saleID int64) (time.Time, error)
	// FinishMoves completes saleID's moves of units between its segments
	// in flight for longer than olderThan (their mover stopped), giving a
	// parked released unit to the first waiting buyer as an order numbered
	// by nextID, and returns how many it finished.
	FinishMoves(ctx context.Context, saleID int64, termsOf func(sku string) seckill.Terms, olderThan time.Duration, nextID func() (int64, error)) (int, error)
	// OpenClaims opens a sale whose draw is done to claims and joins from
	// startsAt on.
	OpenClaims(ctx context.Context, saleID int64, startsAt time.Time) error
	// PublishOrderChange tells the API's event streams that orderID's row
	// changed; best effort (a stream missing it polls).
	PublishOrderChange(ctx context.Context, orderID int64) error
}

// Admitter is how the draw admits and queues its entrants: Redis'
// claims and waitlist joins as the draw's own (redisstore.Store.ForDraw),
// which pass the start that holds a drawn sale's open claims back and are
// not rate limited. An error means the outcome is unknown: call again
// (the answer of a repeat is ALREADY_CLAIMED or ALREADY_WAITING).
type Admitter interface {
	Claim(ctx context.Context, saleID int64, userID string, orderID int64, idempotencyKey string, terms seckill.Terms, item seckill.Item) (seckill.ClaimResult, error)
	Join(ctx context.Context, saleID int64, userID string, item seckill.Item, maxEntries int, orderID int64, terms seckill.Terms) (seckill.JoinResult, error)
	// PlaceOf is where a queued entrant waits, as the database keeps it
	// (the durable waitlist); ok false when they wait nowhere.
	PlaceOf(ctx context.Context, saleID int64, userID string) (e seckill.WaitlistEntry, ok bool, err error)
}

// ShopTeller hands an order event to its delivery, the order's ShopEvents
// workflow (saga.Client.TellShop).
type ShopTeller interface {
	TellShop(ctx context.Context, ev seckill.ShopEvent) error
}

// ShopSender posts an order event to the shop (shopevents.Sender).
type ShopSender interface {
	Send(ctx context.Context, ev seckill.ShopEvent) error
}

// Option adds to what New's activities do.
type Option func(*Activities)

// WithSettleSlice makes one SettleDraw call settle batch after batch for
// up to d (each batch recorded as it is settled), so a draw pays
// Temporal's round trips once per slice, not once per batch: in a draw of
// 10,000 winners the sagas each batch started held the draw's next step
// back 20 to 100 s on this machine's Temporal (BENCHMARKS.md).
func WithSettleSlice(d time.Duration) Option {
	return func(a *Activities) { a.settleSlice = d }
}

// WithShop makes the activities tell the shop every order transition
// (docs/API.md "Order events to the shop"): tell hands each event to its
// delivery, send posts it.
func WithShop(tell ShopTeller, send ShopSender) Option {
	return func(a *Activities) { a.shop, a.send = tell, send }
}

// IDs hands out fresh order ids (an idgen.Generator): a released unit
// that goes to a waiting buyer becomes a new order. Next's error is
// temporary (the worker's id node lease is not confirmed): the activity
// returns it, to be retried.
type IDs interface{ Next() (int64, error) }

// New returns the activities. redis is the Redis hot path, and drawPass
// the same as the draw admits with (redisstore.Store's ForDraw); maxStockTx
// bounds concurrent stock transactions in this worker (at least 1);
// provider refunds payments,
// and, when it also makes a payment object per order (it implements
// seckill.PaymentIntents, as Stripe does), the saga makes and cancels it.
func New(st *store.Store, redis Redis, drawPass Admitter, provider seckill.PaymentProvider, ids IDs, maxStockTx int, opts ...Option) *Activities {
	a := &Activities{store: st, redis: redis, drawPass: drawPass, provider: provider, ids: ids, stockSlots: make(chan struct{}, max(1, maxStockTx))}
	a.intents, _ = provider.(seckill.PaymentIntents)
	for _, o := range opts {
		o(a)
	}
	return a
}

func (a *Activities) withStockSlot(ctx context.Context, fn func() error) error {
	select {
	case a.stockSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.stockSlots }()
	return fn()
}

// StartOrder is the saga's first step, one transaction: it writes the
// admitted claim as an order with the pay_by fixed at admission and takes
// its unit from the database's available stock (AWAITING_PAYMENT), or
// closes it as SOLD_OUT when the database has none (or as
// CloseSecondActiveOrder, holding no unit, when the user holds another
// active order). It returns
// the order
// as it stands (an earlier run's order is taken as it is) and the
// payments recorded for it that no saga has acted on, so a buyer who paid
// before the saga ran is honoured. Idempotent by order id. Non-retryable:
// SaleNotFound. Run as a local activity: it is short, and its result is
// recorded in the workflow task that asked for it.
func (a *Activities) StartOrder(ctx context.Context, in seckill.StartOrderInput) (seckill.StartOrderResult, error) {
	item, err := a.itemOf(ctx, in)
	if err != nil {
		return seckill.StartOrderResult{}, err
	}
	var o *seckill.Order
	err = a.withStockSlot(ctx, func() (err error) {
		o, _, err = a.store.StartOrder(ctx, store.NewOrder{
			ID: in.OrderID, SaleID: in.SaleID, UserID: in.UserID, CreatedAt: in.AdmittedAt, PayBy: in.PayBy,
			TraceParent: tracing.TraceParent(ctx), Drawn: in.Drawn, Item: item,
		})
		return err
	})
	switch {
	case errors.Is(err, seckill.ErrNotFound):
		return seckill.StartOrderResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("sale %d does not exist", in.SaleID), seckill.ErrTypeSaleNotFound, err)
	case errors.Is(err, store.ErrVariantNotFound):
		// Redis admits only the sale's variants: an input naming another
		// is not one a retry can fix.
		return seckill.StartOrderResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("sale %d has no variant %q", in.SaleID, in.Item.OrDefault().SKU), seckill.ErrTypeSaleNotFound, err)
	case errors.Is(err, store.ErrActiveOrderExists):
		// Redis admitted a second active claim for this user (possible only
		// after Redis lost its claims); the database refused it, and wrote it
		// CLOSED (CloseSecondActiveOrder) without a unit. Its payments are handed back
		// below like any closed order's, so the saga refunds them.
	case err != nil && !errors.Is(err, store.ErrSoldOut):
		return seckill.StartOrderResult{}, err
	}
	a.changed(ctx, in.OrderID)
	if err := a.tellShopState(ctx, o); err != nil {
		return seckill.StartOrderResult{}, err
	}
	res := seckill.StartOrderResult{
		Status: o.Status, CloseReason: o.CloseReason, AmountCents: o.AmountCents, Currency: o.Currency,
		Intents: a.intents != nil, PaidWith: o.PaidWith, Item: o.Item, GiveBack: o.GiveBack,
	}
	if o.PayBy != nil {
		res.PayBy = o.PayBy.UTC()
	}
	events, err := a.store.OrderPaymentEvents(ctx, in.OrderID)
	if err != nil {
		return seckill.StartOrderResult{}, err
	}
	for _, e := range events {
		if e.Pending() {
			res.Payments = append(res.Payments, e.Signal())
		} else {
			res.Handled = append(res.Handled, e.ID)
		}
	}
	return res, nil
}

// ReleaseOrder is compensation, DB first and Redis second: it closes the
// order with its reason and gives its locked unit back to the database's
// available stock (recording the failed payment that closed it, if any, in
// the same transaction), then forgets the user's claim in Redis and gives
// the unit back there: to the sale's first waiting buyer, as a new order
// whose saga the relay starts, or with nobody waiting to the stock. Each half is idempotent (the closed row, the claim
// record naming this order), so a retry after either half does nothing
// twice. It returns the order's close reason as stored (an order closed
// before keeps its own). Non-retryable: OrderPaid (the order was paid
// meanwhile, by the PaymentIntent in the error's details; nothing is
// released), PaidInTime (a payment that counts was
// recorded for the order, its event in the error's details: the order is
// to be paid, nothing is released).
func (a *Activities) ReleaseOrder(ctx context.Context, in seckill.ReleaseOrderInput) (seckill.CloseReason, error) {
	var o *seckill.Order
	err := a.withStockSlot(ctx, func() (err error) {
		o, err = a.store.CloseUnpaid(ctx, in.OrderID, in.Reason, in.EventID, in.IntentID, in.ClosedAt)
		return err
	})
	if paid, ok := errors.AsType[*store.PaidInTimeError](err); ok {
		return "", temporal.NewNonRetryableApplicationError(paid.Error(), seckill.ErrTypePaidInTime, err, paid.Event.Signal())
	}
	if errors.Is(err, store.ErrOrderPaid) {
		// Paid already (by an earlier attempt of this very step, whose
		// workflow task was then retried): say with which PaymentIntent,
		// so another report of that payment is not taken for a second one.
		paid, rerr := a.store.Order(ctx, in.OrderID)
		if rerr != nil {
			return "", rerr
		}
		return "", temporal.NewNonRetryableApplicationError("the order is paid", seckill.ErrTypeOrderPaid, err, paid.PaidWith)
	}
	if err != nil {
		return "", refusal(err)
	}
	a.changed(ctx, in.OrderID)
	// An order closed as SOLD_OUT never held a database unit: Redis gets
	// none back either.
	if err := a.release(ctx, in.SaleID, in.UserID, in.OrderID, o.Item, unitsBack(o)); err != nil {
		return "", err
	}
	if err := a.tellShop(ctx, in.OrderID, seckill.ShopOrderClosed); err != nil {
		return "", err
	}
	return o.CloseReason, nil
}

// ConfirmPayment makes the order PAID and its unit sold, and records the
// payment event APPLIED, in one transaction. Idempotent by order id.
// Non-retryable: OrderClosed (the order was closed meanwhile: the payment
// cannot be applied, and the saga refunds it).
func (a *Activities) ConfirmPayment(ctx context.Context, in seckill.ConfirmPaymentInput) error {
	err := a.withStockSlot(ctx, func() error {
		_, err := a.store.ConfirmPayment(ctx, in.OrderID, in.EventID, in.PaymentIntentID, in.PaidAt)
		return err
	})
	if err != nil {
		return refusal(err)
	}
	a.changed(ctx, in.OrderID)
	return a.tellShop(ctx, in.OrderID, seckill.ShopOrderPaid)
}

// ReleaseClaim forgets the user's claim in Redis and, when asked, gives
// the unit back (to the waitlist first, as ReleaseOrder). It acts only
// while the claim still names this order, so it happens at most once per
// order.
func (a *Activities) ReleaseClaim(ctx context.Context, in seckill.ReleaseClaimInput) error {
	give := in.GiveBack
	if in.ReturnUnit {
		give = in.Item.OrDefault().Quantity
	}
	return a.release(ctx, in.SaleID, in.UserID, in.OrderID, in.Item, give)
}

// itemOf is the item order in.OrderID holds: its input's, or, for an
// input without one, its admission's in Redis. A relay of before v4 (a
// worker not yet upgraded while the APIs are) starts sagas without the
// item its entry carries; the admission record keeps it. No record (an
// admission of before v4, or one Redis lost): one unit of "default", all
// an order was before v4.
func (a *Activities) itemOf(ctx context.Context, in seckill.StartOrderInput) (seckill.Item, error) {
	if in.Item != (seckill.Item{}) {
		return in.Item.OrDefault(), nil
	}
	adm, ok, err := a.redis.Admission(ctx, in.OrderID, []int64{in.SaleID})
	if err != nil {
		return seckill.Item{}, fmt.Errorf("read the admission of order %d: %w", in.OrderID, err)
	}
	if !ok {
		return seckill.DefaultItem, nil
	}
	return adm.Item.OrDefault(), nil
}

// unitsBack is how many of closed order o's units Redis gets back: all of
// them, but for an order the database refused as SOLD_OUT, which held
// none: only what the database had of them (Order.GiveBack).
func unitsBack(o *seckill.Order) int {
	if o.CloseReason == seckill.CloseSoldOut {
		return o.GiveBack
	}
	return o.Item.OrDefault().Quantity
}

// release is the Redis half of both: it forgets the claim, and each of
// the give units of the order's (item) given back becomes a fresh order on
// its variant's terms when a buyer waits for one. The new orders' ids (one
// per unit) are drawn on every attempt, and used only by the attempt that
// releases.
func (a *Activities) release(ctx context.Context, saleID int64, userID string, orderID int64, item seckill.Item, give int) error {
	item = item.OrDefault()
	// The sale says how many stock parts it has (the buyer's claim is in
	// one of them) and on what terms a waiting buyer gets the unit.
	sale, err := a.store.Sale(ctx, saleID)
	if err != nil {
		return fmt.Errorf("read sale %d: %w", saleID, err)
	}
	a.redis.KnowSegments(saleID, sale.StockSegments)
	a.redis.KnowSKUs(saleID, sale.SKUs())
	var next *seckill.NextOrder
	if give > 0 {
		terms, ok := seckill.TermsOf(*sale, item.SKU)
		if !ok {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sale %d has no variant %q", saleID, item.SKU), "VariantNotFound", nil)
		}
		next = &seckill.NextOrder{Terms: terms, Units: give}
		for range min(give, item.Quantity) {
			id, err := a.ids.Next()
			if err != nil {
				return err
			}
			next.IDs = append(next.IDs, id)
		}
	}
	res, err := a.redis.Release(ctx, saleID, userID, orderID, item, next)
	for _, h := range res.HandedTo {
		activity.GetLogger(ctx).Info("unit handed to the waitlist", "fromOrder", orderID,
			"orderID", h.OrderID, "userID", h.UserID, "payBy", h.PayBy)
	}
	return err
}

// RecordPaymentOutcome stores what a payment event did. Idempotent by event
// id (the last outcome written wins, and the saga writes one per event).
func (a *Activities) RecordPaymentOutcome(ctx context.Context, in seckill.PaymentOutcomeInput) error {
	err := a.store.SetPaymentOutcome(ctx, in.EventID, in.Outcome, true)
	return err
}

// RefundPayment gives back the payment of one provider event: it records
// the refund PENDING with the event's outcome (why it is refunded), asks
// the provider (idempotency key: the event id) and
// marks it SUCCEEDED. Idempotent by event id: a repeat finds the refund
// done, or asks the provider again with the same key, which refunds once.
func (a *Activities) RefundPayment(ctx context.Context, in seckill.RefundInput) error {
	status, err := a.store.StartRefund(ctx, store.NewRefund{
		EventID: in.EventID, OrderID: in.OrderID, PaymentIntentID: in.PaymentIntentID,
		AmountCents: in.AmountCents, Currency: in.Currency, Reason: in.Reason,
	})
	if err != nil {
		return err
	}
	if status == seckill.RefundSucceeded {
		// Done by an earlier attempt, which may have stopped before
		// telling the shop.
		return a.tellShop(ctx, in.OrderID, seckill.ShopOrderRefunded)
	}
	id, err := a.provider.Refund(ctx, seckill.RefundRequest{
		IdempotencyKey: in.EventID, PaymentIntentID: in.PaymentIntentID, AmountCents: in.AmountCents, Currency: in.Currency,
	})
	if err != nil {
		return fmt.Errorf("refund %s at the provider: %w", in.EventID, err)
	}
	if err := a.store.FinishRefund(ctx, in.EventID, id); err != nil {
		return err
	}
	a.changed(ctx, in.OrderID)
	return a.tellShop(ctx, in.OrderID, seckill.ShopOrderRefunded)
}

// MakePaymentIntent makes the order's payment object at the provider
// (Stripe: a PaymentIntent for the order's amount, metadata.order_id, one
// idempotency key from the order id, the same the buyer's POST
// /orders/{id}/payment uses, and one of its own for each retry after a
// failure) and records it; the one recorded first is returned, and one
// made but not recorded is cancelled. Idempotent by order id.
func (a *Activities) MakePaymentIntent(ctx context.Context, in seckill.IntentInput) (seckill.Intent, error) {
	if a.intents == nil {
		return seckill.Intent{}, temporal.NewNonRetryableApplicationError("the payment provider makes no payment objects", "NoPaymentIntents", nil)
	}
	if saved, err := a.store.PaymentIntentOf(ctx, in.OrderID); err != nil || saved != nil {
		if saved != nil {
			return *saved, nil
		}
		return seckill.Intent{}, err
	}
	made, err := a.intents.CreateIntent(ctx, seckill.IntentRequest{OrderID: in.OrderID, AmountCents: in.AmountCents, Currency: in.Currency,
		Retry: int(activity.GetInfo(ctx).Attempt) - 1})
	if err != nil {
		return seckill.Intent{}, err
	}
	saved, err := a.store.SavePaymentIntent(ctx, in.OrderID, made)
	if err != nil {
		return seckill.Intent{}, err
	}
	a.changed(ctx, in.OrderID)
	if saved.ID != made.ID {
		// The buyer's request recorded another first (it asked under the
		// first key while this retry asked under its own): nobody can pay
		// this one, whose client secret is shown to no one; cancel it all
		// the same.
		if _, err := a.intents.CancelIntent(ctx, in.OrderID, made.ID); err != nil {
			activity.GetLogger(ctx).Warn("cancel a second payment intent", "orderID", in.OrderID, "paymentIntentID", made.ID, "error", err)
		}
	}
	return saved, nil
}

// CancelPaymentIntent cancels the order's payment object before its unit
// is given back, so no payment can be taken for it after. The answer says
// IntentSucceeded when the provider had taken the payment first: the
// order is then honoured. Safe to repeat.
func (a *Activities) CancelPaymentIntent(ctx context.Context, in seckill.IntentInput) (seckill.Intent, error) {
	if a.intents == nil {
		return seckill.Intent{}, temporal.NewNonRetryableApplicationError("the payment provider makes no payment objects", "NoPaymentIntents", nil)
	}
	return a.intents.CancelIntent(ctx, in.OrderID, in.IntentID)
}

// refusal turns the store's refusals of an order transition into the
// non-retryable, typed errors the saga handles; any other error is
// returned as it is, to be retried.
func refusal(err error) error {
	switch {
	case errors.Is(err, store.ErrSoldOut):
		return temporal.NewNonRetryableApplicationError("no available unit in the database", seckill.ErrTypeSoldOut, err)
	case errors.Is(err, store.ErrOrderClosed):
		return temporal.NewNonRetryableApplicationError("the order is closed", seckill.ErrTypeOrderClosed, err)
	case errors.Is(err, store.ErrOrderPaid):
		return temporal.NewNonRetryableApplicationError("the order is paid", seckill.ErrTypeOrderPaid, err)
	}
	return err
}

// changed tells the API's event streams that the order's row changed. Best
// effort: a lost message delays a stream by one poll, and is no reason to
// run the activity again.
func (a *Activities) changed(ctx context.Context, orderID int64) {
	if err := a.redis.PublishOrderChange(ctx, orderID); err != nil {
		activity.GetLogger(ctx).Warn("publish order change", "orderID", orderID, "error", err)
	}
}
