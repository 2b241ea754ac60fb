package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// ErrSaleEnded is Restock's refusal of a new restock once the sale has
// ended (nothing recorded).
var ErrSaleEnded = &seckill.Error{Code: seckill.CodeSaleEnded, Message: "the sale has ended: it takes no more units"}

// errNoVariant is Restock's refusal inside its transaction: sale_restocks'
// key names no variant, because the sale or its variant does not exist.
var errNoVariant = errors.New("no such variant")

// Restock adds add units to the sale's variant sku, to its total and its
// available units, and records key as the restock's Idempotency-Key, in one
// transaction (docs/API.md "Restocking"; the Redis half is the caller's,
// and MarkRestockApplied records it done). The same key again adds nothing
// and returns the record of the first request made with it, first false,
// whether the sale has ended since or not: its SKU and Added tell a retry
// from a reuse of the key with another body, and its Applied whether the
// Redis half still has to run. seckill.ErrNotFound: no sale saleID;
// ErrVariantNotFound: the sale has no variant sku; ErrSaleEnded: a new
// key once the sale's ends_at is not after now (nothing recorded in any
// of these).
//
// The variant's row is the one the sale's sagas update: its UPDATE comes
// last, alone before the commit.
func (s *Store) Restock(ctx context.Context, saleID int64, sku string, add int64, key string, now time.Time) (seckill.Restock, bool, error) {
	var (
		rec   seckill.Restock
		first bool
	)
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var err error
		if rec, first, err = recordRestock(tx, saleID, sku, add, key); err != nil || !first {
			return err
		}
		var endsAt time.Time
		if err := tx.Raw(`SELECT ends_at FROM sales WHERE id = ?`, saleID).Scan(&endsAt).Error; err != nil {
			return fmt.Errorf("read the end of sale %d: %w", saleID, err)
		}
		if !now.Before(endsAt) {
			return ErrSaleEnded
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
		return seckill.Restock{}, false, fmt.Errorf("restock sale %d: %w", saleID, err)
	}
	return rec, first, nil
}

// restockRow is a sale_restocks row as the reads scan it.
type restockRow struct {
	ID        int64
	SaleID    int64
	SKU       string `gorm:"column:sku"`
	Added     int64
	CreatedAt time.Time
	AppliedAt *time.Time
}

func (r restockRow) restock() seckill.Restock {
	return seckill.Restock{ID: r.ID, SaleID: r.SaleID, SKU: r.SKU, Added: r.Added, At: r.CreatedAt.UTC(), Applied: r.AppliedAt != nil}
}

// restockColumns are the columns restockRow scans.
const restockColumns = `id, sale_id, sku, added, created_at, applied_at`

// recordRestock records key's restock within tx, unless key has a record
// already: it returns the record that stands and whether it is this one.
func recordRestock(tx *gorm.DB, saleID int64, sku string, add int64, key string) (seckill.Restock, bool, error) {
	var rows []restockRow
	err := tx.Raw(`INSERT INTO sale_restocks (sale_id, idempotency_key, sku, added) VALUES (?, ?, ?, ?)
		ON CONFLICT (sale_id, idempotency_key) DO NOTHING RETURNING `+restockColumns, saleID, key, sku, add).
		Scan(&rows).Error
	if isForeignKeyViolation(err, "sale_restocks_variant_fkey") {
		return seckill.Restock{}, false, errNoVariant
	}
	if err != nil {
		return seckill.Restock{}, false, fmt.Errorf("record restock %q: %w", key, err)
	}
	first := len(rows) == 1
	if !first {
		if err := tx.Raw(`SELECT `+restockColumns+` FROM sale_restocks WHERE sale_id = ? AND idempotency_key = ?`,
			saleID, key).Scan(&rows).Error; err != nil {
			return seckill.Restock{}, false, fmt.Errorf("read restock %q: %w", key, err)
		}
		if len(rows) != 1 {
			return seckill.Restock{}, false, fmt.Errorf("read restock %q: no record", key)
		}
	}
	return rows[0].restock(), first, nil
}

// MarkRestockApplied records that restock id of saleID has had its Redis
// half: from now on every load of the sale into Redis from the database
// counts its units (WarmSnapshot). Idempotent; a restock that does not
// exist is seckill.ErrNotFound.
func (s *Store) MarkRestockApplied(ctx context.Context, saleID, id int64) error {
	res := s.db.WithContext(ctx).Exec(`UPDATE sale_restocks SET applied_at = coalesce(applied_at, now()) WHERE sale_id = ? AND id = ?`, saleID, id)
	if res.Error != nil {
		return fmt.Errorf("mark restock %d of sale %d applied: %w", id, saleID, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("mark restock %d of sale %d applied: %w", id, saleID, seckill.ErrNotFound)
	}
	return nil
}

// UnappliedRestocks lists saleID's restocks recorded before before whose
// Redis half is not known to be done, oldest first: reconciliation's
// work (a younger one may still be in its request's hands).
func (s *Store) UnappliedRestocks(ctx context.Context, saleID int64, before time.Time) ([]seckill.Restock, error) {
	var rows []restockRow
	if err := s.db.WithContext(ctx).Raw(`SELECT `+restockColumns+` FROM sale_restocks
		WHERE sale_id = ? AND applied_at IS NULL AND created_at < ? ORDER BY id`, saleID, before.UTC()).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the unapplied restocks of sale %d: %w", saleID, err)
	}
	out := make([]seckill.Restock, len(rows))
	for i, r := range rows {
		out[i] = r.restock()
	}
	return out, nil
}

// unappliedRestocks lists, within tx, the sale's restocks whose Redis half
// is not done, oldest first.
func unappliedRestocks(tx *gorm.DB, saleID int64) ([]seckill.Restock, error) {
	var rows []restockRow
	if err := tx.Raw(`SELECT `+restockColumns+` FROM sale_restocks
		WHERE sale_id = ? AND applied_at IS NULL ORDER BY id`, saleID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the unapplied restocks of sale %d: %w", saleID, err)
	}
	out := make([]seckill.Restock, len(rows))
	for i, r := range rows {
		out[i] = r.restock()
	}
	return out, nil
}

// unappliedUnits are the units, by sku, of the sale's restocks whose Redis
// half is not done: the variant's available counts them, Redis does not
// yet, and their Redis half will add them (a re-warm that loaded them too
// would count them twice).
func unappliedUnits(tx *gorm.DB, saleID int64) (map[string]int64, error) {
	var rows []struct {
		SKU   string `gorm:"column:sku"`
		Units int64
	}
	if err := tx.Raw(`SELECT sku, sum(added) AS units FROM sale_restocks
		WHERE sale_id = ? AND applied_at IS NULL GROUP BY sku`, saleID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count the unapplied restocks of sale %d: %w", saleID, err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.SKU] = r.Units
	}
	return out, nil
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
