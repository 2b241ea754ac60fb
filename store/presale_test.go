package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

func TestCreateSale_StoresItsPresaleAndEveryReadHasIt(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	n := newSale(10)
	n.Presale = &seckill.Presale{StartsAt: n.StartsAt.Add(-time.Hour), Claim: "/groups=vip"}

	created, err := st.CreateSale(t.Context(), n, nil)
	require.NoError(t, err)

	require.Equal(t, n.Presale, created.Presale)
	got, err := st.Sale(t.Context(), created.ID)
	require.NoError(t, err)
	require.Equal(t, n.Presale, got.Presale)
	listed, err := st.Sales(t.Context(), 10, 0)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, n.Presale, listed[0].Presale)

	plain, err := st.CreateSale(t.Context(), newSale(10), nil)
	require.NoError(t, err)
	require.Nil(t, plain.Presale, "a sale without a presale reads none")
}

func TestCreateSale_APresaleAfterTheStartIsRefusedByTheDatabase(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	n := newSale(10)
	n.Presale = &seckill.Presale{StartsAt: n.StartsAt, Claim: "/groups=vip"}

	_, err := st.CreateSale(t.Context(), n, nil)

	require.ErrorContains(t, err, "sales_presale")
}
