package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// Variants, the limit per buyer and quantities (issue 32): every variant
// keeps its own split, in units, and an order moves its quantity of its
// own variant, all or nothing.

// shoes is a sale of three variants, listed on purpose neither by price
// nor by sku, with a limit of 3 units per buyer.
func shoes() seckill.NewSale {
	n := newSale(1)
	n.Name = "Runner 1"
	n.LimitPerBuyer = 3
	n.Variants = []seckill.NewVariant{
		{SKU: "eu-43", Name: "EU 43", PriceCents: 12000, Stock: 60},
		{SKU: "eu-42", Name: "EU 42", PriceCents: 11000, Stock: 40},
		{SKU: "eu-44.wide", Name: "EU 44 wide", PriceCents: 13000, Stock: 5},
	}
	return n
}

func createShoes(t *testing.T, st *store.Store) *seckill.Sale {
	t.Helper()
	sale, err := st.CreateSale(t.Context(), shoes(), nil)
	require.NoError(t, err)
	return sale
}

// variantStock is the split of the sale's variant sku as the store reads it.
func variantStock(t *testing.T, st *store.Store, saleID int64, sku string) seckill.Stock {
	t.Helper()
	sale, err := st.Sale(t.Context(), saleID)
	require.NoError(t, err)
	v, ok := sale.Variant(sku)
	require.True(t, ok, "sale %d has no variant %s", saleID, sku)
	return v.Stock
}

// startItem starts order id of item for user, and returns the error.
func startItem(t *testing.T, st *store.Store, saleID, id int64, user string, item seckill.Item) (*seckill.Order, error) {
	t.Helper()
	o, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: id, SaleID: saleID, UserID: user, CreatedAt: time.Now(),
		PayBy: time.Now().Add(15 * time.Minute), Item: item})
	return o, err
}

func TestCreateSale_EveryReadHasTheVariantsInTheirOrderAndTheirSums(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	var within *seckill.Sale

	created, err := st.CreateSale(ctx, shoes(), func(s *seckill.Sale) error { within = s; return nil })
	require.NoError(t, err)

	want := []seckill.Variant{
		{SKU: "eu-43", Name: "EU 43", PriceCents: 12000, Stock: split(60, 60, 0, 0)},
		{SKU: "eu-42", Name: "EU 42", PriceCents: 11000, Stock: split(40, 40, 0, 0)},
		{SKU: "eu-44.wide", Name: "EU 44 wide", PriceCents: 13000, Stock: split(5, 5, 0, 0)},
	}
	byID, err := st.Sale(ctx, created.ID)
	require.NoError(t, err)
	listed, err := st.Sales(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	open, err := st.OpenSales(ctx, time.Now())
	require.NoError(t, err)
	require.Len(t, open, 1)
	snap, err := st.WarmSnapshot(ctx, created.ID)
	require.NoError(t, err)
	stats, err := st.SaleStats(ctx, created.ID)
	require.NoError(t, err)
	for name, sale := range map[string]*seckill.Sale{
		"CreateSale": created, "within": within, "Sale": byID, "Sales": listed[0], "OpenSales": open[0],
		"WarmSnapshot": snap.Sale, "SaleStats": stats.Sale,
	} {
		require.Equal(t, want, sale.Variants, name)
		require.Equal(t, split(105, 105, 0, 0), sale.Stock, "%s: the sale's stock is the sum of its variants'", name)
		require.Equal(t, int64(11000), sale.PriceCents, "%s: the sale's price is its lowest", name)
		require.Equal(t, 3, sale.LimitPerBuyer, name)
	}
}

func TestCreateSale_WithoutALimitPerBuyerTheLimitIsOne(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)

	sale := createSale(t, st, 10)

	require.Equal(t, seckill.DefaultLimitPerBuyer, sale.LimitPerBuyer)
	require.Equal(t, []string{seckill.DefaultSKU}, sale.SKUs())
}

