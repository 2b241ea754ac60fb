package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// Hostile review (issue 32, fourth) finding 4: SaveWaitlistEntry saved nothing while the buyer holds
// an active order of the sale (Redis served them between its WAITING and
// the save; a row saved then puts them back in line at the next re-warm).
// FillWaitlistEntry, which replaced it for joins, fills any row that is
// there, and a pending row can be there again after the order's write
// deleted the first: a concurrent duplicate join's PendWaitlistEntry, or
// keepPlace's own put-back. bob's row then keeps a place while he holds
// his order; once it closes unpaid, a re-warm puts him back in a line he
// is not in, and serves him an order he never asked for.
func TestFillWaitlistEntry_FillKeepsNoPlaceForABuyerHoldingAnOrder(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	pend := seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem, JoinedAt: now}

	require.NoError(t, st.PendWaitlistEntry(ctx, pend)) // join 1, before Redis
	// Redis put bob at place 7 and, before join 1 filled it, a unit came
	// back to him: his order's write deletes the row.
	_, _, err := st.StartOrder(ctx, store.NewOrder{ID: 5001, SaleID: sale.ID, UserID: "bob", CreatedAt: now, PayBy: now.Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, st.PendWaitlistEntry(ctx, pend)) // join 2 (a double click), before Redis answers it ALREADY_CLAIMED

	kept, err := st.FillWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		OrderID: 3001, Place: 7, JoinedAt: now}) // join 1's fill
	require.NoError(t, err)
	require.NoError(t, st.DropPendingWaitlistEntry(ctx, sale.ID, "bob")) // join 2's drop: the row is no longer pending

	_, err = st.CloseUnpaid(ctx, 5001, seckill.ClosePaymentTimeout, "", "", now.Add(time.Hour))
	require.NoError(t, err)
	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.False(t, kept, "bob holds order 5001: his place must not be filled")
	require.Empty(t, got, "bob waits in no line; a re-warm must not put him in one")
}

// Hostile review (issue 32, fourth) finding 6 (a spurious 503): two joins of one buyer in flight (a
// double click, a client's retry) are both told by Redis the same place
// (WAITING, ALREADY_WAITING) and fill together. The second's UPDATE waits
// for the first's row lock, then finds the place filled and updates
// nothing; its "a row of the same place" check reads the statement's
// snapshot, from before the first committed: pending. It answers false,
// so keepPlace answers 503 "the waitlist row is gone" to a buyer whose
// place is kept.
func TestFillWaitlistEntry_TwoFillsOfOnePlaceBothKeepIt(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, st.PendWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem, JoinedAt: now}))

	// The first fill, its transaction not yet committed (the statement
	// FillWaitlistEntry runs, holding the row's lock).
	tx := st.Gorm().Begin()
	require.NoError(t, tx.Exec(`UPDATE waitlist_entries SET order_id = 3001, place = 7 WHERE sale_id = ? AND user_id = 'bob'`, sale.ID).Error)
	type res struct {
		kept bool
		err  error
	}
	second := make(chan res, 1)
	go func() {
		kept, err := st.FillWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
			OrderID: 3002, Place: 7, JoinedAt: now})
		second <- res{kept, err}
	}()
	time.Sleep(300 * time.Millisecond) // the second fill waits for the row's lock
	require.NoError(t, tx.Commit().Error)
	r := <-second
	require.NoError(t, r.err)
	require.True(t, r.kept, "bob's row keeps place 7: the second join must not be answered 503")
}

// A leave's first step takes the place back: the row turns pending (no
// place, no order id), so neither the rebuild nor the audit counts it as
// a place, and the place it had still counts for WaitlistHighPlace (a
// place is never given twice). A pending row, or none, is left as it is.
func TestWithdrawWaitlistEntry_LeavesAPendingRowAndKeepsThePlaceCounted(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	ctx := t.Context()
	sale := createSale(t, st, 10)
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, st.SaveWaitlistEntry(ctx, seckill.WaitlistEntry{SaleID: sale.ID, UserID: "bob", Item: seckill.DefaultItem,
		OrderID: 3001, Place: 9, JoinedAt: now}))
	require.NoError(t, st.WithdrawWaitlistEntry(ctx, sale.ID, "bob"))
	require.NoError(t, st.WithdrawWaitlistEntry(ctx, sale.ID, "bob")) // a retry
	require.NoError(t, st.WithdrawWaitlistEntry(ctx, sale.ID, "cy"))  // no row

	var rows []struct {
		Place   *int64
		OrderID *int64
	}
	require.NoError(t, st.Gorm().Raw(`SELECT place, order_id FROM waitlist_entries WHERE sale_id = ?`, sale.ID).Scan(&rows).Error)
	require.Len(t, rows, 1, "the row stays, pending")
	require.Nil(t, rows[0].Place)
	require.Nil(t, rows[0].OrderID)
	got, err := st.WaitlistEntries(ctx, sale.ID)
	require.NoError(t, err)
	require.Empty(t, got)
	high, err := st.WaitlistHighPlace(ctx, sale.ID)
	require.NoError(t, err)
	require.Equal(t, int64(9), high)
}
