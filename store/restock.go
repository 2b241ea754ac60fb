package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// RestockRecord is what a sale's restock recorded under its
// Idempotency-Key: the first request made with the key.
type RestockRecord struct {
	SKU   string
	Added int64
	At    time.Time
}

// errNoVariant is Restock's refusal inside its transaction: sale_restocks'
// key names no variant, because the sale or its variant does not exist.
var errNoVariant = errors.New("no such variant")

// Restock adds add units to the sale's variant sku, to its total and its
// available units, and records key as the restock's Idempotency-Key, in one
// transaction (docs/API.md "Restocking"; the Redis half is the caller's).
// The same key again adds nothing and returns the record of the first
// request made with it, first false: its SKU and Added tell a retry from a
// reuse of the key with another body. seckill.ErrNotFound: no sale
// saleID; ErrVariantNotFound: the sale has no variant sku (nothing
// recorded either way).
//
// The variant's row is the one the sale's sagas update: its UPDATE comes
// last, alone before the commit.
func (s *Store) Restock(ctx context.Context, saleID int64, sku string, add int64, key string) (RestockRecord, bool, error) {
	var (
		rec   RestockRecord
		first bool
	)
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var err error
		if rec, first, err = recordRestock(tx, saleID, sku, add, key); err != nil || !first {
			return err
		}
		res := tx.Exec(`UPDATE sale_variants SET total = total + ?, available = available + ? WHERE sale_id = ? AND sku = ?`,
			add, add, saleID, sku)
		if res.Error != nil {
			return fmt.Errorf("add %d units to %s: %w", add, sku, res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("add %d units to %s: no such row", add, sku)
		}
		return nil
	})
	if errors.Is(err, errNoVariant) {
		err = s.noVariant(ctx, saleID, sku)
	}
	if err != nil {
		return RestockRecord{}, false, fmt.Errorf("restock sale %d: %w", saleID, err)
	}
	return rec, first, nil
}

// recordRestock records key's restock within tx, unless key has a record
// already: it returns the record that stands and whether it is this one.
func recordRestock(tx *gorm.DB, saleID int64, sku string, add int64, key string) (RestockRecord, bool, error) {
	var rows []struct {
		SKU       string `gorm:"column:sku"`
		Added     int64
		CreatedAt time.Time
	}
	err := tx.Raw(`INSERT INTO sale_restocks (sale_id, idempotency_key, sku, added) VALUES (?, ?, ?, ?)
		ON CONFLICT (sale_id, idempotency_key) DO NOTHING RETURNING sku, added, created_at`, saleID, key, sku, add).
		Scan(&rows).Error
	if isForeignKeyViolation(err, "sale_restocks_variant_fkey") {
		return RestockRecord{}, false, errNoVariant
	}
	if err != nil {
		return RestockRecord{}, false, fmt.Errorf("record restock %q: %w", key, err)
	}
	first := len(rows) == 1
	if !first {
		if err := tx.Raw(`SELECT sku, added, created_at FROM sale_restocks WHERE sale_id = ? AND idempotency_key = ?`,
			saleID, key).Scan(&rows).Error; err != nil {
			return RestockRecord{}, false, fmt.Errorf("read restock %q: %w", key, err)
		}
		if len(rows) != 1 {
			return RestockRecord{}, false, fmt.Errorf("read restock %q: no record", key)
		}
	}
	return RestockRecord{SKU: rows[0].SKU, Added: rows[0].Added, At: rows[0].CreatedAt.UTC()}, first, nil
}

// noVariant is the error for a sale without variant sku: whether the sale
// itself is missing (seckill.ErrNotFound) or only its variant
// (ErrVariantNotFound).
func (s *Store) noVariant(ctx context.Context, saleID int64, sku string) error {
	var n int64
	if err := s.db.WithContext(ctx).Model(&saleRow{}).Where("id = ?", saleID).Count(&n).Error; err != nil {
		return fmt.Errorf("look up sale %d: %w", saleID, err)
	}
	if n == 0 {
		return seckill.ErrNotFound
	}
	return fmt.Errorf("sale %d has no variant %q: %w", saleID, sku, ErrVariantNotFound)
}
