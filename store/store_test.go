package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

func newSale(units int64) seckill.NewSale {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return seckill.NewSale{
		Name:           "Flash coupon",
		Currency:       "usd",
		Variants:       testenv.DefaultVariant("Flash coupon", 990, units),
		StartsAt:       now.Add(-time.Minute),
		EndsAt:         now.Add(time.Hour),
		PaymentTimeout: 15 * time.Minute,
	}
}

func createSale(t *testing.T, st *store.Store, units int64) *seckill.Sale {
	t.Helper()
	sale, err := st.CreateSale(t.Context(), newSale(units), nil)
	require.NoError(t, err)
	return sale
}

// startOrder writes an admitted order AWAITING_PAYMENT, its unit locked.
func startOrder(t *testing.T, st *store.Store, saleID, orderID int64, user string) *seckill.Order {
	t.Helper()
	o, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: orderID, SaleID: saleID, UserID: user, CreatedAt: time.Now(),
		PayBy: time.Now().Add(15 * time.Minute).Truncate(time.Microsecond)})
	require.NoError(t, err)
	return o
}

func stock(t *testing.T, st *store.Store, saleID int64) seckill.Stock {
	t.Helper()
	sale, err := st.Sale(t.Context(), saleID)
	require.NoError(t, err)
	return sale.Stock
}

func order(t *testing.T, st *store.Store, id int64) *seckill.Order {
	t.Helper()
	o, err := st.Order(t.Context(), id)
	require.NoError(t, err)
	return o
}

func split(total, available, locked, sold int64) seckill.Stock {
	return seckill.Stock{Total: total, Available: available, Locked: locked, Sold: sold}
}

func TestCreateSale_StoresSaleWithAllStockAvailable(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	n := newSale(100)

	created, err := st.CreateSale(t.Context(), n, nil)
	require.NoError(t, err)

	require.NotZero(t, created.ID)
	got, err := st.Sale(t.Context(), created.ID)
	require.NoError(t, err)
	require.Equal(t, &seckill.Sale{
		ID:             created.ID,
		Name:           n.Name,
		PriceCents:     990,
		Currency:       n.Currency,
		StartsAt:       n.StartsAt,
		EndsAt:         n.EndsAt,
		PaymentTimeout: n.PaymentTimeout,
		StockSegments:  1,
		LimitPerBuyer:  seckill.DefaultLimitPerBuyer,
		Variants: []seckill.Variant{
			{SKU: seckill.DefaultSKU, Name: n.Name, PriceCents: 990, Stock: split(100, 100, 0, 0)},
		},
		Stock: split(100, 100, 0, 0),
	}, got)
	require.Equal(t, got, created)
}

func TestCreateSale_FailingWithinRollsBack(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	boom := errors.New("warm-up failed")
	var seen *seckill.Sale

	_, err := st.CreateSale(t.Context(), newSale(10), func(s *seckill.Sale) error {
		seen = s
		return boom
	})

	require.ErrorIs(t, err, boom)
	require.NotNil(t, seen)
	require.NotZero(t, seen.ID, "within sees the sale's id")
	_, err = st.Sale(t.Context(), seen.ID)
	require.ErrorIs(t, err, seckill.ErrNotFound)
	sales, err := st.Sales(t.Context(), 10, 0)
	require.NoError(t, err)
	require.Empty(t, sales)
}

func TestSale_UnknownIsNotFound(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)

	_, err := st.Sale(t.Context(), 12345)

	require.ErrorIs(t, err, seckill.ErrNotFound)
}

func TestSales_PagesNewestFirst(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	var ids []int64
	for range 5 {
		ids = append(ids, createSale(t, st, 1).ID)
	}

	var pages [][]int64
	before := int64(0)
	for {
		sales, err := st.Sales(t.Context(), 2, before)
		require.NoError(t, err)
		if len(sales) == 0 {
			break
		}
		var page []int64
		for _, s := range sales {
			page = append(page, s.ID)
		}
		pages = append(pages, page)
		before = page[len(page)-1]
	}

	require.Equal(t, [][]int64{{ids[4], ids[3]}, {ids[2], ids[1]}, {ids[0]}}, pages)
}

