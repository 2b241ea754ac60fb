package store

import (
	"cmp"
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
	Currency              string
	LimitPerBuyer         int
	StartsAt              time.Time
	EndsAt                time.Time
	PaymentTimeoutSeconds int
	StockSegments         int
	LobbyOpensAt          *time.Time
	ProofDifficulty       int
	PresaleStartsAt       *time.Time
	PresaleClaim          *string
	DrawSeed              []byte
	DrawState             *string
	DrawBeaconChain       *string
	DrawBeaconRound       *int64
	DrawBeaconRoundAt     *time.Time
	DrawnAt               *time.Time `gorm:"->"` // set by the draw only
	CreatedAt             time.Time  `gorm:"->"`
	SoldOutAt             *time.Time `gorm:"->"` // set by MarkSoldOut only
}

func (saleRow) TableName() string { return "sales" }

// variantRow is one variant of a sale: the authority on its stock
// (migrations/00016_variants.sql). Position is its place in the sale's
// order, from 0.
type variantRow struct {
	SaleID     int64  `gorm:"primaryKey;autoIncrement:false"`
	SKU        string `gorm:"column:sku;primaryKey"`
	Position   int
	Name       string
	PriceCents int64
	Total      int64
	Available  int64
	Locked     int64
	Sold       int64
}

func (variantRow) TableName() string { return "sale_variants" }

func (v *variantRow) variant() seckill.Variant {
	return seckill.Variant{SKU: v.SKU, Name: v.Name, PriceCents: v.PriceCents,
		Stock: seckill.Stock{Total: v.Total, Available: v.Available, Locked: v.Locked, Sold: v.Sold}}
}

// commitment is the published commitment to seed ("" without one).
func commitment(seed []byte) string {
	if seed == nil {
		return ""
	}
	return draw.Commitment(seed)
}

// beaconOf is the beacon round of a draw's columns (nil: none).
func beaconOf(chain *string, round *int64, at *time.Time) *seckill.DrawBeacon {
	if chain == nil || round == nil || at == nil {
		return nil
	}
	return &seckill.DrawBeacon{Chain: *chain, Round: uint64(*round), RoundAt: at.UTC()}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// sale is the sale of r with its variants (in their order), its stock
// their sum and its price their lowest. Remaining stays 0: Redis knows it.
func (r *saleRow) sale(variants []variantRow) *seckill.Sale {
	s := &seckill.Sale{
		ID:              r.ID,
		Name:            r.Name,
		Currency:        r.Currency,
		StartsAt:        r.StartsAt.UTC(),
		EndsAt:          r.EndsAt.UTC(),
		PaymentTimeout:  time.Duration(r.PaymentTimeoutSeconds) * time.Second,
		StockSegments:   max(r.StockSegments, 1),
		LobbyOpensAt:    utcPtr(r.LobbyOpensAt),
		ProofDifficulty: r.ProofDifficulty,
		Drawn:           utcPtr(r.DrawnAt),
		DrawCommitment:  commitment(r.DrawSeed),
		LimitPerBuyer:   r.LimitPerBuyer,
		Variants:        make([]seckill.Variant, len(variants)),
	}
	s.DrawBeacon = beaconOf(r.DrawBeaconChain, r.DrawBeaconRound, r.DrawBeaconRoundAt)
	if r.PresaleStartsAt != nil && r.PresaleClaim != nil {
		s.Presale = &seckill.Presale{StartsAt: r.PresaleStartsAt.UTC(), Claim: *r.PresaleClaim}
	}
	for i := range variants {
		s.Variants[i] = variants[i].variant()
	}
	s.SumVariants()
	return s
}

// withVariants returns the sales of rows, in their order, each with its
// variants: one statement reads the variants of them all, however many.
func withVariants(db *gorm.DB, rows []saleRow) ([]*seckill.Sale, error) {
	sales := make([]*seckill.Sale, len(rows))
	if len(rows) == 0 {
		return sales, nil
	}
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	var variants []variantRow
	if err := db.Where("sale_id IN ?", ids).Order("sale_id, position").Find(&variants).Error; err != nil {
		return nil, fmt.Errorf("load the variants of %d sales: %w", len(ids), err)
	}
	of := make(map[int64][]variantRow, len(rows))
	for _, v := range variants {
		of[v.SaleID] = append(of[v.SaleID], v)
	}
	for i := range rows {
		sales[i] = rows[i].sale(of[rows[i].ID])
	}
	return sales, nil
}

// saleByID reads sale id with its variants through db (the store's
// handle or a transaction); seckill.ErrNotFound when there is none.
func saleByID(db *gorm.DB, id int64) (*seckill.Sale, *saleRow, error) {
	var row saleRow
	err := db.Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, seckill.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load sale %d: %w", id, err)
	}
	var variants []variantRow
	if err := db.Where("sale_id = ?", id).Order("position").Find(&variants).Error; err != nil {
		return nil, nil, fmt.Errorf("load the variants of sale %d: %w", id, err)
	}
	return row.sale(variants), &row, nil
}

