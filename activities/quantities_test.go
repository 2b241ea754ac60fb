package activities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/devpay"
	"github.com/seckill/seckill/store"
)

// Redis admitted an order of 3 units while above the database (it had
// lost an admission whose saga had taken a unit meanwhile): the database
// refuses it SOLD_OUT with 2 units available. Redis gets those 2 back, no
// more (it stays at or above the database, whose excess reconciliation
// lowers) and no fewer (none is stranded: giving none back would leave 2
// units the database has and Redis does not).
func TestStartOrder_ASoldOutOrderGivesRedisBackWhatTheDatabaseHad(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 3)
	testenv.Warm(t, rs, sale, 3)
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 900, SaleID: sale.ID, UserID: "lost", CreatedAt: now})
	require.NoError(t, err)
	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	three := seckill.Item{SKU: seckill.DefaultSKU, Quantity: 3}
	res, err := rs.Claim(ctx, sale.ID, "bob", 1001, "", terms, three)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2)
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.StartOrder, seckill.StartOrderInput{OrderID: 1001, SaleID: sale.ID, UserID: "bob", AdmittedAt: now, Item: three})
	require.NoError(t, err)
	var started seckill.StartOrderResult
	require.NoError(t, v.Get(&started))
	require.Equal(t, seckill.CloseSoldOut, started.CloseReason)
	require.Equal(t, 2, started.GiveBack)
	for range 2 { // the step and a retry
		_, err = env.ExecuteActivity(acts.ReleaseClaim, seckill.ReleaseClaimInput{SaleID: sale.ID, OrderID: 1001, UserID: "bob",
			Item: three, GiveBack: started.GiveBack})
		require.NoError(t, err)
	}

	n, ok, err := rs.Remaining(ctx, sale.ID)
	require.NoError(t, err)
	require.True(t, ok)
	s, err := st.Sale(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, s.Stock.Available, n, "Redis holds what the database has available")
}

// A saga whose input has no item (a relay of before v4, during a rolling
// upgrade, starts it from an entry a v4 API wrote) writes the order the
// admission admitted: its quantity, at quantity x price.
func TestStartOrder_AnInputWithoutItsItemTakesTheAdmissions(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 3)
	testenv.Warm(t, rs, sale, 3)
	terms := seckill.TermsBySKU(*sale)(seckill.DefaultSKU)
	res, err := rs.Claim(ctx, sale.ID, "ann", 1001, "", terms, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2})
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := activities.New(st, rs, rs.ForDraw(), devpay.Provider{Ledger: st}, &ids{}, 2)
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.StartOrder, seckill.StartOrderInput{OrderID: 1001, SaleID: sale.ID, UserID: "ann", AdmittedAt: now})
	require.NoError(t, err)
	var started seckill.StartOrderResult
	require.NoError(t, v.Get(&started))
	require.Equal(t, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}, started.Item)
	require.Equal(t, 2*terms.UnitPriceCents, started.AmountCents)
	o, err := st.Order(ctx, 1001)
	require.NoError(t, err)
	require.Equal(t, 2, o.Item.Quantity)
}