func TestStartOrder_UnknownSaleIsNotFound(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)

	_, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 7, SaleID: 999, UserID: "alice", CreatedAt: time.Now()})

	require.ErrorIs(t, err, seckill.ErrNotFound)
}

func TestStartOrder_SoldOutUserMayOrderAgain(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 1)
	startOrder(t, st, sale.ID, 7, "alice")
	_, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 8, SaleID: sale.ID, UserID: "bob", CreatedAt: time.Now()})
	require.ErrorIs(t, err, store.ErrSoldOut)

	// Alice's unit comes back; bob's sold-out order is no longer active, so
	// his next claim can be written, and so can Alice's.
	_, err = st.CloseUnpaid(t.Context(), 7, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	o := startOrder(t, st, sale.ID, 9, "bob")
	require.Equal(t, seckill.StatusAwaitingPayment, o.Status)
	_, _, err = st.StartOrder(t.Context(), store.NewOrder{ID: 10, SaleID: sale.ID, UserID: "alice", CreatedAt: time.Now()})
	require.ErrorIs(t, err, store.ErrSoldOut, "a closed order is no longer active: refused only for stock")
}

func TestStartOrder_ParallelOrdersNeverOversell(t *testing.T) {
	t.Parallel()
	const (
		orders = 20
		units  = 5
	)
	st, _ := testenv.Store(t)
	sale := createSale(t, st, units)
	ctx := t.Context()

	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, orders)
	)
	for i := range orders {
		wg.Go(func() {
			<-start
			_, _, errs[i] = st.StartOrder(ctx, store.NewOrder{ID: int64(i + 1), SaleID: sale.ID, UserID: "user-" + strconv.Itoa(i),
				CreatedAt: time.Now(), PayBy: time.Now().Add(15 * time.Minute)})
		})
	}
	close(start)
	wg.Wait()

	statuses := map[string]int{}
	for i := range orders {
		if errs[i] != nil {
			require.ErrorIs(t, errs[i], store.ErrSoldOut, "order %d", i+1)
		}
		o := order(t, st, int64(i+1))
		key := string(o.Status)
		if o.CloseReason != "" {
			key += " " + string(o.CloseReason)
		}
		statuses[key]++
		require.Equal(t, errs[i] == nil, o.Status == seckill.StatusAwaitingPayment, "order %d: %v", i+1, errs[i])
	}
	require.Equal(t, map[string]int{
		"AWAITING_PAYMENT": units,
		"CLOSED SOLD_OUT":  orders - units,
	}, statuses)
	s := stock(t, st, sale.ID)
	require.Equal(t, split(units, 0, units, 0), s)
	require.Equal(t, s.Total, s.Available+s.Locked+s.Sold)
}

func TestConfirmPayment_SellsLockedUnit(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 5)
	startOrder(t, st, sale.ID, 7, "alice")
	paidAt := time.Now().Truncate(time.Microsecond)

	o, err := st.ConfirmPayment(t.Context(), 7, "", "pi_1", paidAt)

	require.NoError(t, err)
	require.Equal(t, seckill.StatusPaid, o.Status)
	require.NotNil(t, o.PaidAt)
	require.True(t, paidAt.Equal(*o.PaidAt))
	require.Equal(t, normalize(o), normalize(order(t, st, 7)))
	require.Equal(t, split(5, 4, 0, 1), stock(t, st, sale.ID))
}

func TestConfirmPayment_IsIdempotent(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 5)
	startOrder(t, st, sale.ID, 7, "alice")
	first, err := st.ConfirmPayment(t.Context(), 7, "", "pi_1", time.Now().Truncate(time.Microsecond))
	require.NoError(t, err)

	again, err := st.ConfirmPayment(t.Context(), 7, "", "pi_2", time.Now().Add(time.Minute))

	require.NoError(t, err)
	require.Equal(t, normalize(first), normalize(again))
	require.Equal(t, split(5, 4, 0, 1), stock(t, st, sale.ID))
}

