package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

type keptShopEventRow struct {
	ID      string `gorm:"primaryKey"`
	Seq     int64  `gorm:"->"`
	OrderID int64
	Type    string
	Event   []byte `gorm:"type:jsonb"`
	Error   string
	KeptAt  time.Time
}

func (keptShopEventRow) TableName() string { return "shop_events_kept" }

// KeepShopEvents records events whose delivery gave up, in the order
// given, with why. An event kept already keeps its place and takes the
// newer error.
func (s *Store) KeepShopEvents(ctx context.Context, events []seckill.ShopEvent, why string) error {
	if len(events) == 0 {
		return nil
	}
	now := time.Now().UTC()
	return s.transaction(ctx, func(tx *gorm.DB) error {
		for _, ev := range events {
			ev.Redelivery = false
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			row := keptShopEventRow{ID: ev.ID, OrderID: ev.OrderID, Type: string(ev.Type), Event: b, Error: why, KeptAt: now}
			err = tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}},
				DoUpdates: clause.AssignmentColumns([]string{"error", "kept_at"})}).Create(&row).Error
			if err != nil {
				return fmt.Errorf("keep shop event %s: %w", ev.ID, err)
			}
		}
		return nil
	})
}

// HoldsShopEvents reports whether an event of the order is kept
// undelivered: the order's later events must wait behind it.
func (s *Store) HoldsShopEvents(ctx context.Context, orderID int64) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&keptShopEventRow{}).Where("order_id = ?", orderID).Limit(1).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("read kept shop events of order %d: %w", orderID, err)
	}
	return n > 0, nil
}

// KeptShopEvents lists the kept events, oldest first, at most limit.
func (s *Store) KeptShopEvents(ctx context.Context, limit int) ([]seckill.KeptShopEvent, error) {
	var rows []keptShopEventRow
	if err := s.db.WithContext(ctx).Order("seq").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list kept shop events: %w", err)
	}
	return keptOf(rows)
}

// KeptShopEventsOfOrder returns every kept event of the order whose event
// id is kept, in the order they were to be sent, from its first: what a
// redelivery of id sends again, so the shop gets the order's events in
// order whichever of them the operator names. seckill.ErrNotFound when id
// is not kept.
func (s *Store) KeptShopEventsOfOrder(ctx context.Context, id string) ([]seckill.KeptShopEvent, error) {
	var named keptShopEventRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&named).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("kept shop event %q: %w", id, seckill.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read kept shop event %q: %w", id, err)
	}
	var rows []keptShopEventRow
	if err := s.db.WithContext(ctx).Where("order_id = ?", named.OrderID).Order("seq").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read kept shop events of order %d: %w", named.OrderID, err)
	}
	return keptOf(rows)
}

// ForgetKeptShopEvents deletes kept events: a redelivery sent.
func (s *Store) ForgetKeptShopEvents(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Delete(&keptShopEventRow{}).Error; err != nil {
		return fmt.Errorf("forget kept shop events: %w", err)
	}
	return nil
}

func keptOf(rows []keptShopEventRow) ([]seckill.KeptShopEvent, error) {
	out := make([]seckill.KeptShopEvent, 0, len(rows))
	for _, r := range rows {
		var ev seckill.ShopEvent
		if err := json.Unmarshal(r.Event, &ev); err != nil {
			return nil, fmt.Errorf("kept shop event %s: %w", r.ID, err)
		}
		out = append(out, seckill.KeptShopEvent{Event: ev, Error: r.Error, KeptAt: r.KeptAt.UTC()})
	}
	return out, nil
}
