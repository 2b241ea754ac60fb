package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// Errors of the order transitions.
var (
	// ErrSoldOut: the database had fewer available units of the order's
	// variant than its quantity; the order is CLOSED with reason SOLD_OUT.
	ErrSoldOut = errors.New("sold out in the database")
	// ErrActiveOrderExists: the user already has another active order for
	// the sale (the partial unique index refused this one).
	ErrActiveOrderExists = errors.New("user already has an active order for this sale")
	// ErrOrderClosed: the order is CLOSED and cannot be paid.
	ErrOrderClosed = errors.New("order is closed")
	// ErrOrderPaid: the order is PAID and cannot be closed.
	ErrOrderPaid = errors.New("order is paid")
	// ErrVariantNotFound: the sale has no variant of the sku asked for. It
	// is the domain's VARIANT_NOT_FOUND, so the API answers it as such.
	ErrVariantNotFound = &seckill.Error{Code: seckill.CodeVariantNotFound, Message: "the sale has no such variant"}
)

type orderRow struct {
	ID              int64 `gorm:"primaryKey;autoIncrement:false"`
	SaleID          int64
	UserID          string
	SKU             string `gorm:"column:sku"`
	Quantity        int
	SoldOutGiveBack int
	Status          string
	CloseReason     *string
	StockLocked     bool
	AmountCents     int64
	Currency        string
	PayBy           *time.Time
	AwaitingAt      *time.Time
	PaymentIntentID *string
	CreatedAt       time.Time
	PaidAt          *time.Time
	ClosedAt        *time.Time
	UpdatedAt       time.Time
	TraceParent     *string
	Drawn           bool
}

func (orderRow) TableName() string { return "orders" }

func (r *orderRow) order() *seckill.Order {
	o := &seckill.Order{
		ID:          r.ID,
		SaleID:      r.SaleID,
		UserID:      r.UserID,
		Item:        seckill.Item{SKU: r.SKU, Quantity: r.Quantity},
		GiveBack:    r.SoldOutGiveBack,
		Status:      seckill.OrderStatus(r.Status),
		AmountCents: r.AmountCents,
		Currency:    r.Currency,
		PayBy:       r.PayBy,
		CreatedAt:   r.CreatedAt,
		PaidAt:      r.PaidAt,
		ClosedAt:    r.ClosedAt,
		Drawn:       r.Drawn,
	}
	if r.CloseReason != nil {
		o.CloseReason = seckill.CloseReason(*r.CloseReason)
	}
	if r.PaymentIntentID != nil {
		o.PaidWith = *r.PaymentIntentID
	}
	if r.TraceParent != nil {
		o.TraceParent = *r.TraceParent
	}
	return o
}

// NewOrder is an admitted claim the saga writes down.
type NewOrder struct {
	ID        int64
	SaleID    int64
	UserID    string
	CreatedAt time.Time
	// PayBy is the deadline fixed at admission; zero derives it from
	// CreatedAt and the sale's payment timeout.
	PayBy time.Time
	// TraceParent is the saga's span when traced ("" otherwise).
	TraceParent string
	// Drawn: the sale's draw admitted this order.
	Drawn bool
	// Item is the variant and the units the order holds (the zero Item,
	// of inputs recorded before v4: seckill.DefaultItem).
	Item seckill.Item
}