func TestConfirmPayment_ClosedOrderRefused(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 5)
	startOrder(t, st, sale.ID, 7, "alice")
	_, err := st.CloseUnpaid(t.Context(), 7, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)

	_, err = st.ConfirmPayment(t.Context(), 7, "", "pi_1", time.Now())

	require.ErrorIs(t, err, store.ErrOrderClosed)
	o := order(t, st, 7)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Nil(t, o.PaidAt)
	require.Equal(t, split(5, 5, 0, 0), stock(t, st, sale.ID))
}

func TestCloseUnpaid_ReleasesLockedUnitOnce(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 5)
	startOrder(t, st, sale.ID, 7, "alice")
	closedAt := time.Now().Truncate(time.Microsecond)

	o, err := st.CloseUnpaid(t.Context(), 7, seckill.ClosePaymentTimeout, "", "", closedAt)

	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Equal(t, seckill.ClosePaymentTimeout, o.CloseReason)
	require.NotNil(t, o.ClosedAt)
	require.True(t, closedAt.Equal(*o.ClosedAt))
	require.Equal(t, split(5, 5, 0, 0), stock(t, st, sale.ID))

	again, err := st.CloseUnpaid(t.Context(), 7, seckill.CloseCancelled, "", "", time.Now().Add(time.Minute))

	require.NoError(t, err)
	require.Equal(t, normalize(o), normalize(again), "a second close keeps the first reason")
	require.Equal(t, split(5, 5, 0, 0), stock(t, st, sale.ID))
}

func TestCloseUnpaid_PaidOrderRefused(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 5)
	startOrder(t, st, sale.ID, 7, "alice")
	_, err := st.ConfirmPayment(t.Context(), 7, "", "pi_1", time.Now())
	require.NoError(t, err)

	_, err = st.CloseUnpaid(t.Context(), 7, seckill.ClosePaymentTimeout, "", "", time.Now())

	require.ErrorIs(t, err, store.ErrOrderPaid)
	require.Equal(t, seckill.StatusPaid, order(t, st, 7).Status)
	require.Equal(t, split(5, 4, 0, 1), stock(t, st, sale.ID))
}

func TestRecordPaymentEvent_InsertsOnce(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	e := seckill.PaymentRecord{
		ID:              "evt_1",
		Type:            string(seckill.PaymentSucceeded),
		OrderID:         7,
		PaymentIntentID: "pi_1",
		AmountCents:     990,
		Currency:        "usd",
		Payload:         []byte(`{"id": "evt_1"}`),
		Outcome:         seckill.OutcomeReceived,
	}

	stored, inserted, err := st.RecordPaymentEvent(t.Context(), e)

	require.NoError(t, err)
	require.True(t, inserted)
	require.Equal(t, "evt_1", stored.ID)
	require.Equal(t, int64(7), stored.OrderID)
	require.Equal(t, "pi_1", stored.PaymentIntentID)
	require.Equal(t, int64(990), stored.AmountCents)
	require.Equal(t, "usd", stored.Currency)
	require.JSONEq(t, `{"id": "evt_1"}`, string(stored.Payload))
	require.Equal(t, seckill.OutcomeReceived, stored.Outcome)
	require.Nil(t, stored.DeliveredAt)

	dup := e
	dup.AmountCents, dup.Outcome = 1, seckill.OutcomeIgnored
	again, inserted, err := st.RecordPaymentEvent(t.Context(), dup)

	require.NoError(t, err)
	require.False(t, inserted)
	require.Equal(t, stored, again, "a duplicate returns the first event unchanged")
}

func TestRecordPaymentEvent_WithoutOrder(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)

	stored, inserted, err := st.RecordPaymentEvent(t.Context(), seckill.PaymentRecord{
		ID: "evt_1", Type: "customer.created", Payload: []byte(`{}`), Outcome: seckill.OutcomeIgnored,
	})

	require.NoError(t, err)
	require.True(t, inserted)
	require.Zero(t, stored.OrderID)
	require.Empty(t, stored.PaymentIntentID)
	require.Equal(t, seckill.OutcomeIgnored, stored.Outcome)
}

