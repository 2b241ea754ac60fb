package store_test

import (
	"testing"

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

	first, made, err := st.Restock(ctx, sale.ID, "eu-44.wide", 50, "key-1")
	require.NoError(t, err)
	require.True(t, made)
	require.Equal(t, "eu-44.wide", first.SKU)
	require.Equal(t, int64(50), first.Added)
	require.False(t, first.At.IsZero())
	require.Equal(t, split(55, 52, 3, 0), variantStock(t, st, sale.ID, "eu-44.wide"))

	again, made, err := st.Restock(ctx, sale.ID, "eu-44.wide", 50, "key-1")
	require.NoError(t, err)
	require.False(t, made, "the same key again adds nothing")
	require.Equal(t, first, again)

	reused, made, err := st.Restock(ctx, sale.ID, "eu-42", 7, "key-1")
	require.NoError(t, err)
	require.False(t, made)
	require.Equal(t, first, reused, "a reuse with another body gets the first request's record, to tell them apart")

	require.Equal(t, split(55, 52, 3, 0), variantStock(t, st, sale.ID, "eu-44.wide"))
	require.Equal(t, split(40, 40, 0, 0), variantStock(t, st, sale.ID, "eu-42"))

	_, made, err = st.Restock(ctx, sale.ID, "eu-42", 7, "key-2")
	require.NoError(t, err)
	require.True(t, made, "another key is another restock")
	require.Equal(t, split(47, 47, 0, 0), variantStock(t, st, sale.ID, "eu-42"))
}

func TestRestock_AKeyIsASalesOwn(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	one, other := createSale(t, st, 1), createSale(t, st, 1)

	_, made, err := st.Restock(t.Context(), one.ID, seckill.DefaultSKU, 1, "same-key")
	require.NoError(t, err)
	require.True(t, made)
	_, made, err = st.Restock(t.Context(), other.ID, seckill.DefaultSKU, 1, "same-key")
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

	_, _, err := st.Restock(ctx, sale.ID, "eu-45", 10, "key-1")
	require.ErrorIs(t, err, store.ErrVariantNotFound)
	require.ErrorContains(t, err, `"eu-45"`)
	_, _, err = st.Restock(ctx, 424242, seckill.DefaultSKU, 10, "key-1")
	require.ErrorIs(t, err, seckill.ErrNotFound)

	_, made, err := st.Restock(ctx, sale.ID, "eu-42", 10, "key-1")
	require.NoError(t, err)
	require.True(t, made, "the refused request left no record under its key")
	require.Equal(t, split(115, 115, 0, 0), stock(t, st, sale.ID))
}
