package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
)

type saleRow struct {
	ID                    int64 `gorm:"primaryKey"`
	Name                  string
	PriceCents            int64
	Currency              string
	Total                 int64
	Available             int64
	Locked                int64
	Sold                  int64
	StartsAt              time.Time
	EndsAt                time.Time
	PaymentTimeoutSeconds int
	StockSegments         int
	LobbyOpensAt          *time.Time
	ProofDifficulty       int
	DrawSeed              []byte
	DrawState             *string
	DrawnAt               *time.Time `gorm:"->"` // set by the draw only
	CreatedAt             time.Time  `gorm:"->"`
	SoldOutAt             *time.Time `gorm:"->"` // set by MarkSoldOut only
}

func (saleRow) TableName() string { return "sales" }

// commitment is the published commitment to seed ("" without one).
func commitment(seed []byte) string {
	if seed == nil {
		return ""
	}
	return draw.Commitment(seed)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (r *saleRow) sale() *seckill.Sale {
	return &seckill.Sale{
		ID:              r.ID,
		Name:            r.Name,
		PriceCents:      r.PriceCents,
		Currency:        r.Currency,
		StartsAt:        r.StartsAt.UTC(),
		EndsAt:          r.EndsAt.UTC(),
		PaymentTimeout:  time.Duration(r.PaymentTimeoutSeconds) * time.Second,
		StockSegments:   max(r.StockSegments, 1),
		LobbyOpensAt:    utcPtr(r.LobbyOpensAt),
		ProofDifficulty: r.ProofDifficulty,
		Drawn:           utcPtr(r.DrawnAt),
		DrawCommitment:  commitment(r.DrawSeed),
		Stock: seckill.Stock{
			Total:     r.Total,
			Available: r.Available,
			Locked:    r.Locked,
			Sold:      r.Sold,
		},
	}
}

// CreateSale inserts a sale with all its stock available, then runs
// within (which may be nil) inside the same transaction: if within fails the
// sale is not created and its error is returned.
func (s *Store) CreateSale(ctx context.Context, n seckill.NewSale, within func(*seckill.Sale) error) (*seckill.Sale, error) {
	row := saleRow{
		Name:                  n.Name,
		PriceCents:            n.PriceCents,
		Currency:              n.Currency,
		Total:                 n.Stock,
		Available:             n.Stock,
		StartsAt:              n.StartsAt.UTC(),
		EndsAt:                n.EndsAt.UTC(),
		PaymentTimeoutSeconds: int(n.PaymentTimeout / time.Second),
		StockSegments:         max(n.StockSegments, 1),
		ProofDifficulty:       n.ProofDifficulty,
	}
	if n.LobbyOpensAt != nil {
		at := n.LobbyOpensAt.UTC()
		open := seckill.DrawOpen
		row.LobbyOpensAt, row.DrawSeed, row.DrawState = &at, draw.NewSeed(), &open
	}
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Omit("ID", "CreatedAt").Create(&row).Error; err != nil {
			return fmt.Errorf("insert sale: %w", err)
		}
		if within != nil {
			return within(row.sale())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.sale(), nil
}

// Sale returns sale id with its database stock split (Remaining unset).
func (s *Store) Sale(ctx context.Context, id int64) (*seckill.Sale, error) {
	var row saleRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load sale %d: %w", id, err)
	}
	return row.sale(), nil
}

// Sales lists sales, newest first, at most limit, with ids below before
// (0: from the newest).
func (s *Store) Sales(ctx context.Context, limit int, before int64) ([]*seckill.Sale, error) {
	var rows []saleRow
	q := s.db.WithContext(ctx).Order("id DESC").Limit(limit)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list sales: %w", err)
	}
	sales := make([]*seckill.Sale, len(rows))
	for i := range rows {
		sales[i] = rows[i].sale()
	}
	return sales, nil
}