func TestMarkDelivered_OnlyReplacesReceived(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		outcome  seckill.PaymentOutcome
		expected seckill.PaymentOutcome
	}{
		{"received", seckill.OutcomeReceived, seckill.OutcomeDelivered},
		{"applied", seckill.OutcomeApplied, seckill.OutcomeApplied},
		{"late", seckill.OutcomeLate, seckill.OutcomeLate},
	}
	st, _ := testenv.Store(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "evt_" + strconv.Itoa(i)
			_, _, err := st.RecordPaymentEvent(t.Context(), seckill.PaymentRecord{
				ID: id, Type: string(seckill.PaymentSucceeded), OrderID: 7, Payload: []byte(`{}`), Outcome: tt.outcome,
			})
			require.NoError(t, err)

			require.NoError(t, st.MarkDelivered(t.Context(), id))

			e, err := st.PaymentEvent(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, tt.expected, e.Outcome)
			require.NotNil(t, e.DeliveredAt)
		})
	}
}

func TestMarkDelivered_KeepsFirstDeliveryTime(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	_, _, err := st.RecordPaymentEvent(t.Context(), seckill.PaymentRecord{
		ID: "evt_1", Type: string(seckill.PaymentSucceeded), OrderID: 7, Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived,
	})
	require.NoError(t, err)
	require.NoError(t, st.MarkDelivered(t.Context(), "evt_1"))
	first, err := st.PaymentEvent(t.Context(), "evt_1")
	require.NoError(t, err)

	time.Sleep(10 * time.Millisecond) // now() would differ in a new transaction
	require.NoError(t, st.MarkDelivered(t.Context(), "evt_1"))

	again, err := st.PaymentEvent(t.Context(), "evt_1")
	require.NoError(t, err)
	require.Equal(t, first.DeliveredAt, again.DeliveredAt)
}

func TestSetPaymentOutcome_RecordsOutcomeAndDelivery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		delivered bool
	}{
		{"delivered", true},
		{"not delivered", false},
	}
	st, _ := testenv.Store(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "evt_" + strconv.Itoa(i)
			_, _, err := st.RecordPaymentEvent(t.Context(), seckill.PaymentRecord{
				ID: id, Type: string(seckill.PaymentSucceeded), OrderID: 7, Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived,
			})
			require.NoError(t, err)

			require.NoError(t, st.SetPaymentOutcome(t.Context(), id, seckill.OutcomeLate, tt.delivered))

			e, err := st.PaymentEvent(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, seckill.OutcomeLate, e.Outcome)
			require.Equal(t, tt.delivered, e.DeliveredAt != nil)
		})
	}
}

func TestPaymentEvent_UnknownIsNotFound(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)

	_, err := st.PaymentEvent(t.Context(), "evt_missing")

	require.ErrorIs(t, err, seckill.ErrNotFound)
}

func TestEnsureDatabase_CreatesMissingDatabase(t *testing.T) {
	t.Parallel()
	_, dsn := testenv.Store(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	name := "seckill_ensure_" + testenv.Suffix()
	u.Path = "/" + name
	target := u.String()
	t.Cleanup(func() { dropDatabase(t, dsn, name) })
	ctx := t.Context()

	require.NoError(t, store.EnsureDatabase(ctx, target))

	st, err := store.Open(ctx, target, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	require.NoError(t, st.Migrate(ctx))
	created := createSale(t, st, 3)
	require.NoError(t, st.Close())

	require.NoError(t, store.EnsureDatabase(ctx, target), "an existing database is left alone")

	st, err = store.Open(ctx, target, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	got, err := st.Sale(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, created.ID, got.ID, "the existing data survives")
}

func TestEnsureDatabase_RejectsBadURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dsn  string
	}{
		{"not a url", "host=localhost dbname=x"},
		{"no database", "postgres://postgres@127.0.0.1:5432/?sslmode=disable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, store.EnsureDatabase(t.Context(), tt.dsn))
		})
	}
}

