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

type refundRow struct {
	EventID          string `gorm:"primaryKey"`
	OrderID          *int64
	PaymentIntentID  string
	AmountCents      int64
	Currency         string
	Reason           string
	Status           string
	ProviderRefundID *string
	CreatedAt        time.Time `gorm:"->"`
	UpdatedAt        time.Time
}

func (refundRow) TableName() string { return "refunds" }

// NewRefund is a payment to give back.
type NewRefund struct {
	EventID         string
	OrderID         int64
	PaymentIntentID string
	AmountCents     int64
	Currency        string
	Reason          seckill.PaymentOutcome
}

// StartRefund records a PENDING refund for the event unless one exists,
// and the event's outcome (r.Reason: why it is refunded), in one
// transaction, and returns the refund's current status. Idempotent by
// event id.
func (s *Store) StartRefund(ctx context.Context, r NewRefund) (string, error) {
	row := refundRow{
		EventID: r.EventID, OrderID: nonZero(r.OrderID), PaymentIntentID: r.PaymentIntentID,
		AmountCents: r.AmountCents, Currency: r.Currency, Reason: string(r.Reason), Status: seckill.RefundPending,
		UpdatedAt: time.Now().UTC(),
	}
	var status string
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "event_id"}}, DoNothing: true}).Create(&row).Error
		if err != nil {
			return fmt.Errorf("record refund of %q: %w", r.EventID, err)
		}
		if err := tx.Model(&refundRow{}).Where("event_id = ?", r.EventID).Pluck("status", &status).Error; err != nil {
			return fmt.Errorf("read refund of %q: %w", r.EventID, err)
		}
		return setOutcome(tx, r.EventID, r.Reason)
	})
	return status, err
}

// FinishRefund marks the event's refund SUCCEEDED with the provider's id.
func (s *Store) FinishRefund(ctx context.Context, eventID, providerRefundID string) error {
	res := s.db.WithContext(ctx).Model(&refundRow{}).Where("event_id = ?", eventID).
		Updates(map[string]any{"status": seckill.RefundSucceeded, "provider_refund_id": providerRefundID, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("finish refund of %q: %w", eventID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("finish refund of %q: %w", eventID, seckill.ErrNotFound)
	}
	return nil
}

// orderRefund sums the refunds of an order: PENDING while any is pending.
func (s *Store) orderRefund(ctx context.Context, orderID int64) (*seckill.Refund, error) {
	var rows []refundRow
	if err := s.db.WithContext(ctx).Where("order_id = ?", orderID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("load refunds of order %d: %w", orderID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := &seckill.Refund{Status: seckill.RefundSucceeded}
	for _, row := range rows {
		r.AmountCents += row.AmountCents
		if row.Status == seckill.RefundPending {
			r.Status = seckill.RefundPending
		}
	}
	return r, nil
}

// DevProviderRefund is the development payment provider's side of a
// refund: recorded once per idempotency key, like a real provider's API.
// It returns the refund id (the same one for every repeat of key).
func (s *Store) DevProviderRefund(ctx context.Context, key, id, paymentIntentID string, amountCents int64, currency string) (string, error) {
	err := s.db.WithContext(ctx).Exec(`INSERT INTO dev_provider_refunds
		(idempotency_key, id, payment_intent_id, amount_cents, currency) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (idempotency_key) DO NOTHING`, key, id, paymentIntentID, amountCents, currency).Error
	if err != nil {
		return "", fmt.Errorf("dev provider refund: %w", err)
	}
	var got string
	err = s.db.WithContext(ctx).Raw(`SELECT id FROM dev_provider_refunds WHERE idempotency_key = ?`, key).Scan(&got).Error
	if err == nil && got == "" {
		err = errors.New("refund vanished")
	}
	if err != nil {
		return "", fmt.Errorf("dev provider refund: %w", err)
	}
	return got, nil
}
