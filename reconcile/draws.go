package reconcile

import (
	"context"

	"github.com/seckill/seckill"
)

// Draws makes sure every sale with a lobby whose draw is not done has its
// SaleDraw workflow. The API starts it when it creates the sale; a start
// that failed there (Temporal unreachable for a moment) is made here, at
// the next pass, long before starts_at in any real sale. Starting a draw
// that exists changes nothing.
type Draws struct {
	Store interface {
		LobbySales(ctx context.Context) ([]int64, error)
		Sale(ctx context.Context, id int64) (*seckill.Sale, error)
	}
	Sagas interface {
		StartDraw(ctx context.Context, in seckill.DrawInput) error
	}
	// WaitlistMax bounds each sale's waitlist (SECKILL_WAITLIST_MAX).
	WaitlistMax int
}

// ensure starts the draws that are missing; each failure is a drift.
func (d *Draws) ensure(ctx context.Context, r *Reconciler) []seckill.Drift {
	ids, err := d.Store.LobbySales(ctx)
	if err != nil {
		return []seckill.Drift{r.checkFailed(0, 0, "list the sales whose draw is not done", err)}
	}
	var drifts []seckill.Drift
	for _, id := range ids {
		sale, err := d.Store.Sale(ctx, id)
		if err == nil {
			err = d.Sagas.StartDraw(ctx, seckill.DrawInput{SaleID: id, StartsAt: sale.StartsAt, WaitlistMax: d.WaitlistMax})
		}
		if err != nil {
			drifts = append(drifts, r.checkFailed(id, 0, "start the sale's draw", err))
		}
	}
	return drifts
}