// dropDatabase removes name from the server of dsn.
func dropDatabase(t *testing.T, dsn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Logf("drop database %s: %v", name, err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", pgx.Identifier{name}.Sanitize())); err != nil {
		t.Logf("drop database %s: %v", name, err)
	}
}

// normalize puts o's times in UTC so orders compare with require.Equal
// whatever location the driver returned them in.
func normalize(o *seckill.Order) *seckill.Order {
	c := *o
	c.CreatedAt = c.CreatedAt.UTC()
	for _, p := range []**time.Time{&c.PayBy, &c.PaidAt, &c.ClosedAt} {
		if *p != nil {
			u := (**p).UTC()
			*p = &u
		}
	}
	return &c
}

func TestWarmSnapshot_LoadsAvailableUnitsAndActiveOrders(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 5)
	startOrder(t, st, sale.ID, 1, "alice")
	startOrder(t, st, sale.ID, 2, "bob")
	_, err := st.ConfirmPayment(t.Context(), 2, "", "pi_2", time.Now())
	require.NoError(t, err)
	startOrder(t, st, sale.ID, 3, "carol")
	_, err = st.CloseUnpaid(t.Context(), 3, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err)
	// A QUEUED row a retired saga left: it will take a unit when its
	// saga runs again.
	require.NoError(t, st.Gorm().Exec(`INSERT INTO orders (id, sale_id, user_id, status, amount_cents, currency, created_at, updated_at)
		VALUES (4, ?, 'dave', 'QUEUED', 990, 'usd', now(), now())`, sale.ID).Error)

	snap, err := st.WarmSnapshot(t.Context(), sale.ID)

	require.NoError(t, err)
	require.Equal(t, map[string]int64{seckill.DefaultSKU: 2}, snap.Units, "5 total - 1 locked - 1 sold - 1 queued")
	require.Equal(t, int64(2), snap.TotalUnits())
	require.ElementsMatch(t, []store.ActiveOrder{
		{UserID: "alice", OrderID: 1, Item: seckill.DefaultItem},
		{UserID: "bob", OrderID: 2, Item: seckill.DefaultItem},
		{UserID: "dave", OrderID: 4, Item: seckill.DefaultItem},
	}, snap.Claims)

	open, err := st.OpenSales(t.Context(), time.Now())
	require.NoError(t, err)
	require.Len(t, open, 1)
	open, err = st.OpenSales(t.Context(), sale.EndsAt)
	require.NoError(t, err)
	require.Empty(t, open)
}

func TestStartOrder_WritesOrderAndLocksUnitInOneStep(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 2)
	admitted := time.Now().UTC().Truncate(time.Millisecond)
	payBy := admitted.Add(90 * time.Second)

	o, got, err := st.StartOrder(t.Context(), store.NewOrder{ID: 7, SaleID: sale.ID, UserID: "alice", CreatedAt: admitted, PayBy: payBy})

	require.NoError(t, err)
	require.Equal(t, sale.ID, got.ID)
	require.Equal(t, seckill.StatusAwaitingPayment, o.Status)
	require.True(t, payBy.Equal(*o.PayBy), "pay_by is the one fixed at admission, not now + timeout")
	require.Equal(t, split(2, 1, 1, 0), stock(t, st, sale.ID))

	again, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 7, SaleID: sale.ID, UserID: "alice", CreatedAt: admitted, PayBy: payBy.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, normalize(o), normalize(again), "a repeat changes nothing")
	require.Equal(t, split(2, 1, 1, 0), stock(t, st, sale.ID))
}

func TestStartOrder_DerivesPayByForOldInputs(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 1)
	admitted := time.Now().UTC().Truncate(time.Millisecond)

	o, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 7, SaleID: sale.ID, UserID: "alice", CreatedAt: admitted})

	require.NoError(t, err)
	require.True(t, admitted.Add(sale.PaymentTimeout).Equal(*o.PayBy))
}

