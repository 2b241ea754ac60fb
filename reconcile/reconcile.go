// Package reconcile compares, for every sale still settling, what Redis,
// Postgres and Temporal each believe, fixes what is safe to fix, and
// reports every drift as a metric and a structured log line. A Temporal
// Schedule runs it every minute (visible in the Temporal UI as
// "seckill-reconcile").
//
// What it fixes, and why that is safe:
//
//   - an admitted claim (in Redis) with no order row and no saga after a
//     grace period (its outbox entry was lost): start its saga, with the
//     relay's workflow ID and options, so a late relay finds it started;
//
//   - an unsettled order (QUEUED or AWAITING_PAYMENT) with no saga in
//     Temporal (Temporal lost its state): start its saga again; it reads
//     the order as it stands and resumes, doing nothing twice;
//
//   - a claim naming an order that is CLOSED (its release was lost to a
//     re-warm from an older snapshot): release it as the saga would have;
//
//   - an active (not CLOSED) order whose user has no claim in Redis: write
//     it back;
//
//   - Redis remaining above Postgres available (impossible in normal
//     operation: admission takes from Redis first and compensation gives
//     to Postgres first): lower Redis to the database's figure, only if no
//     claim or release moved it meanwhile. Redis is never raised.
//
//   - a payment event recorded while its order's saga could not take it
//     (not started yet, or being restarted): deliver it now.
//
// What it only reports: a saga that ended while its order is unsettled.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/lua"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/store"
	"github.com/seckill/seckill/workflows"
)