func TestCreateSale_ASaleWithoutVariantsIsRefused(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	n := newSale(1)
	n.Variants = nil

	_, err := st.CreateSale(t.Context(), n, nil)

	require.Error(t, err)
	sales, err := st.Sales(t.Context(), 10, 0)
	require.NoError(t, err)
	require.Empty(t, sales)
}

func TestCreateSale_TwoVariantsOfOneSKUAreRefusedTogether(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	n := shoes()
	n.Variants[2].SKU = n.Variants[0].SKU

	_, err := st.CreateSale(t.Context(), n, nil)

	require.Error(t, err)
	sales, err := st.Sales(t.Context(), 10, 0)
	require.NoError(t, err)
	require.Empty(t, sales, "the sale goes with its variants")
}

func TestStartOrder_LocksItsQuantityOfItsVariantAtQuantityTimesItsPrice(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)

	o, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-42", Quantity: 3})

	require.NoError(t, err)
	require.Equal(t, seckill.StatusAwaitingPayment, o.Status)
	require.Equal(t, seckill.Item{SKU: "eu-42", Quantity: 3}, o.Item)
	require.Equal(t, int64(3*11000), o.AmountCents)
	require.Equal(t, o.Item, order(t, st, 7).Item, "the order reads back with its item")
	require.Equal(t, split(40, 37, 3, 0), variantStock(t, st, sale.ID, "eu-42"))
	require.Equal(t, split(60, 60, 0, 0), variantStock(t, st, sale.ID, "eu-43"), "another variant is untouched")
	require.Equal(t, split(105, 102, 3, 0), stock(t, st, sale.ID))
}

func TestStartOrder_AnInputWithoutItemIsOneDefaultUnit(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 2)

	o := startOrder(t, st, sale.ID, 7, "alice")

	require.Equal(t, seckill.DefaultItem, o.Item)
	require.Equal(t, int64(990), o.AmountCents)
	require.Equal(t, split(2, 1, 1, 0), stock(t, st, sale.ID))
}

func TestStartOrder_FewerUnitsThanItsQuantityClosesItSoldOutAndLocksNothing(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-44.wide", Quantity: 3})
	require.NoError(t, err)

	o, err := startItem(t, st, sale.ID, 8, "bob", seckill.Item{SKU: "eu-44.wide", Quantity: 3})

	require.ErrorIs(t, err, store.ErrSoldOut)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Equal(t, seckill.CloseSoldOut, o.CloseReason)
	require.Equal(t, split(5, 2, 3, 0), variantStock(t, st, sale.ID, "eu-44.wide"), "none of the 2 left is taken")
	again, err := startItem(t, st, sale.ID, 8, "bob", seckill.Item{SKU: "eu-44.wide", Quantity: 3})
	require.ErrorIs(t, err, store.ErrSoldOut, "a retried step finds it closed")
	require.Equal(t, seckill.CloseSoldOut, again.CloseReason)

	_, err = startItem(t, st, sale.ID, 9, "carol", seckill.Item{SKU: "eu-44.wide", Quantity: 2})
	require.NoError(t, err, "the 2 left fit an order of 2")
	require.Equal(t, split(5, 0, 5, 0), variantStock(t, st, sale.ID, "eu-44.wide"))
}

func TestStartOrder_AnUnknownSKUIsAnErrorThatNamesIt(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)

	_, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-45", Quantity: 1})

	require.ErrorIs(t, err, store.ErrVariantNotFound)
	require.Equal(t, seckill.CodeVariantNotFound, seckill.ErrorCode(err))
	require.ErrorContains(t, err, `"eu-45"`)
	exists, err := st.OrderExists(t.Context(), 7)
	require.NoError(t, err)
	require.False(t, exists, "nothing is written")
	require.Equal(t, split(105, 105, 0, 0), stock(t, st, sale.ID))
}

