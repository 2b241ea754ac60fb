package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

type intentRow struct {
	OrderID      int64 `gorm:"primaryKey;autoIncrement:false"`
	Provider     string
	IntentID     string
	ClientSecret string
}

func (intentRow) TableName() string { return "payment_intents" }

// SavePaymentIntent records order orderID's payment object unless one is
// recorded, and returns the one recorded (the first: the buyer's request
// and the saga ask the provider with one idempotency key, so both have the
// same).
func (s *Store) SavePaymentIntent(ctx context.Context, orderID int64, in seckill.Intent) (seckill.Intent, error) {
	err := s.db.WithContext(ctx).Exec(`INSERT INTO payment_intents (order_id, provider, intent_id, client_secret)
		VALUES (?, ?, ?, ?) ON CONFLICT (order_id) DO NOTHING`, orderID, in.Provider, in.ID, in.ClientSecret).Error
	if err != nil {
		return seckill.Intent{}, fmt.Errorf("save the payment intent of order %d: %w", orderID, err)
	}
	saved, err := s.PaymentIntentOf(ctx, orderID)
	if err != nil {
		return seckill.Intent{}, err
	}
	if saved == nil {
		return seckill.Intent{}, fmt.Errorf("payment intent of order %d vanished", orderID)
	}
	return *saved, nil
}

// PaymentIntentOf returns order orderID's payment object, or nil.
func (s *Store) PaymentIntentOf(ctx context.Context, orderID int64) (*seckill.Intent, error) {
	var row intentRow
	err := s.db.WithContext(ctx).Where("order_id = ?", orderID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load the payment intent of order %d: %w", orderID, err)
	}
	return &seckill.Intent{Provider: row.Provider, ID: row.IntentID, ClientSecret: row.ClientSecret, Status: seckill.IntentOpen}, nil
}