// newVariantRows are the rows of a new sale's variants, in the order
// given, all their stock available.
func newVariantRows(saleID int64, vs []seckill.NewVariant) []variantRow {
	rows := make([]variantRow, len(vs))
	for i, v := range vs {
		rows[i] = variantRow{SaleID: saleID, SKU: v.SKU, Position: i, Name: v.Name, PriceCents: v.PriceCents,
			Total: v.Stock, Available: v.Stock}
	}
	return rows
}

// CreateSale inserts a sale and its variants (in n.Variants' order), all
// their stock available, then runs within (which may be nil) inside the
// same transaction: if within fails the sale is not created and its error
// is returned. n.LimitPerBuyer 0 is seckill.DefaultLimitPerBuyer. A sale
// needs at least one variant.
func (s *Store) CreateSale(ctx context.Context, n seckill.NewSale, within func(*seckill.Sale) error) (*seckill.Sale, error) {
	if len(n.Variants) == 0 {
		return nil, errors.New("create sale: a sale has at least one variant")
	}
	row := saleRow{
		Name:                  n.Name,
		Currency:              n.Currency,
		LimitPerBuyer:         cmp.Or(n.LimitPerBuyer, seckill.DefaultLimitPerBuyer),
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
		if b := n.Beacon; b != nil {
			round, roundAt := int64(b.Round), b.RoundAt.UTC()
			row.DrawBeaconChain, row.DrawBeaconRound, row.DrawBeaconRoundAt = &b.Chain, &round, &roundAt
		}
	}
	if n.Presale != nil {
		at, claim := n.Presale.StartsAt.UTC(), n.Presale.Claim
		row.PresaleStartsAt, row.PresaleClaim = &at, &claim
	}
	var variants []variantRow
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Omit("ID", "CreatedAt").Create(&row).Error; err != nil {
			return fmt.Errorf("insert sale: %w", err)
		}
		variants = newVariantRows(row.ID, n.Variants)
		if err := tx.Create(&variants).Error; err != nil {
			return fmt.Errorf("insert the variants of sale %d: %w", row.ID, err)
		}
		if within != nil {
			return within(row.sale(variants))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.sale(variants), nil
}

// Sale returns sale id with its variants and their database stock split
// (Remaining unset).
func (s *Store) Sale(ctx context.Context, id int64) (*seckill.Sale, error) {
	sale, _, err := saleByID(s.db.WithContext(ctx), id)
	return sale, err
}

// Sales lists sales with their variants, newest first, at most limit,
// with ids below before (0: from the newest).
func (s *Store) Sales(ctx context.Context, limit int, before int64) ([]*seckill.Sale, error) {
	var rows []saleRow
	db := s.db.WithContext(ctx)
	q := db.Order("id DESC").Limit(limit)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list sales: %w", err)
	}
	return withVariants(db, rows)
}
