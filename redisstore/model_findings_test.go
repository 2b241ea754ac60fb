package redisstore_test

// Bugs the model test (model_test.go) found in the production code, each
// as a focused test that fails until it is fixed.

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redisstore"
)

// findingSale warms sale 7 of one segment with units of "default" and
// returns its store.
func findingSale(t *testing.T, units int64) (*redisstore.Store, context.Context) {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s := redisstore.New(rdb, prefix+":finding")
	ctx := context.Background()
	t.Cleanup(func() { _ = s.DropAll(context.Background()) })
	now := time.Now()
	spec := seckill.WarmSpec{SaleID: 7, Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: units}},
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Segments: 1}
	if loaded, err := s.Warm(ctx, spec); err != nil || !loaded {
		t.Fatalf("warm: %v %v", loaded, err)
	}
	return s, ctx
}

// heldAndStock reads sale 7's units as UnitsHeld counts them.
func heldAndStock(t *testing.T, s *redisstore.Store, ctx context.Context) seckill.Held {
	t.Helper()
	all, err := s.UnitsHeld(ctx, []int64{7}, time.Time{})
	if err != nil {
		t.Fatalf("units held: %v", err)
	}
	return all[7]
}

// The units held for the last buyer in a line, served by give_units
// (a release, a restock, a hand-over), come back to the stock too: admit
// leaves the line through leave_line, which, the line now empty, moves
// the held key's value (the units held before this script, not yet
// written back by give_units) into the stock, while give_units has
// already given them to the buyer. A unit is made from nothing.
//
// Found by TestModel_EveryStepKeepsTheScriptsAndTheModelInAgreement
// (-rapid.seed=5736704933557458078: a join for 2 with 1 in stock, then a
// restock of 1: law 1, Redis holds 1 of default in stock, want 0).
func TestFinding_UnitsHeldForTheLastInLineAreNotAlsoGivenBackToTheStock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, s *redisstore.Store, ctx context.Context) []seckill.Admission
	}{
		{"restock", func(t *testing.T, s *redisstore.Store, ctx context.Context) []seckill.Admission {
			id := int64(100)
			res, err := s.Restock(ctx, seckill.Restock{ID: 1, SaleID: 7, SKU: seckill.DefaultSKU, Added: 1}, modelTerms,
				func() (int64, error) { id++; return id, nil })
			if err != nil || !res.Applied() {
				t.Fatalf("restock: %+v %v", res, err)
			}
			return res.HandedTo
		}},
		{"release", func(t *testing.T, s *redisstore.Store, ctx context.Context) []seckill.Admission {
			res, err := s.Release(ctx, 7, "payer", 2, seckill.DefaultItem, &seckill.NextOrder{IDs: []int64{101}, Terms: modelTerms})
			if err != nil || !res.Now {
				t.Fatalf("release: %+v %v", res, err)
			}
			return res.HandedTo
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 2 units: the payer claims one, the waiter joins for 2 with the
			// other in stock (held for them); the restock's unit, or the
			// payer's released, completes them.
			s, ctx := findingSale(t, 2)
			if r, err := s.Claim(ctx, 7, "payer", 2, "", modelTerms, seckill.DefaultItem); err != nil || r.Outcome != seckill.Admitted {
				t.Fatalf("claim: %+v %v", r, err)
			}
			j, err := s.Join(ctx, 7, "waiter", seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}, 8, 3, modelTerms)
			if err != nil || j.Outcome != seckill.Waiting {
				t.Fatalf("join for 2 with 1 in stock: %+v %v", j, err)
			}
			if h := heldAndStock(t, s, ctx); h.Stock != 0 || h.ForWaiting != 1 {
				t.Fatalf("after the join: %d in stock, %d held; want 0 and 1", h.Stock, h.ForWaiting)
			}
			handed := tc.serve(t, s, ctx)
			if len(handed) != 1 || handed[0].UserID != "waiter" {
				t.Fatalf("handed to %+v, want the waiter", handed)
			}
			h := heldAndStock(t, s, ctx)
			const want = 0 // every unit is claimed: the waiter's 2 (and the payer's, unless released)
			if h.Stock != want || h.ForWaiting != 0 {
				t.Fatalf("after serving the waiter their 2 units: %d in stock and %d held, want %d and 0 (claims hold %d): a unit made from nothing",
					h.Stock, h.ForWaiting, want, h.Claimed)
			}
		})
	}
}
