package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

func TestRestock_AddsToTheVariantsTotalAndAvailableOncePerKey(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-44.wide", Quantity: 3})
	require.NoError(t, err)

	first, made, err := st.Restock(ctx, sale.ID, "eu-44.wide", 50, "key-1", time.Now())
	require.NoError(t, err)
	require.True(t, made)
	require.Equal(t, "eu-44.wide", first.SKU)
	require.Equal(t, int64(50), first.Added)
	require.False(t, first.At.IsZero())
	require.NotZero(t, first.ID)
	require.Equal(t, sale.ID, first.SaleID)
	require.False(t, first.Applied, "its Redis half is the caller's")
	require.Equal(t, split(55, 52, 3, 0), variantStock(t, st, sale.ID, "eu-44.wide"))

	again, made, err := st.Restock(ctx, sale.ID, "eu-44.wide", 50, "key-1", time.Now())
	require.NoError(t, err)
	require.False(t, made, "the same key again adds nothing")
	require.Equal(t, first, again)

	reused, made, err := st.Restock(ctx, sale.ID, "eu-42", 7, "key-1", time.Now())
	require.NoError(t, err)
	require.False(t, made)
	require.Equal(t, first, reused, "a reuse with another body gets the first request's record, to tell them apart")

	require.Equal(t, split(55, 52, 3, 0), variantStock(t, st, sale.ID, "eu-44.wide"))
	require.Equal(t, split(40, 40, 0, 0), variantStock(t, st, sale.ID, "eu-42"))

	_, made, err = st.Restock(ctx, sale.ID, "eu-42", 7, "key-2", time.Now())
	require.NoError(t, err)
	require.True(t, made, "another key is another restock")
	require.Equal(t, split(47, 47, 0, 0), variantStock(t, st, sale.ID, "eu-42"))
}

func TestRestock_AKeyIsASalesOwn(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	one, other := createSale(t, st, 1), createSale(t, st, 1)

	_, made, err := st.Restock(t.Context(), one.ID, seckill.DefaultSKU, 1, "same-key", time.Now())
	require.NoError(t, err)
	require.True(t, made)
	_, made, err = st.Restock(t.Context(), other.ID, seckill.DefaultSKU, 1, "same-key", time.Now())
	require.NoError(t, err)
	require.True(t, made)

	require.Equal(t, split(2, 2, 0, 0), stock(t, st, one.ID))
	require.Equal(t, split(2, 2, 0, 0), stock(t, st, other.ID))
}

func TestRestock_AnUnknownVariantOrSaleRecordsNothing(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createShoes(t, st)

	_, _, err := st.Restock(ctx, sale.ID, "eu-45", 10, "key-1", time.Now())
	require.ErrorIs(t, err, store.ErrVariantNotFound)
	require.ErrorContains(t, err, `"eu-45"`)
	_, _, err = st.Restock(ctx, 424242, seckill.DefaultSKU, 10, "key-1", time.Now())
	require.ErrorIs(t, err, seckill.ErrNotFound)

	_, made, err := st.Restock(ctx, sale.ID, "eu-42", 10, "key-1", time.Now())
	require.NoError(t, err)
	require.True(t, made, "the refused request left no record under its key")
	require.Equal(t, split(115, 115, 0, 0), stock(t, st, sale.ID))
}

// A restock stays findable until its Redis half is done: re-warm leaves
// its units out of what it loads (the Redis half adds them), and
// reconciliation lists it once it is older than its grace.
func TestRestock_UnappliedUntilMarkedAndLeftOutOfTheReWarm(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createShoes(t, st)

	rec, _, err := st.Restock(ctx, sale.ID, "eu-42", 7, "key-1", time.Now())
	require.NoError(t, err)
	other, _, err := st.Restock(ctx, sale.ID, "eu-42", 2, "key-2", time.Now())
	require.NoError(t, err)
	require.Equal(t, split(49, 49, 0, 0), variantStock(t, st, sale.ID, "eu-42"), "the database counts both at once")

	snap, err := st.WarmSnapshot(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(40), snap.Units["eu-42"], "a re-warm loads neither: their Redis half will add them")
	require.Equal(t, int64(60), snap.Units["eu-43"])
	require.Equal(t, []int64{rec.ID, other.ID}, restockIDs(snap.Restocks),
		"and names them, so re-warm adds back what Redis placed of them (redisstore.RewarmAdmitting)")

	later := time.Now().Add(time.Minute)
	pending, err := st.UnappliedRestocks(ctx, sale.ID, later)
	require.NoError(t, err)
	require.Equal(t, []int64{rec.ID, other.ID}, restockIDs(pending), "oldest first")
	young, err := st.UnappliedRestocks(ctx, sale.ID, rec.At.Add(-time.Second))
	require.NoError(t, err)
	require.Empty(t, young, "a restock younger than the cut-off may still be in its request's hands")

	require.NoError(t, st.MarkRestockApplied(ctx, sale.ID, rec.ID))
	require.NoError(t, st.MarkRestockApplied(ctx, sale.ID, rec.ID), "marking again is harmless")
	require.ErrorIs(t, st.MarkRestockApplied(ctx, sale.ID+1, rec.ID), seckill.ErrNotFound, "a restock is its sale's")

	snap, err = st.WarmSnapshot(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(47), snap.Units["eu-42"], "an applied restock is the database's like any unit")
	require.Equal(t, []int64{other.ID}, restockIDs(snap.Restocks))
	pending, err = st.UnappliedRestocks(ctx, sale.ID, later)
	require.NoError(t, err)
	require.Equal(t, []int64{other.ID}, restockIDs(pending))

	again, first, err := st.Restock(ctx, sale.ID, "eu-42", 7, "key-1", time.Now())
	require.NoError(t, err)
	require.False(t, first)
	require.True(t, again.Applied, "a retry learns that the Redis half is done")
}

// A sale that has ended takes no new restock, but a retry of one made
// before the end still gets its first answer.
func TestRestock_AfterTheEndOnlyARetryIsAnswered(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 5)
	before, _, err := st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "before", time.Now())
	require.NoError(t, err)

	after := sale.EndsAt
	_, _, err = st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "after", after)
	require.ErrorIs(t, err, store.ErrSaleEnded)
	again, first, err := st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "before", after)
	require.NoError(t, err)
	require.False(t, first)
	require.Equal(t, before, again)
	require.Equal(t, split(8, 8, 0, 0), stock(t, st, sale.ID), "the refused one added nothing")

	_, first, err = st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "after", time.Now())
	require.NoError(t, err)
	require.True(t, first, "the refused key was not recorded")
}

func restockIDs(rs []seckill.Restock) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