func TestStartOrder_SoldOutClosesInTheSameStep(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 1)
	_, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 7, SaleID: sale.ID, UserID: "alice", CreatedAt: time.Now()})
	require.NoError(t, err)

	o, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 8, SaleID: sale.ID, UserID: "bob", CreatedAt: time.Now()})

	require.ErrorIs(t, err, store.ErrSoldOut)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Equal(t, seckill.CloseSoldOut, order(t, st, 8).CloseReason)
	require.Equal(t, split(1, 0, 1, 0), stock(t, st, sale.ID))
}

// A second active order of a user (Redis admitted it after losing the
// first's claim) is refused a unit, and written CLOSED as CANCELLED: a
// payment made for it joins a row and is refunded like any other.
func TestStartOrder_SecondActiveOrderOfUserIsWrittenClosedWithoutAUnit(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 2)
	_, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 7, SaleID: sale.ID, UserID: "alice", CreatedAt: time.Now()})
	require.NoError(t, err)

	o, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: 8, SaleID: sale.ID, UserID: "alice", CreatedAt: time.Now()})
	require.ErrorIs(t, err, store.ErrActiveOrderExists)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Equal(t, seckill.CloseCancelled, o.CloseReason)
	// A retried saga step finds it written and takes it as it stands.
	o, _, err = st.StartOrder(t.Context(), store.NewOrder{ID: 8, SaleID: sale.ID, UserID: "alice", CreatedAt: time.Now()})
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Equal(t, seckill.StatusAwaitingPayment, order(t, st, 7).Status, "the first order stands")
	require.Equal(t, split(2, 1, 1, 0), stock(t, st, sale.ID))
}

func TestConfirmAndClose_RecordTheDecidingEventInTheSameTransaction(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := createSale(t, st, 2)
	for _, id := range []int64{7, 8} {
		_, _, err := st.StartOrder(t.Context(), store.NewOrder{ID: id, SaleID: sale.ID, UserID: "u" + strconv.FormatInt(id, 10), CreatedAt: time.Now()})
		require.NoError(t, err)
	}
	for _, ev := range []seckill.PaymentRecord{
		{ID: "evt_paid", Type: string(seckill.PaymentSucceeded), OrderID: 7, AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived},
		{ID: "evt_failed", Type: string(seckill.PaymentFailed), OrderID: 8, AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived},
	} {
		_, _, err := st.RecordPaymentEvent(t.Context(), ev)
		require.NoError(t, err)
	}
	pending, err := st.OrderPaymentEvents(t.Context(), 7)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.True(t, pending[0].Pending())
	require.Equal(t, "evt_paid", pending[0].Signal().EventID)
	require.False(t, pending[0].Signal().ReceivedAt.IsZero(), "the saga judges it by when it was received")

	_, err = st.ConfirmPayment(t.Context(), 7, "evt_paid", "pi_1", time.Now())
	require.NoError(t, err)
	_, err = st.CloseUnpaid(t.Context(), 8, seckill.ClosePaymentFailed, "evt_failed", "", time.Now())
	require.NoError(t, err)

	for _, id := range []string{"evt_paid", "evt_failed"} {
		e, err := st.PaymentEvent(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, seckill.OutcomeApplied, e.Outcome, id)
		require.NotNil(t, e.DeliveredAt, id)
	}
	pending, err = st.OrderPaymentEvents(t.Context(), 7)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.False(t, pending[0].Pending(), "acted on: a saga that sees it again knows")
}