func TestStartOrder_ParallelOrdersOfSeveralUnitsNeverOversellAVariant(t *testing.T) {
	t.Parallel()
	const (
		orders = 20
		units  = 7 // room for three orders of 2, and one unit left over
	)
	st, _ := testenv.Store(t)
	n := newSale(units)
	n.LimitPerBuyer = 2
	sale, err := st.CreateSale(t.Context(), n, nil)
	require.NoError(t, err)

	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, orders)
	)
	for i := range orders {
		wg.Go(func() {
			<-start
			_, errs[i] = startItem(t, st, sale.ID, int64(i+1), fmt.Sprint("user-", i), seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2})
		})
	}
	close(start)
	wg.Wait()

	admitted := 0
	for i, err := range errs {
		if err == nil {
			admitted++
			continue
		}
		require.ErrorIs(t, err, store.ErrSoldOut, "order %d", i+1)
	}
	require.Equal(t, 3, admitted)
	require.Equal(t, split(units, 1, 6, 0), stock(t, st, sale.ID))
}

func TestConfirmPayment_SellsExactlyTheOrdersQuantity(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-43", Quantity: 3})
	require.NoError(t, err)

	_, err = st.ConfirmPayment(t.Context(), 7, "", "pi_7", time.Now())
	require.NoError(t, err)
	_, err = st.ConfirmPayment(t.Context(), 7, "", "pi_7", time.Now())
	require.NoError(t, err)

	require.Equal(t, split(60, 57, 0, 3), variantStock(t, st, sale.ID, "eu-43"), "sold once, however often confirmed")
	require.Equal(t, split(105, 102, 0, 3), stock(t, st, sale.ID))
}

func TestCloseUnpaid_GivesTheOrdersQuantityBackOnceHoweverOftenCalled(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-43", Quantity: 3})
	require.NoError(t, err)
	_, err = startItem(t, st, sale.ID, 8, "bob", seckill.Item{SKU: "eu-43", Quantity: 2})
	require.NoError(t, err)

	for range 2 {
		_, err = st.CloseUnpaid(t.Context(), 7, seckill.ClosePaymentTimeout, "", "", time.Now())
		require.NoError(t, err)
	}

	require.Equal(t, split(60, 58, 2, 0), variantStock(t, st, sale.ID, "eu-43"), "alice's 3 are back once; bob's 2 stay locked")
}

func TestCloseUnpaid_ASoldOutOrderGivesNothingBack(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 7, "alice", seckill.Item{SKU: "eu-44.wide", Quantity: 3})
	require.NoError(t, err, "alice takes 3 of 5")
	_, err = startItem(t, st, sale.ID, 8, "bob", seckill.Item{SKU: "eu-44.wide", Quantity: 3})
	require.ErrorIs(t, err, store.ErrSoldOut, "bob's 3 do not fit the 2 left")

	_, err = st.CloseUnpaid(t.Context(), 8, seckill.CloseCancelled, "", "", time.Now())

	require.NoError(t, err)
	require.Equal(t, split(5, 2, 3, 0), variantStock(t, st, sale.ID, "eu-44.wide"))
}

// The database refuses an oversell and a broken split by itself, whatever
// the code above it does (docs/DESIGN.md invariant 1, per variant).
func TestSaleVariants_TheChecksRefuseAnOversellAndABrokenSplit(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	for name, tt := range map[string]struct {
		sql, constraint string
	}{
		"more locked than available": {`UPDATE sale_variants SET available = available - 6, locked = locked + 6 WHERE sale_id = ? AND sku = 'eu-44.wide'`,
			"sale_variants_available_check"},
		"a unit sold from nowhere": {`UPDATE sale_variants SET sold = sold + 1 WHERE sale_id = ? AND sku = 'eu-44.wide'`,
			"sale_variants_split"},
		"more sold than the total": {`UPDATE sale_variants SET available = 0, sold = 6 WHERE sale_id = ? AND sku = 'eu-44.wide'`,
			"sale_variants_split"},
	} {
		err := st.Gorm().Exec(tt.sql, sale.ID).Error

		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, "23514", pgErr.Code, name)
		require.Equal(t, tt.constraint, pgErr.ConstraintName, name)
	}
	require.Equal(t, split(5, 5, 0, 0), variantStock(t, st, sale.ID, "eu-44.wide"))
}