// StartOrder is a saga's first step, in one transaction: it writes the
// admitted claim as an order of its item (n.Item: Quantity units of the
// variant SKU) at Quantity times the variant's price, with its pay_by, and
// moves those units of the variant from available to locked, making the
// order AWAITING_PAYMENT. The move is all or nothing, conditional on
// available >= quantity, so the database never oversells: refused, the
// order is CLOSED with SOLD_OUT in the same transaction, holding nothing,
// and ErrSoldOut is returned with it. ErrVariantNotFound (nothing
// written): the sale has no variant n.Item.SKU.
//
// Idempotent by order id: an order written before (by an earlier run) is
// taken as it stands. ErrActiveOrderExists: the user holds
// another active order of the sale (the partial unique index refused
// this one); the order is then written CLOSED as CloseSecondActiveOrder, holding no
// unit, and returned with the error. It returns the sale too.
func (s *Store) StartOrder(ctx context.Context, n NewOrder) (*seckill.Order, *seckill.Sale, error) {
	sale, err := s.Sale(ctx, n.SaleID)
	if err != nil {
		return nil, nil, err
	}
	item := n.Item.OrDefault()
	variant, ok := sale.Variant(item.SKU)
	if !ok {
		return nil, sale, fmt.Errorf("start order %d: sale %d has no variant %q: %w", n.ID, n.SaleID, item.SKU, ErrVariantNotFound)
	}
	payBy := n.PayBy.UTC()
	if n.PayBy.IsZero() {
		payBy = sale.PayBy(n.CreatedAt)
	}
	ins := &orderRow{
		ID: n.ID, SaleID: n.SaleID, UserID: n.UserID, SKU: item.SKU, Quantity: item.Quantity, Status: string(seckill.StatusQueued),
		AmountCents: int64(item.Quantity) * variant.PriceCents, Currency: sale.Currency, PayBy: &payBy,
		CreatedAt: n.CreatedAt.UTC(), UpdatedAt: time.Now().UTC(), Drawn: n.Drawn,
	}
	if n.TraceParent != "" {
		ins.TraceParent = &n.TraceParent
	}
	o, err := s.lockedOrder(ctx, n.ID, ins, func(tx *gorm.DB, row *orderRow) error {
		// An admitted buyer no longer waits (admit.lua takes them out of
		// their line): their row of the sale goes with the order's write,
		// so a re-warm does not put them back (hostile review R4). Only
		// when the order is written now (still QUEUED): a retry must not
		// delete the row of a join made since.
		if row.Status == string(seckill.StatusQueued) {
			if err := forgetWaitlistPlace(tx, row.SaleID, row.UserID); err != nil {
				return fmt.Errorf("start order %d: forget the waitlist place of %s: %w", row.ID, row.UserID, err)
			}
		}
		return lockUnits(tx, row, payBy)
	})
	if errors.Is(err, ErrActiveOrderExists) {
		// Written all the same, CLOSED without a unit: the
		// buyer can see it, and a payment made for it joins an order row
		// and is refunded like any payment for a closed order.
		now := time.Now().UTC()
		reason := string(seckill.CloseSecondActiveOrder)
		ins.Status, ins.CloseReason, ins.ClosedAt = string(seckill.StatusClosed), &reason, &now
		// Redis admitted them all the same, out of any line: their row
		// goes with the refused order's write, as an admitted one's does.
		err := s.transaction(ctx, func(tx *gorm.DB) error {
			res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoNothing: true}).Create(ins)
			if res.Error != nil {
				return fmt.Errorf("insert refused order %d: %w", n.ID, res.Error)
			}
			if res.RowsAffected == 0 {
				return nil // a retry: the row, if any, is of a join made since
			}
			return forgetWaitlistPlace(tx, n.SaleID, n.UserID)
		})
		if err != nil {
			return nil, sale, err
		}
		if o, err = s.Order(ctx, n.ID); err != nil {
			return nil, sale, err
		}
		return o, sale, ErrActiveOrderExists
	}
	return o, sale, err
}

// Order returns order id.
func (s *Store) Order(ctx context.Context, id int64) (*seckill.Order, error) {
	var row orderRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load order %d: %w", id, err)
	}
	return s.withExtras(ctx, row.order())
}

// withExtras adds what other tables hold about order o: its refund and
// its payment object.
func (s *Store) withExtras(ctx context.Context, o *seckill.Order) (*seckill.Order, error) {
	var err error
	if o.Refund, err = s.orderRefund(ctx, o.ID); err != nil {
		return nil, err
	}
	if o.Payment, err = s.PaymentIntentOf(ctx, o.ID); err != nil {
		return nil, err
	}
	return o, nil
}

