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

type paymentEventRow struct {
	ID              string `gorm:"primaryKey"`
	Type            string
	OrderID         *int64
	PaymentIntentID *string
	AmountCents     *int64
	Currency        *string
	Payload         []byte `gorm:"type:jsonb"`
	Outcome         string
	ReceivedAt      time.Time `gorm:"->"`
	DeliveredAt     *time.Time
}

func (paymentEventRow) TableName() string { return "payment_events" }

func (r *paymentEventRow) event() *seckill.PaymentRecord {
	e := &seckill.PaymentRecord{ID: r.ID, Type: r.Type, Payload: r.Payload, Outcome: seckill.PaymentOutcome(r.Outcome),
		ReceivedAt: r.ReceivedAt, DeliveredAt: r.DeliveredAt}
	if r.OrderID != nil {
		e.OrderID = *r.OrderID
	}
	if r.PaymentIntentID != nil {
		e.PaymentIntentID = *r.PaymentIntentID
	}
	if r.AmountCents != nil {
		e.AmountCents = *r.AmountCents
	}
	if r.Currency != nil {
		e.Currency = *r.Currency
	}
	return e
}

func events(rows []paymentEventRow) []*seckill.PaymentRecord {
	out := make([]*seckill.PaymentRecord, len(rows))
	for i := range rows {
		out[i] = rows[i].event()
	}
	return out
}

func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// RecordPaymentEvent stores e unless an event with its id is stored
// already. It returns the stored event and whether this call inserted it.
func (s *Store) RecordPaymentEvent(ctx context.Context, e seckill.PaymentRecord) (*seckill.PaymentRecord, bool, error) {
	row := paymentEventRow{
		ID:              e.ID,
		Type:            e.Type,
		OrderID:         nonZero(e.OrderID),
		PaymentIntentID: nonZero(e.PaymentIntentID),
		AmountCents:     &e.AmountCents,
		Currency:        nonZero(e.Currency),
		Payload:         e.Payload,
		Outcome:         string(e.Outcome),
	}
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoNothing: true}).
		Omit("ReceivedAt").Create(&row)
	if res.Error != nil {
		return nil, false, fmt.Errorf("record payment event %q: %w", e.ID, res.Error)
	}
	stored, err := s.PaymentEvent(ctx, e.ID)
	if err != nil {
		return nil, false, err
	}
	return stored, res.RowsAffected == 1, nil
}

// PaymentEvent returns the stored event id.
func (s *Store) PaymentEvent(ctx context.Context, id string) (*seckill.PaymentRecord, error) {
	var row paymentEventRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load payment event %q: %w", id, err)
	}
	return row.event(), nil
}

// SetPaymentOutcome records what event id did. delivered marks that it
// reached the order's saga (or needs no delivery), so a redelivery of the
// same event is not delivered again.
func (s *Store) SetPaymentOutcome(ctx context.Context, id string, outcome seckill.PaymentOutcome, delivered bool) error {
	updates := map[string]any{"outcome": string(outcome)}
	if delivered {
		updates["delivered_at"] = gorm.Expr("COALESCE(delivered_at, now())")
	}
	if err := s.db.WithContext(ctx).Model(&paymentEventRow{}).Where("id = ?", id).Updates(updates).Error; err != nil {
		return fmt.Errorf("set outcome of payment event %q: %w", id, err)
	}
	return nil
}

// MarkDelivered records that event id reached its order's saga. The outcome
// becomes DELIVERED only if the saga has not recorded a more precise one.
func (s *Store) MarkDelivered(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE payment_events
		SET delivered_at = COALESCE(delivered_at, now()),
		    outcome = CASE WHEN outcome = ? THEN ? ELSE outcome END
		WHERE id = ?`, string(seckill.OutcomeReceived), string(seckill.OutcomeDelivered), id).Error
	if err != nil {
		return fmt.Errorf("mark payment event %q delivered: %w", id, err)
	}
	return nil
}

// OrderPaymentEvents returns the payment events (succeeded or failed)
// recorded for orderID, oldest first.
func (s *Store) OrderPaymentEvents(ctx context.Context, orderID int64) ([]*seckill.PaymentRecord, error) {
	var rows []paymentEventRow
	err := s.db.WithContext(ctx).Where("order_id = ? AND type IN ?", orderID,
		[]string{string(seckill.PaymentSucceeded), string(seckill.PaymentFailed)}).
		Order("received_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list payment events of order %d: %w", orderID, err)
	}
	return events(rows), nil
}

// UndeliveredPaymentEvents returns the events of saleID's orders that were
// recorded before olderThan and never reached a saga.
func (s *Store) UndeliveredPaymentEvents(ctx context.Context, saleID int64, olderThan time.Time) ([]*seckill.PaymentRecord, error) {
	var rows []paymentEventRow
	err := s.db.WithContext(ctx).Raw(`SELECT e.* FROM payment_events e JOIN orders o ON o.id = e.order_id
		WHERE o.sale_id = ? AND e.delivered_at IS NULL AND e.outcome = ? AND e.received_at < ?
		ORDER BY e.received_at`, saleID, string(seckill.OutcomeReceived), olderThan).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list undelivered payment events of sale %d: %w", saleID, err)
	}
	return events(rows), nil
}

// UndeliveredStrayPaymentEvents returns the events no sale's pass of
// reconciliation reaches, recorded before olderThan and never delivered:
// those that name an order with no row (a refused order before it was
// written, an admission lost in a failover), and those of a decided (PAID
// or CLOSED) order whose sale ended at or before settlingSince, no longer
// settling (a provider's late retry, an operator's resend, a Temporal
// outage that outlasted the window). Oldest first, at most limit. An
// undecided order of such a sale is left out: delivery could only keep
// its event (its saga is not running and no pass restarts it), which
// would then hold the head of every page; the order is overdue, which
// SeckillOrdersPaymentOverdue reports.
func (s *Store) UndeliveredStrayPaymentEvents(ctx context.Context, settlingSince, olderThan time.Time, limit int) ([]*seckill.PaymentRecord, error) {
	var rows []paymentEventRow
	err := s.db.WithContext(ctx).Raw(`SELECT e.* FROM payment_events e
		LEFT JOIN orders o ON o.id = e.order_id
		LEFT JOIN sales s ON s.id = o.sale_id
		WHERE e.order_id IS NOT NULL AND e.delivered_at IS NULL AND e.outcome = ? AND e.received_at < ?
		  AND (o.id IS NULL OR (s.ends_at <= ? AND o.status IN ?))
		ORDER BY e.received_at LIMIT ?`, string(seckill.OutcomeReceived), olderThan, settlingSince.UTC(),
		[]string{string(seckill.StatusPaid), string(seckill.StatusClosed)}, limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list undelivered payment events no sale's pass reaches: %w", err)
	}
	return events(rows), nil
}