// Reconciler holds the three stores.
type Reconciler struct {
	Store     *store.Store
	Scripts   *lua.Scripts
	Temporal  client.Client
	TaskQueue string
	Log       *slog.Logger
	// Grace is how old an admitted claim without a saga must be before it
	// counts as lost [30s]: younger ones may still be in the relay's hands.
	Grace time.Duration
	// Delivery hands undelivered payment events to their sagas.
	Delivery *delivery.Deliverer

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

// All reconciles every sale open now or ended within the last day.
func (r *Reconciler) All(ctx context.Context) ([]seckill.Drift, error) {
	sales, err := r.Store.SettlingSales(ctx, time.Now().Add(-24*time.Hour))
	if err != nil {
		return nil, err
	}
	var all []seckill.Drift
	for _, s := range sales {
		d, err := r.Sale(ctx, s.ID)
		all = append(all, d...)
		if err != nil {
			return all, fmt.Errorf("reconcile sale %d: %w", s.ID, err)
		}
	}
	return all, nil
}

// Sale reconciles one sale.
func (r *Reconciler) Sale(ctx context.Context, saleID int64) ([]seckill.Drift, error) {
	grace := r.Grace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	var drifts []seckill.Drift
	report := func(d seckill.Drift) {
		drifts = append(drifts, d)
		if r.drifts != nil {
			r.drifts.WithLabelValues(d.Kind, strconv.FormatBool(d.Fixed)).Inc()
		}
		r.Log.Warn("reconcile drift", "kind", d.Kind, "saleID", d.SaleID, "orderID", d.OrderID, "fixed", d.Fixed, "detail", d.Detail)
	}

	// Claims admitted in Redis whose saga never started, and claims that
	// outlived their order.
	claims, err := r.Scripts.Claims(ctx, saleID)
	if err != nil {
		return drifts, err
	}
	for user, orderID := range claims {
		o, err := r.Store.Order(ctx, orderID)
		switch {
		case err == nil && o.Status == seckill.StatusClosed:
			// The order closed but its claim stayed (its release met a
			// Redis being re-warmed from an older snapshot): release it
			// now, returning the unit the database has back, exactly as
			// the saga would have.
			released, err := r.Scripts.Release(ctx, saleID, user, orderID, o.CloseReason != seckill.CloseSoldOut)
			if err != nil {
				return drifts, err
			}
			if released {
				report(seckill.Drift{Kind: seckill.DriftStaleClaim, SaleID: saleID, OrderID: orderID, Fixed: true,
					Detail: fmt.Sprintf("claim of %s names an order CLOSED with %s; released", user, o.CloseReason)})
			}
			continue
		case err == nil:
			continue
		case !errors.Is(err, store.ErrNotFound):
			return drifts, err
		}
		if time.Since(idgen.Time(orderID)) < grace {
			continue
		}
		_, found, err := r.saga(ctx, orderID)
		if err != nil {
			return drifts, err
		}
		if found { // started: it will write its row
			continue
		}
		err = r.start(ctx, seckill.SagaInput{OrderID: orderID, SaleID: saleID, UserID: user, AdmittedAt: idgen.Time(orderID)})
		report(seckill.Drift{Kind: seckill.DriftClaimWithoutSaga, SaleID: saleID, OrderID: orderID, Fixed: err == nil,
			Detail: fmt.Sprintf("claim of %s admitted %s ago has no saga", user, time.Since(idgen.Time(orderID)).Round(time.Second))})
		if err != nil {
			return drifts, err
		}
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
			// order, so write it back (never over another claim).
			restored, err := r.Scripts.RestoreClaim(ctx, saleID, o.UserID, o.ID)
			if err != nil {
				return drifts, err
			}
			report(seckill.Drift{Kind: seckill.DriftClaimMissing, SaleID: saleID, OrderID: o.ID, Fixed: restored,
				Detail: fmt.Sprintf("order of %s is %s but Redis has no claim for it", o.UserID, o.Status)})
		}
		if o.Status == seckill.StatusPaid {
			continue
		}
		running, found, err := r.saga(ctx, o.ID)
		if err != nil {
			return drifts, err
		}
		switch {
		case found && running:
		case found:
			// The saga may have settled the order since it was read.
			if now, err := r.Store.Order(ctx, o.ID); err == nil && now.Status.Terminal() {
				continue
			}
			report(seckill.Drift{Kind: seckill.DriftSagaEndedEarly, SaleID: saleID, OrderID: o.ID,
				Detail: fmt.Sprintf("order is %s but its saga has ended", o.Status)})
		default:
			err := r.start(ctx, seckill.SagaInput{OrderID: o.ID, SaleID: saleID, UserID: o.UserID, AdmittedAt: o.CreatedAt})
			report(seckill.Drift{Kind: seckill.DriftOrderWithoutSaga, SaleID: saleID, OrderID: o.ID, Fixed: err == nil,
				Detail: fmt.Sprintf("order is %s with no saga; saga restarted to resume it", o.Status)})
			if err != nil {
				return drifts, err
			}
		}
	}

	// Payment events recorded while their order's saga could not take them.
	events, err := r.Store.UndeliveredPaymentEvents(ctx, saleID, time.Now().Add(-grace))
	if err != nil {
		return drifts, err
	}
	for _, e := range events {
		outcome, err := r.Delivery.Deliver(ctx, seckill.PaymentEvent{
			EventID: e.ID, Type: seckill.PaymentEventType(e.Type), PaymentIntentID: e.PaymentIntentID,
			AmountCents: e.AmountCents, Currency: e.Currency,
		}, e.OrderID)
		if errors.Is(err, delivery.ErrNotYet) {
			continue // its saga is being restarted above; next pass
		}
		report(seckill.Drift{Kind: seckill.DriftPaymentUndelivered, SaleID: saleID, OrderID: e.OrderID, Fixed: err == nil,
			Detail: fmt.Sprintf("payment event %s recorded but not delivered; delivered now: %s", e.ID, outcome)})
		if err != nil {
			return drifts, err
		}
	}

	// Redis above the database: lower it, never raise it.
	seen, warmed, err := r.Scripts.Remaining(ctx, saleID)
	if err != nil || !warmed {
		return drifts, err // not warmed: the re-warmer's job
	}
	sale, err := r.Store.Sale(ctx, saleID)
	if err != nil {
		return drifts, err
	}
	if seen > sale.Stock.Available {
		lowered, err := r.Scripts.LowerRemaining(ctx, saleID, seen, sale.Stock.Available)
		if err != nil {
			return drifts, err
		}
		report(seckill.Drift{Kind: seckill.DriftRedisAboveDB, SaleID: saleID, Fixed: lowered,
			Detail: fmt.Sprintf("Redis remaining %d > database available %d", seen, sale.Stock.Available)})
	}
	return drifts, nil
}

// saga reports whether order's saga exists and whether it runs.
func (r *Reconciler) saga(ctx context.Context, orderID int64) (running, found bool, err error) {
	desc, err := r.Temporal.DescribeWorkflowExecution(ctx, seckill.OrderWorkflowID(orderID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("describe saga of order %d: %w", orderID, err)
	}
	return desc.GetWorkflowExecutionInfo().GetCloseTime() == nil, true, nil
}

func (r *Reconciler) start(ctx context.Context, in seckill.SagaInput) error {
	_, err := r.Temporal.ExecuteWorkflow(ctx, workflows.StartOptions(in, r.TaskQueue), seckill.OrderSagaWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
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