// lockedOrder runs fn in a transaction holding the order's row lock, so
// the order's transitions are serialized whoever calls them. With insert,
// the row is first written in the same transaction unless it exists
// (ErrActiveOrderExists: the user's other active order refused it). fn may
// return ErrSoldOut after writing the refusal: the transaction still
// commits and ErrSoldOut is returned after the commit.
func (s *Store) lockedOrder(ctx context.Context, id int64, insert *orderRow, fn func(tx *gorm.DB, row *orderRow) error) (*seckill.Order, error) {
	var row orderRow
	soldOut := false
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		if insert != nil {
			err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoNothing: true}).Create(insert).Error
			if isUniqueViolation(err, "orders_one_active_per_user") {
				return ErrActiveOrderExists
			}
			if err != nil {
				return fmt.Errorf("insert order %d: %w", id, err)
			}
		}
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return seckill.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock order %d: %w", id, err)
		}
		err = fn(tx, &row)
		if errors.Is(err, ErrSoldOut) {
			soldOut = true
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if soldOut {
		return row.order(), ErrSoldOut
	}
	return row.order(), nil
}

// lockUnits moves the QUEUED order's units (its quantity of its variant)
// from available to locked and makes the order AWAITING_PAYMENT (until its
// pay_by, or payBy when it has none), or closes it as SOLD_OUT and returns
// ErrSoldOut when the variant has fewer available units. An order past
// QUEUED is left as it is (ErrSoldOut again if it was closed as sold out).
//
// The variant's row is the one every saga of the sale updates: its UPDATE
// comes last, alone before the commit, so the row stays locked for one
// round trip, not for the order's writes too (docs/DESIGN.md, the trap of
// one hot row). The order is written AWAITING_PAYMENT first and rewritten
// SOLD_OUT when the units are not there; a refused UPDATE locks nothing.
func lockUnits(tx *gorm.DB, row *orderRow, payBy time.Time) error {
	if row.Status != string(seckill.StatusQueued) {
		if row.CloseReason != nil && *row.CloseReason == string(seckill.CloseSoldOut) {
			return ErrSoldOut
		}
		return nil
	}
	queued := *row
	now := time.Now().UTC()
	if row.PayBy == nil {
		payBy = payBy.UTC()
		row.PayBy = &payBy
	}
	row.Status, row.StockLocked, row.AwaitingAt, row.UpdatedAt = string(seckill.StatusAwaitingPayment), true, &now, now
	if err := tx.Save(row).Error; err != nil {
		return fmt.Errorf("mark order %d awaiting payment: %w", row.ID, err)
	}
	locked, err := moveUnits(tx, row, lockMove)
	if err != nil || locked {
		return err
	}
	*row = queued
	reason := string(seckill.CloseSoldOut)
	row.Status, row.CloseReason, row.ClosedAt, row.UpdatedAt = string(seckill.StatusClosed), &reason, &now, now
	// What Redis may have back of the units it took (the migration 00016
	// says why): the variant's available now, at most the quantity.
	var available int64
	if err := tx.Raw(`SELECT available FROM sale_variants WHERE sale_id = ? AND sku = ?`, row.SaleID, row.SKU).Scan(&available).Error; err != nil {
		return fmt.Errorf("read the available units of order %d's variant: %w", row.ID, err)
	}
	row.SoldOutGiveBack = int(min(available, int64(row.Quantity)))
	if err := tx.Save(row).Error; err != nil {
		return fmt.Errorf("close sold-out order %d: %w", row.ID, err)
	}
	return ErrSoldOut
}

// unitMove is one move of an order's units between the columns of its
// variant's split: one conditional UPDATE whose text never changes, so each
// connection prepares it once (see Open).
type unitMove struct {
	what string // for errors: "lock", "sell", "release"
	sql  string
}

// The moves of an order's units, each all or nothing: its quantity moves,
// or nothing does when the source column has fewer.
var (
	lockMove = unitMove{"lock", `UPDATE sale_variants SET available = available - ?, locked = locked + ?
		WHERE sale_id = ? AND sku = ? AND available >= ?`}
	sellMove = unitMove{"sell", `UPDATE sale_variants SET locked = locked - ?, sold = sold + ?
		WHERE sale_id = ? AND sku = ? AND locked >= ?`}
	releaseMove = unitMove{"release", `UPDATE sale_variants SET locked = locked - ?, available = available + ?
		WHERE sale_id = ? AND sku = ? AND locked >= ?`}
)