// CloseUnpaid counts a payment received after pay_by only when it came
// through the order's own PaymentIntent as the saga knows it, the rule the
// saga judges payments by: one the saga refunds as late (a PaymentIntent
// the buyer made after the saga gave up making one) never stops the close.
func TestCloseUnpaid_CountsALatePaymentOnlyThroughTheSagasOwnIntent(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 2)
	past := time.Now().Add(-time.Minute)
	for _, id := range []int64{7, 8} {
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: fmt.Sprint("u", id), CreatedAt: past.Add(-time.Minute), PayBy: past})
		require.NoError(t, err)
		_, err = st.SavePaymentIntent(ctx, id, seckill.Intent{Provider: "stripe", ID: fmt.Sprint("pi_", id), ClientSecret: "s"})
		require.NoError(t, err)
		_, _, err = st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: fmt.Sprint("evt_", id), Type: string(seckill.PaymentSucceeded), OrderID: id,
			PaymentIntentID: fmt.Sprint("pi_", id), AmountCents: sale.PriceCents, Currency: sale.Currency, Payload: []byte(`{}`), Outcome: seckill.OutcomeReceived})
		require.NoError(t, err)
	}

	_, err := st.CloseUnpaid(ctx, 7, seckill.ClosePaymentTimeout, "", "", time.Now())
	require.NoError(t, err, "the saga knows no PaymentIntent of order 7: its late payment is refunded, the order closes")
	require.Equal(t, seckill.StatusClosed, order(t, st, 7).Status)

	_, err = st.CloseUnpaid(ctx, 8, seckill.ClosePaymentTimeout, "", "pi_8", time.Now())
	var paid *store.PaidInTimeError
	require.ErrorAs(t, err, &paid, "a payment through the saga's own PaymentIntent counts, however late")
	require.Equal(t, "evt_8", paid.Event.ID)
	require.Equal(t, seckill.StatusAwaitingPayment, order(t, st, 8).Status)
}

// Two first entries of one buyer at once (a double click) answer the same
// entry, and only one is created.
func TestEnter_TwoFirstEntriesAtOnceAnswerTheSameEntry(t *testing.T) {
	st, _ := testenv.Store(t)
	ctx := t.Context()
	now := time.Now().UTC()
	lobby := now.Add(-time.Minute)
	sale, err := st.CreateSale(ctx, seckill.NewSale{Name: "lobby", Currency: "usd", Variants: testenv.DefaultVariant("lobby", 1, 1),
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PaymentTimeout: time.Minute, LobbyOpensAt: &lobby}, nil)
	require.NoError(t, err)
	for round := range 30 {
		user := fmt.Sprint("double-", round)
		var (
			wg      sync.WaitGroup
			entries [2]*store.LobbyEntry
			created [2]bool
			errs    [2]error
		)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				entries[i], created[i], errs[i] = st.Enter(ctx, sale.ID, user, seckill.DefaultItem)
			}()
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		require.Equal(t, entries[0].Entry, entries[1].Entry)
		require.True(t, created[0] != created[1], "exactly one created it")
	}
}

// The draw's published orders are the orders it admitted, read from the
// orders as well as from its record: an admission its record missed (an
// entrant recorded LOST who holds the draw's order) is listed, with its
// rank, so the verifier sees it; an order claimed after the draw is not.
func TestDrawOrders_ListsEveryOrderTheDrawAdmitted(t *testing.T) {
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := testenv.LobbySale(t, st, 3, "ann", "bob", "cy")
	now := time.Now().UTC()
	for i, e := range []struct {
		user, outcome string
		order         int64
		drawn         bool
	}{{"ann", seckill.EntryWon, 101, true}, {"bob", seckill.EntryLost, 102, true}, {"cy", seckill.EntryLost, 103, false}} {
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: e.order, SaleID: sale.ID, UserID: e.user, CreatedAt: now, Drawn: e.drawn})
		require.NoError(t, err)
		var told *int64
		if e.outcome == seckill.EntryWon {
			told = &e.order
		}
		require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET rank = ?, outcome = ?, order_id = ? WHERE sale_id = ? AND user_id = ?`,
			i+1, e.outcome, told, sale.ID, e.user).Error)
	}

	orders, err := st.DrawOrders(ctx, sale.ID)

	require.NoError(t, err)
	require.Len(t, orders, 2, "%v", orders)
	require.Equal(t, []int64{101, 102}, []int64{orders[0].OrderID, orders[1].OrderID})
	require.Equal(t, []int{1, 2}, []int{orders[0].Rank, orders[1].Rank})
	require.NotEmpty(t, orders[1].Entry)
}
