package activities_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/redisstore"
)

// newVariantDrawRig is a sale of variants A (stockA units) and B (stockB)
// with a limit of 2 per buyer, whose lobby holds one entry per item, the
// entry ranked i asking for byRank[i-1]: the test fixes what each rank
// asks for (the ranks come from the seed, so the items are set once the
// entries exist and their ranks are known, before the draw reads them).
func newVariantDrawRig(t *testing.T, stockA, stockB int64, byRank []seckill.Item, waitlistMax int) *drawRig {
	t.Helper()
	st, _ := testenv.Store(t)
	rdb, pfx := testenv.Redis(t)
	rs := redisstore.New(rdb, pfx)
	ctx := t.Context()
	now := time.Now().UTC()
	lobby := now.Add(-time.Hour)
	sale, err := st.CreateSale(ctx, seckill.NewSale{Name: "draw", Currency: "usd", LimitPerBuyer: 2,
		Variants: []seckill.NewVariant{{SKU: "A", Name: "size A", PriceCents: 990, Stock: stockA}, {SKU: "B", Name: "size B", PriceCents: 1990, Stock: stockB}},
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PaymentTimeout: time.Minute, LobbyOpensAt: &lobby}, nil)
	require.NoError(t, err)
	_, err = rs.Warm(ctx, seckill.WarmSpec{SaleID: sale.ID, Variants: []seckill.VariantUnits{{SKU: "A", Units: stockA}, {SKU: "B", Units: stockB}},
		StartsAt: seckill.ClaimsOpenAt(sale), EndsAt: sale.EndsAt})
	require.NoError(t, err)
	var entries [][]byte
	for i := range byRank {
		e, _, err := st.Enter(ctx, sale.ID, fmt.Sprint("e", i), seckill.Item{SKU: "A", Quantity: 1})
		require.NoError(t, err)
		entries = append(entries, e.Entry)
	}
	d, err := st.DrawOf(ctx, sale.ID)
	require.NoError(t, err)
	for i, r := range draw.Rank(d.Seed, entries) {
		if it := byRank[i]; it != (seckill.Item{SKU: "A", Quantity: 1}) {
			require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET sku = ?, quantity = ? WHERE sale_id = ? AND entry = ?`,
				it.SKU, it.Quantity, sale.ID, r.Entry).Error)
		}
	}
	var suite testsuite.WorkflowTestSuite
	r := &drawRig{st: st, rs: rs, rdb: rdb, pfx: pfx, sale: sale, env: suite.NewTestActivityEnvironment(),
		acts: activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2),
		in:   seckill.DrawInput{SaleID: sale.ID, StartsAt: sale.StartsAt, WaitlistMax: waitlistMax, RanksWhenReached: true}}
	r.env.RegisterActivity(r.acts)
	return r
}

// byRank returns the entries of the draw in rank order, settled or not.
func (r *drawRig) byRank(t *testing.T) []*seckill.LobbyEntry {
	t.Helper()
	out, err := r.st.EntriesFrom(t.Context(), r.sale.ID, 1, 1<<20)
	require.NoError(t, err)
	return out
}

// In rank order an entry is admitted, for its quantity of its variant,
// while its variant still has that many units; one that does not fit
// waits in its variant's line with the units left held for it, and every
// later entry of that variant waits behind it, even one asking for fewer
// units (docs/FAIR-START.md): a better rank is never worse off than a
// later one of its variant. The other variant is drawn on its own stock.
func TestSettleDraw_EachVariantAdmitsTheEntriesThatFitInRankOrder(t *testing.T) {
	A := func(q int) seckill.Item { return seckill.Item{SKU: "A", Quantity: q} }
	B := func(q int) seckill.Item { return seckill.Item{SKU: "B", Quantity: q} }
	// A has 3 units, B 2.
	items := []seckill.Item{
		A(2), // rank 1: WON, A has 1 left
		B(1), // rank 2: WON, B has 1 left
		A(2), // rank 3: 2 > 1: WAITING first in A's line, A's 1 unit held for it
		A(1), // rank 4: WAITING behind rank 3, not admitted ahead of it
		B(1), // rank 5: WON, B has 0 left
		B(2), // rank 6: WAITING first in B's line
	}
	r := newVariantDrawRig(t, 3, 2, items, 100)
	ctx := t.Context()
	r.rank(t)
	ranked := r.byRank(t)
	require.Len(t, ranked, len(items))
	wantFits := []bool{true, true, false, false, true, false}
	for i, e := range ranked {
		require.Equal(t, items[i], e.Item, "rank %d", i+1)
		require.Equal(t, wantFits[i], e.Fits, "rank %d fits", i+1)
	}
	r.settleAll(t)

	want := []string{seckill.EntryWon, seckill.EntryWon, seckill.EntryWaiting, seckill.EntryWaiting, seckill.EntryWon, seckill.EntryWaiting}
	for i, e := range r.byRank(t) {
		require.Equal(t, want[i], e.Outcome, "rank %d (%+v)", i+1, e.Item)
		if want[i] == seckill.EntryWon {
			require.NotZero(t, e.OrderID)
			claimed, err := r.rs.ClaimOf(ctx, r.sale.ID, e.UserID)
			require.NoError(t, err)
			require.Equal(t, e.OrderID, claimed, "rank %d holds its order in Redis", i+1)
		}
	}
	pos := func(rank int) int64 {
		st, err := r.rs.WaitStateOf(ctx, r.sale.ID, ranked[rank-1].UserID)
		require.NoError(t, err)
		require.True(t, st.Waiting, "rank %d waits", rank)
		return st.Position
	}
	require.Equal(t, int64(1), pos(3), "first in A's line")
	require.Equal(t, int64(2), pos(4), "behind rank 3 in A's line")
	require.Equal(t, int64(1), pos(6), "first in B's line")

	held, err := r.rs.UnitsHeld(ctx, []int64{r.sale.ID}, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	a, b := held[r.sale.ID].Variants["A"], held[r.sale.ID].Variants["B"]
	require.Equal(t, int64(2), a.Claimed, "A: rank 1's 2 units")
	require.Equal(t, int64(1), a.ForWaiting, "A: the unit left, held for rank 3")
	require.Zero(t, a.Stock, "A: nothing left to claims")
	require.Equal(t, int64(2), b.Claimed, "B: ranks 2 and 5")
	require.Zero(t, b.Stock+b.ForWaiting)

	d, err := r.st.DrawOf(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, 3, d.Admitted)
	require.Zero(t, d.EndedAtRank)
	orders, err := r.st.DrawOrders(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Len(t, orders, 3)
	for i, rank := range []int{1, 2, 5} {
		require.Equal(t, rank, orders[i].Rank)
		require.Equal(t, items[rank-1], orders[i].Item, "the order of rank %d is of its entry's item", rank)
	}
	vs, err := r.st.DrawVariants(ctx, r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, []seckill.DrawVariant{{SKU: "A", Stock: 3, Admitted: 1}, {SKU: "B", Stock: 2, Admitted: 2}}, vs)
}

// The sale's end cuts the draw at the first entry that fits and is not
// admitted, not at the first rank: an entry that did not fit was never
// going to be admitted, so a cut there would tell a verifier the wrong K.
func TestSettleDraw_TheEndCutsAtTheFirstEntryThatFits(t *testing.T) {
	items := []seckill.Item{{SKU: "B", Quantity: 2}, {SKU: "A", Quantity: 1}, {SKU: "B", Quantity: 1}}
	r := newVariantDrawRig(t, 1, 1, items, 100)
	r.rank(t)
	r.end(t)
	r.settleAll(t)
	for i, e := range r.byRank(t) {
		require.Equal(t, seckill.EntryLost, e.Outcome, "rank %d", i+1)
	}
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, 2, d.EndedAtRank, "rank 1 (2 of B's 1 unit) does not fit; rank 2 does")
	require.Zero(t, d.Admitted)
}

// Once the waitlist is full, the entrants that do not fit lose without
// asking Redis, in large steps; an entry further down that fits its own
// variant is still admitted.
func TestSettleDraw_AnEntryThatFitsIsAdmittedPastAFullWaitlist(t *testing.T) {
	const n = activities.DrawSettleBatch + 5
	items := make([]seckill.Item, n)
	for i := range items {
		items[i] = seckill.Item{SKU: "A", Quantity: 1}
	}
	items[0].Quantity = 2                            // waits for A's 1 unit and a second: the line is full
	items[n-3] = seckill.Item{SKU: "B", Quantity: 1} // past the first batch, fits B
	r := newVariantDrawRig(t, 1, 1, items, 1)
	r.rank(t)
	r.settleAll(t)
	for i, e := range r.byRank(t) {
		want := seckill.EntryLost
		switch i {
		case 0:
			want = seckill.EntryWaiting
		case n - 3:
			want = seckill.EntryWon
		}
		require.Equal(t, want, e.Outcome, "rank %d (%+v)", i+1, e.Item)
	}
	d, err := r.st.DrawOf(t.Context(), r.sale.ID)
	require.NoError(t, err)
	require.Equal(t, 1, d.Admitted)
	require.Zero(t, d.EndedAtRank)
}