func TestWarmSnapshot_CountsTheAdmissibleUnitsOfEachVariantAndTheItemOfEachClaim(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 1, "alice", seckill.Item{SKU: "eu-42", Quantity: 3})
	require.NoError(t, err)
	_, err = startItem(t, st, sale.ID, 2, "bob", seckill.Item{SKU: "eu-43", Quantity: 2})
	require.NoError(t, err)
	_, err = st.ConfirmPayment(t.Context(), 2, "", "pi_2", time.Now())
	require.NoError(t, err)
	_, err = startItem(t, st, sale.ID, 3, "carol", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(t.Context(), 3, seckill.CloseCancelled, "", "", time.Now())
	require.NoError(t, err)
	// A QUEUED row a retired saga left: its 2 units will come from
	// eu-42's available when its saga runs again.
	require.NoError(t, st.Gorm().Exec(`INSERT INTO orders (id, sale_id, user_id, sku, quantity, status, amount_cents, currency, created_at, updated_at)
		VALUES (4, ?, 'dave', 'eu-42', 2, 'QUEUED', 22000, 'usd', now(), now())`, sale.ID).Error)

	snap, err := st.WarmSnapshot(t.Context(), sale.ID)

	require.NoError(t, err)
	require.Equal(t, map[string]int64{"eu-42": 40 - 3 - 2, "eu-43": 60 - 2, "eu-44.wide": 5}, snap.Units)
	require.Equal(t, int64(35+58+5), snap.TotalUnits())
	require.ElementsMatch(t, []store.ActiveOrder{
		{UserID: "alice", OrderID: 1, Item: seckill.Item{SKU: "eu-42", Quantity: 3}},
		{UserID: "bob", OrderID: 2, Item: seckill.Item{SKU: "eu-43", Quantity: 2}},
		{UserID: "dave", OrderID: 4, Item: seckill.Item{SKU: "eu-42", Quantity: 2}},
	}, snap.Claims)
}

func TestSaleTotals_SumTheVariantsAndVariantTotalsTellEachOne(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	shoe, coupon := createShoes(t, st), createSale(t, st, 10)

	totals, err := st.SaleTotals(t.Context(), []int64{shoe.ID, coupon.ID, 424242})
	require.NoError(t, err)
	each, err := st.VariantTotals(t.Context(), []int64{shoe.ID, coupon.ID, 424242})
	require.NoError(t, err)

	require.Equal(t, map[int64]int64{shoe.ID: 105, coupon.ID: 10}, totals, "another database's sale is absent")
	require.Equal(t, map[int64]map[string]int64{
		shoe.ID:   {"eu-42": 40, "eu-43": 60, "eu-44.wide": 5},
		coupon.ID: {seckill.DefaultSKU: 10},
	}, each)
}

func TestSaleStats_CountsThePaidAmountOfEveryUnit(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createShoes(t, st)
	_, err := startItem(t, st, sale.ID, 1, "alice", seckill.Item{SKU: "eu-42", Quantity: 3})
	require.NoError(t, err)
	_, err = st.ConfirmPayment(t.Context(), 1, "", "pi_1", time.Now())
	require.NoError(t, err)

	stats, err := st.SaleStats(t.Context(), sale.ID)

	require.NoError(t, err)
	require.Equal(t, int64(3*11000), stats.PaidCents)
	require.Equal(t, int64(3), stats.Sale.Stock.Sold)
	require.Equal(t, int64(1), stats.Orders[seckill.StatusPaid], "orders are counted as orders")
}