// moveUnits makes move m of the order's units (its quantity of its
// variant) within tx, and reports whether they moved.
func moveUnits(tx *gorm.DB, row *orderRow, m unitMove) (bool, error) {
	q := row.Quantity
	res := tx.Exec(m.sql, q, q, row.SaleID, row.SKU, q)
	if res.Error != nil {
		return false, fmt.Errorf("%s %d units of %s in sale %d for order %d: %w", m.what, q, row.SKU, row.SaleID, row.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ConfirmPayment makes an AWAITING_PAYMENT order PAID and moves its units
// (its quantity of its variant) from locked to sold, and records payment
// event eventID (if not empty) as APPLIED, in one transaction, the
// variant's UPDATE last. Idempotent: a PAID order is returned unchanged. A
// CLOSED order returns ErrOrderClosed.
func (s *Store) ConfirmPayment(ctx context.Context, orderID int64, eventID, paymentIntentID string, paidAt time.Time) (*seckill.Order, error) {
	return s.lockedOrder(ctx, orderID, nil, func(tx *gorm.DB, row *orderRow) error {
		switch seckill.OrderStatus(row.Status) {
		case seckill.StatusPaid:
			return nil
		case seckill.StatusClosed:
			return ErrOrderClosed
		case seckill.StatusQueued:
			return fmt.Errorf("confirm order %d: stock not locked yet", row.ID)
		}
		paidAt = paidAt.UTC()
		row.Status, row.StockLocked, row.PaidAt, row.UpdatedAt = string(seckill.StatusPaid), false, &paidAt, time.Now().UTC()
		if paymentIntentID != "" {
			row.PaymentIntentID = &paymentIntentID
		}
		if err := tx.Save(row).Error; err != nil {
			return fmt.Errorf("mark order %d paid: %w", row.ID, err)
		}
		if err := setOutcome(tx, eventID, seckill.OutcomeApplied); err != nil {
			return err
		}
		return mustMove(tx, row, sellMove)
	})
}

// setOutcome records what payment event eventID did, within tx; no-op
// for an empty id.
func setOutcome(tx *gorm.DB, eventID string, outcome seckill.PaymentOutcome) error {
	if eventID == "" {
		return nil
	}
	err := tx.Model(&paymentEventRow{}).Where("id = ?", eventID).Updates(map[string]any{
		"outcome": string(outcome), "delivered_at": gorm.Expr("COALESCE(delivered_at, now())"),
	}).Error
	if err != nil {
		return fmt.Errorf("set outcome of payment event %q: %w", eventID, err)
	}
	return nil
}

// PaidInTimeError is CloseUnpaid's refusal: a successful payment for the
// order's amount was recorded by its pay_by (or through the order's own
// PaymentIntent) and no saga has acted on it yet. The order must be paid
// with it, not closed.
type PaidInTimeError struct {
	Event *seckill.PaymentRecord
}

func (e *PaidInTimeError) Error() string {
	return fmt.Sprintf("payment %s was received in time for order %d", e.Event.ID, e.Event.OrderID)
}

// CloseUnpaid closes an AWAITING_PAYMENT order that its saga decided was
// not paid (the deadline, a cancel, a failed payment) with reason, gives
// its locked units (its quantity of its variant) back to available,
// exactly once, and records payment event eventID
// (if not empty: the failed payment that closed it) as APPLIED, in one
// transaction. Idempotent: a CLOSED order is returned unchanged; a PAID
// one returns ErrOrderPaid. In the same transaction
// it reads the payments recorded for the order, and a successful one that
// counts (received by pay_by or through ownIntent, the order's own
// PaymentIntent as the saga knows it; for the order's amount; not yet
// acted on) refuses the close with *PaidInTimeError: a payment counts when
// seckill received it, however late its signal reached the saga
// (docs/DESIGN.md invariant 8). The saga judges a payment by the same
// rule, so one it refunds as late never stops the close.
func (s *Store) CloseUnpaid(ctx context.Context, orderID int64, reason seckill.CloseReason, eventID, ownIntent string, closedAt time.Time) (*seckill.Order, error) {
	return s.lockedOrder(ctx, orderID, nil, func(tx *gorm.DB, row *orderRow) error {
		if row.Status == string(seckill.StatusQueued) || row.Status == string(seckill.StatusAwaitingPayment) {
			if e, err := paidInTime(tx, row, ownIntent); err != nil || e != nil {
				if e != nil {
					return &PaidInTimeError{Event: e}
				}
				return err
			}
		}
		return closeRow(tx, row, reason, eventID, closedAt)
	})
}

// paidInTime is the first successful payment recorded for the order that
// counts and that no saga has acted on, or nil.
func paidInTime(tx *gorm.DB, row *orderRow, ownIntent string) (*seckill.PaymentRecord, error) {
	var rows []paymentEventRow
	err := tx.Raw(`SELECT e.* FROM payment_events e
		WHERE e.order_id = ? AND e.type = ? AND e.outcome IN (?, ?)
		  AND e.amount_cents = ? AND e.currency = ?
		  AND (e.received_at <= ? OR (? <> '' AND e.payment_intent_id = ?))
		ORDER BY e.received_at, e.id LIMIT 1`,
		row.ID, string(seckill.PaymentSucceeded), string(seckill.OutcomeReceived), string(seckill.OutcomeDelivered),
		row.AmountCents, row.Currency, row.PayBy, ownIntent, ownIntent).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the payments of order %d: %w", row.ID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0].event(), nil
}

// closeRow is CloseUnpaid's transition, within tx on the locked row. The
// order's stock_locked says whether it holds its units: they go back once,
// in the transaction that clears it, the variant's UPDATE last.
func closeRow(tx *gorm.DB, row *orderRow, reason seckill.CloseReason, eventID string, closedAt time.Time) error {
	switch seckill.OrderStatus(row.Status) {
	case seckill.StatusClosed:
		return nil
	case seckill.StatusPaid:
		return ErrOrderPaid
	}
	held := row.StockLocked
	r := string(reason)
	closedAt = closedAt.UTC()
	row.Status, row.CloseReason, row.StockLocked, row.ClosedAt, row.UpdatedAt = string(seckill.StatusClosed), &r, false, &closedAt, time.Now().UTC()
	if err := tx.Save(row).Error; err != nil {
		return fmt.Errorf("close order %d: %w", row.ID, err)
	}
	if err := setOutcome(tx, eventID, seckill.OutcomeApplied); err != nil {
		return err
	}
	if !held {
		return nil
	}
	return mustMove(tx, row, releaseMove)
}

// mustMove is moveUnits of units the order holds: their not being there
// is a broken split, an error that rolls the transaction back.
func mustMove(tx *gorm.DB, row *orderRow, m unitMove) error {
	moved, err := moveUnits(tx, row, m)
	if err == nil && !moved {
		err = fmt.Errorf("%s %d units of %s in sale %d for order %d: fewer are locked", m.what, row.Quantity, row.SKU, row.SaleID, row.ID)
	}
	return err
}

// MaxOrdersListed bounds OrdersOf: one user's orders of one sale (each
// closed before the next could be claimed).
const MaxOrdersListed = 100

// OrdersOf returns userID's orders of saleID, newest first, with their
// refunds; at most MaxOrdersListed.
func (s *Store) OrdersOf(ctx context.Context, saleID int64, userID string) ([]*seckill.Order, error) {
	var rows []orderRow
	if err := s.db.WithContext(ctx).Where("sale_id = ? AND user_id = ?", saleID, userID).
		Order("id DESC").Limit(MaxOrdersListed).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the orders of %s in sale %d: %w", userID, saleID, err)
	}
	out := make([]*seckill.Order, len(rows))
	for i := range rows {
		o, err := s.withExtras(ctx, rows[i].order())
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}
