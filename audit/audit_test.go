package audit_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/audit"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments/delivery"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// The audit passes a sale whose stores agree, and names the invariant a
// drift breaks: here a Redis counter above the database's available units
// (invariant 6).
func TestRun_NamesTheInvariantADriftBreaks(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 5)
	a := &audit.Auditor{DB: st.Gorm(), Redis: rs}

	rep, err := a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(b), fmt.Sprintf(`"sale_id":"%d"`, sale.ID), "IDs are strings, as in the API")

	require.NoError(t, rdb.IncrBy(ctx, rs.SaleKeys(sale.ID).Stock, 2).Err()) // Redis holds 2 units the DB lacks
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.False(t, rep.OK(), "%s", rep)
	failed := map[int]bool{}
	for _, c := range rep.Checks {
		if !c.OK {
			failed[c.Invariant] = true
		}
	}
	require.True(t, failed[6], "Redis above the database breaks invariant 6:\n%s", rep)
	require.Contains(t, rep.String(), "FAIL")
}

// A unit left in stock while buyers wait on the waitlist breaks invariant
// 2: at rest, every unit that came back is with a waiting buyer first.
func TestRun_FailsAUnitLeftInStockWhileBuyersWait(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 1)
	testenv.Warm(t, rs, sale, 0)
	require.Equal(t, seckill.Waiting, join(t, st, rs, sale, "ann", seckill.DefaultItem).Outcome)
	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Stock).Err()) // Redis = DB = 1, but ann waits

	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(ctx, sale.ID, audit.Options{})

	require.NoError(t, err)
	require.Equal(t, int64(1), rep.Waiting)
	require.Equal(t, []int{7}, failed(rep), "%s", rep)
	require.Contains(t, rep.String(), "variant default: 1 units in stock while 1 buyers wait")
}

// termsOf are the terms of sale's variant sku.
func termsOf(t *testing.T, sale *seckill.Sale, sku string) seckill.Terms {
	t.Helper()
	terms, ok := seckill.TermsOf(*sale, sku)
	require.True(t, ok, "sale %d has no variant %s", sale.ID, sku)
	return terms
}

// failed lists the invariants rep finds broken.
func failed(rep *audit.Report) []int {
	var out []int
	for _, c := range rep.Checks {
		if !c.OK {
			out = append(out, c.Invariant)
		}
	}
	return out
}

// A move between segments left half done (its mover stopped after giving)
// past the grace breaks invariant 7, though the units are counted once.
func TestRun_FailsAMoveLeftHalfDone(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.SegmentedSale(t, st, rs, 10, 2)
	testenv.GivenNotForgotten(t, rdb, rs, sale.ID, 1, 0, "b-stopped", 3, time.Now().Add(-time.Hour))

	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(ctx, sale.ID, audit.Options{})

	require.NoError(t, err)
	require.Equal(t, int64(10), rep.Stock.Remaining, "counted once")
	require.Equal(t, []int{7}, failed(rep), "%s", rep)
	require.Contains(t, rep.String(), "variant default: move b-stopped of 3 units from segment 1 given to segment 0, not forgotten")
}

// Invariants 5 and 8 are checked from the payment events: a payment kept
// for an order that was never written, one never delivered, and one
// received by pay_by whose order was closed all fail.
func TestRun_SeesEveryPaymentFromItsEvent(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.OpenSale(t, st, 5)
	testenv.Warm(t, rs, sale, 5)
	a := &audit.Auditor{DB: st.Gorm(), Redis: rs}
	record := func(id string, orderID int64, outcome seckill.PaymentOutcome) {
		t.Helper()
		_, _, err := st.RecordPaymentEvent(ctx, seckill.PaymentRecord{ID: id, Type: string(seckill.PaymentSucceeded), OrderID: orderID,
			PaymentIntentID: "pi_" + id, AmountCents: 990, Currency: "usd", Payload: []byte(`{}`), Outcome: outcome})
		require.NoError(t, err)
	}
	opts := audit.Options{Grace: time.Nanosecond}

	// A payment for an order admitted just now and never written (Redis
	// lost the admission): delivery holds it for SECKILL_PAYMENT_HOLD, in
	// case its saga still starts. Held, the sale is not at rest, and
	// nothing is violated yet.
	record("evt_held", idgen.At(time.Now()), seckill.OutcomeReceived)
	rep, err := a.Run(ctx, sale.ID, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	require.Equal(t, 1, rep.PaymentsHeld)
	require.False(t, rep.AtRest)
	require.Contains(t, rep.String(), "1 payments held for orders never written")

	// Past the window it is a violation: never delivered.
	record("evt_lost", idgen.At(time.Now().Add(-delivery.PendingWindow-time.Minute)), seckill.OutcomeReceived)
	record("evt_unwritten", 7001, seckill.OutcomeUnknownOrder)
	// A number that is no recent seckill id (far in the future) is never
	// held.
	record("evt_future", 1<<62, seckill.OutcomeReceived)
	rep, err = a.Run(ctx, sale.ID, opts)
	require.NoError(t, err)
	require.Contains(t, failed(rep), 5, "%s", rep)
	require.Contains(t, rep.String(), "order 7001 (never written): neither paid nor refunded")
	require.Regexp(t, `event evt_lost for order \d+ \(never written\) still RECEIVED after`, rep.String())
	require.Regexp(t, `event evt_future for order \d+ \(never written\) still RECEIVED after`, rep.String())
	require.Equal(t, 1, rep.PaymentsHeld)

	// ann paid by pay_by; her order was closed all the same.
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1001, SaleID: sale.ID, UserID: "ann", CreatedAt: now})
	require.NoError(t, err)
	// (The broken state, made by hand: CloseUnpaid would refuse to close
	// over a payment received in time, so the close is written first,
	// stamped after the payment.)
	_, err = st.CloseUnpaid(ctx, 1001, seckill.ClosePaymentTimeout, "", "", time.Now().Add(time.Minute))
	require.NoError(t, err)
	record("evt_ann", 1001, seckill.OutcomeReceived)
	rep, err = a.Run(ctx, sale.ID, opts)
	require.NoError(t, err)
	require.Contains(t, failed(rep), 8, "%s", rep)
	require.Contains(t, rep.String(), "event evt_ann for order 1001 (CLOSED) still RECEIVED")
	require.Contains(t, rep.String(), "but order 1001 closed as PAYMENT_TIMEOUT")

	// bob cancelled, then paid before his pay_by: the unit was given back
	// when he paid, and his payment was refunded. Nothing is broken.
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: 1002, SaleID: sale.ID, UserID: "bob", CreatedAt: now})
	require.NoError(t, err)
	_, err = st.CloseUnpaid(ctx, 1002, seckill.CloseCancelled, "", "", time.Now())
	require.NoError(t, err)
	record("evt_bob", 1002, seckill.OutcomeLate)
	status, err := st.StartRefund(ctx, store.NewRefund{EventID: "evt_bob", OrderID: 1002, PaymentIntentID: "pi_evt_bob", AmountCents: 990, Currency: "usd", Reason: seckill.OutcomeLate})
	require.NoError(t, err)
	require.Equal(t, seckill.RefundPending, status)
	require.NoError(t, st.FinishRefund(ctx, "evt_bob", "re_1"))
	rep, err = a.Run(ctx, sale.ID, opts)
	require.NoError(t, err)
	require.NotContains(t, rep.String(), "evt_bob", "%s", rep)
}

// A draw winner told an order that has neither a row nor an admission in
// Redis (Redis lost it before the relay started its saga) breaks
// invariant 4; one whose admission is still on its way does not.
func TestRun_FailsADrawWinnerWithoutTheirOrder(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	now := time.Now().UTC()
	sale := testenv.LobbySale(t, st, 2, "ann", "bob")
	testenv.Warm(t, rs, sale, 2)
	old := idgen.At(now.Add(-time.Hour))
	for rank, u := range []string{"ann", "bob"} {
		require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET rank = ?, outcome = ?, order_id = ? WHERE sale_id = ? AND user_id = ?`,
			rank+1, seckill.EntryWon, old+int64(rank), sale.ID, u).Error)
	}
	// bob's admission is in Redis, on its way to its saga.
	res, err := rs.ForDraw().Claim(ctx, sale.ID, "bob", old+1, "", termsOf(t, sale, seckill.DefaultSKU), seckill.DefaultItem)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)

	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(ctx, sale.ID, audit.Options{})

	require.NoError(t, err)
	require.Contains(t, failed(rep), 4, "%s", rep) // and 2: bob's admission is not at rest yet
	require.Contains(t, rep.String(), fmt.Sprintf("draw rank 1 (ann) was given order %d, which has neither a row nor an admission", old))
	require.NotContains(t, rep.String(), "(bob)")
}

// Once the draw is done, the audit holds its record of each entrant to
// the orders (invariant 9): an entrant told LOST who holds an order the
// draw admitted, and one told WON with no order, each fail it; a LOST
// entrant who claimed a left-over unit after the draw does not.
func TestRun_FailsAnEntrantTheDrawMisinformed(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 3, "ann", "bob", "cy", "dan", "eve"))
	testenv.Warm(t, rs, sale, 3)
	now := time.Now().UTC()
	order := func(id int64, user string, drawn bool) {
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: user, CreatedAt: now, Drawn: drawn})
		require.NoError(t, err)
	}
	base := idgen.At(now)
	entry := func(rank int, user, outcome string, orderID *int64) {
		require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET rank = ?, outcome = ?, order_id = ? WHERE sale_id = ? AND user_id = ?`,
			rank, outcome, orderID, sale.ID, user).Error)
	}
	annOrder := base + 1
	order(annOrder, "ann", true)
	entry(1, "ann", seckill.EntryWon, &annOrder)
	order(base+2, "bob", true) // admitted by the draw, recorded LOST
	entry(2, "bob", seckill.EntryLost, nil)
	entry(3, "cy", seckill.EntryWon, nil) // told WON, holding nothing
	order(base+4, "dan", false)           // claimed after the draw
	entry(4, "dan", seckill.EntryLost, nil)
	entry(5, "eve", seckill.EntryWaiting, &annOrder) // told another's order
	require.NoError(t, st.FinishDraw(ctx, sale.ID))

	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(ctx, sale.ID, audit.Options{})

	require.NoError(t, err)
	require.Contains(t, failed(rep), 9, "%s", rep)
	require.Contains(t, rep.String(), fmt.Sprintf("draw rank 2 (bob) holds order %d the draw admitted, but is told LOST with no order", base+2))
	require.Contains(t, rep.String(), "draw rank 3 (cy) is told WON with no order")
	require.Contains(t, rep.String(), fmt.Sprintf("draw rank 5 (eve) is told order %d, which is ann's", annOrder))
	require.NotContains(t, rep.String(), "(ann)")
	require.NotContains(t, rep.String(), "(dan)")
}

// saleOf creates a sale open from an hour ago for the next hour, of
// variants, up to limit units a buyer, with an hour to pay, and warms
// it in rs with all its units.
func saleOf(t *testing.T, st *store.Store, rs *redisstore.Store, limit int, variants ...seckill.NewVariant) *seckill.Sale {
	t.Helper()
	now := time.Now().UTC()
	sale, err := st.CreateSale(t.Context(), seckill.NewSale{Name: "variants", Currency: "usd", Variants: variants, LimitPerBuyer: limit,
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PaymentTimeout: time.Hour}, nil)
	require.NoError(t, err)
	units := map[string]int64{}
	for _, v := range variants {
		units[v.SKU] = v.Stock
	}
	_, err = rs.Warm(t.Context(), seckill.WarmSpecOf(sale, units))
	require.NoError(t, err)
	return sale
}

// redBlue is a sale of two variants, red and blue, of the units given.
func redBlue(t *testing.T, st *store.Store, rs *redisstore.Store, red, blue int64, limit int) *seckill.Sale {
	return saleOf(t, st, rs, limit,
		seckill.NewVariant{SKU: "red", Name: "red", PriceCents: 990, Stock: red},
		seckill.NewVariant{SKU: "blue", Name: "blue", PriceCents: 1990, Stock: blue})
}

// admit admits userID's claim of item in Redis as order id, and does what
// the relay and the saga do next: the outbox entry is taken and the order
// written, its units locked. The sale is at rest after it.
func admit(t *testing.T, st *store.Store, rs *redisstore.Store, sale *seckill.Sale, userID string, id int64, item seckill.Item) {
	t.Helper()
	ctx := t.Context()
	res, err := rs.Claim(ctx, sale.ID, userID, id, "", termsOf(t, sale, item.SKU), item)
	require.NoError(t, err)
	require.Equal(t, seckill.Admitted, res.Outcome)
	box := redisstore.Outbox{SaleID: sale.ID}
	entries, err := rs.ReadOutbox(ctx, box, "test-relay", 100, time.Millisecond)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.NoError(t, rs.AckOutbox(ctx, box, []string{entries[0].ID}))
	_, _, err = st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: userID, CreatedAt: time.Now().UTC(), PayBy: res.PayBy, Item: item})
	require.NoError(t, err)
}

// audited runs the audit of sale on st and rs.
func audited(t *testing.T, st *store.Store, rs *redisstore.Store, sale *seckill.Sale) *audit.Report {
	t.Helper()
	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(t.Context(), sale.ID, audit.Options{})
	require.NoError(t, err)
	return rep
}

// exec runs sql on st's database: the tests' drifts, made by hand.
func exec(t *testing.T, st *store.Store, sql string, args ...any) {
	t.Helper()
	require.NoError(t, st.Gorm().Exec(sql, args...).Error)
}

// A variant's locked units are its own orders' (invariant 1, per
// variant): a unit locked by red's order but counted on blue fails, though
// the sale's sums still agree with its two orders of one unit each.
func TestRun_FailsAVariantWhoseLockedUnitsAreAnothers(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	sale := redBlue(t, st, rs, 5, 5, 1)
	base := idgen.At(time.Now())
	admit(t, st, rs, sale, "ann", base+1, seckill.Item{SKU: "red", Quantity: 1})
	admit(t, st, rs, sale, "bob", base+2, seckill.Item{SKU: "blue", Quantity: 1})
	rep := audited(t, st, rs, sale)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)

	exec(t, st, `UPDATE sale_variants SET locked = locked - 1, available = available + 1 WHERE sale_id = ? AND sku = 'red'`, sale.ID)
	exec(t, st, `UPDATE sale_variants SET locked = locked + 1, available = available - 1 WHERE sale_id = ? AND sku = 'blue'`, sale.ID)
	rep = audited(t, st, rs, sale)

	require.Equal(t, seckill.Stock{Total: 10, Remaining: 8, Available: 8, Locked: 2}, rep.Stock, "the sums agree")
	require.Contains(t, failed(rep), 1, "%s", rep)
	require.Contains(t, rep.String(), "variant red: 1 orders holding stock hold 1 units but locked = 0")
	require.Contains(t, rep.String(), "variant blue: 1 orders holding stock hold 1 units but locked = 2")
}

// Sold counts units, not orders (invariant 1): a PAID order of three
// units against sold = 1 fails, though the sale has one PAID order and
// Redis' remaining is its available (invariants 2 and 6 pass). What Redis
// holds (its stock and the claim's three units) is then more than the
// variant's total (invariant 7).
func TestRun_FailsAPaidOrderOfThreeUnitsThatSoldCountsOnce(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := saleOf(t, st, rs, 3, testenv.DefaultVariant("three a buyer", 990, 5)...)
	id := idgen.At(time.Now())
	admit(t, st, rs, sale, "ann", id, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 3})
	_, err := st.ConfirmPayment(ctx, id, "", "", time.Now())
	require.NoError(t, err)
	rep := audited(t, st, rs, sale)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)
	require.Equal(t, map[string]int64{string(seckill.StatusPaid): 3}, rep.Units)

	exec(t, st, `UPDATE sale_variants SET sold = sold - 2, available = available + 2 WHERE sale_id = ?`, sale.ID)
	require.NoError(t, rdb.IncrBy(ctx, rs.SaleKeys(sale.ID).Stock, 2).Err())
	rep = audited(t, st, rs, sale)

	require.Equal(t, []int{1, 7}, failed(rep), "%s", rep)
	require.Contains(t, rep.String(), "variant default: 1 PAID orders hold 3 units but sold = 1")
	require.Contains(t, rep.String(), "variant default: Redis holds 7 units (stock and moves 4, held for the line 0, claims 3) but its total is 5")
}

// At rest each variant's Redis remaining is its available (invariants 2
// and 6, per variant): a unit of blue counted on red in Redis fails,
// though the sums agree.
func TestRun_FailsRedisAboveOneVariantsAvailableAtRest(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := redBlue(t, st, rs, 5, 5, 1)
	rep := audited(t, st, rs, sale)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)

	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Variant("red").Stock).Err())
	require.NoError(t, rdb.Decr(ctx, rs.SaleKeys(sale.ID).Variant("blue").Stock).Err())
	rep = audited(t, st, rs, sale)

	require.True(t, rep.AtRest)
	require.Equal(t, rep.Stock.Available, rep.Stock.Remaining, "the sums agree")
	require.Equal(t, []int{2, 6, 7}, failed(rep), "%s", rep)
	require.Contains(t, rep.String(), "variant red: remaining 6 + held for the line 0 != available 5")
	require.Contains(t, rep.String(), "variant blue: remaining 4 + held for the line 0 != available 5")
	require.Contains(t, rep.String(), "variant red: remaining and held for the line 6 > available 5")
	require.NotContains(t, rep.String(), "variant blue: remaining 4 >")
	require.Contains(t, rep.String(), "variant red: Redis holds 6 units (stock and moves 6, held for the line 0, claims 0) but its total is 5")
}

// At rest Redis' claims hold each variant's units of the active orders
// (invariant 7, per variant): a unit of red's claim counted on blue
// fails, though every claim names its order and every stock matches.
func TestRun_FailsClaimsWhoseUnitsRedisCountsOnAnotherVariant(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := redBlue(t, st, rs, 5, 5, 2)
	base := idgen.At(time.Now())
	admit(t, st, rs, sale, "ann", base+1, seckill.Item{SKU: "red", Quantity: 2})
	admit(t, st, rs, sale, "bob", base+2, seckill.Item{SKU: "blue", Quantity: 1})
	rep := audited(t, st, rs, sale)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)
	require.Equal(t, []audit.VariantStock{
		{SKU: "red", Claimed: 2, Stock: seckill.Stock{Total: 5, Remaining: 3, Available: 3, Locked: 2}},
		{SKU: "blue", Claimed: 1, Stock: seckill.Stock{Total: 5, Remaining: 4, Available: 4, Locked: 1}},
	}, rep.Variants)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(b), `"variants":[{"sku":"red","stock":{"total":5,"remaining":3,"available":3,"locked":2,"sold":0},"claimed":2}`)

	units := rs.SaleKeys(sale.ID).Units
	require.NoError(t, rdb.HIncrBy(ctx, units, "red", -1).Err())
	require.NoError(t, rdb.HIncrBy(ctx, units, "blue", 1).Err())
	rep = audited(t, st, rs, sale)

	require.True(t, rep.AtRest)
	require.Equal(t, []int{7}, failed(rep), "%s", rep)
	require.Contains(t, rep.String(), "variant red: Redis' claims hold 1 units but its active orders hold 2")
	require.Contains(t, rep.String(), "variant blue: Redis' claims hold 2 units but its active orders hold 1")
	require.Contains(t, rep.String(), "variant red: Redis holds 4 units (stock and moves 3, held for the line 0, claims 1) but its total is 5")
	require.Contains(t, rep.String(), "variant blue: Redis holds 6 units (stock and moves 4, held for the line 0, claims 2) but its total is 5")
}

// Each variant's split adds up and never sells more than its total
// (invariant 1, per variant): a unit of total moved from red to blue
// fails both variants, though the sums add up. (The database's own CHECK
// refuses such a split; the audit does not count on it.)
func TestRun_FailsAVariantWhoseSplitDoesNotAddUp(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	sale := redBlue(t, st, rs, 2, 3, 2)
	admit(t, st, rs, sale, "ann", idgen.At(time.Now()), seckill.Item{SKU: "red", Quantity: 2})
	rep := audited(t, st, rs, sale)
	require.True(t, rep.OK() && rep.AtRest, "%s", rep)

	exec(t, st, `ALTER TABLE sale_variants DROP CONSTRAINT sale_variants_split`)
	exec(t, st, `UPDATE sale_variants SET total = total - 1 WHERE sale_id = ? AND sku = 'red'`, sale.ID)
	exec(t, st, `UPDATE sale_variants SET total = total + 1 WHERE sale_id = ? AND sku = 'blue'`, sale.ID)
	rep = audited(t, st, rs, sale)

	require.Equal(t, rep.Stock.Total, rep.Stock.Available+rep.Stock.Locked+rep.Stock.Sold, "the sums add up")
	require.Contains(t, failed(rep), 1, "%s", rep)
	require.Contains(t, rep.String(), "variant red: sold 0 + locked 2 > total 1")
	require.Contains(t, rep.String(), "variant red: available 0 + locked 2 + sold 0 != total 1")
	require.Contains(t, rep.String(), "variant blue: available 3 + locked 0 + sold 0 != total 4")
}

// A draw winner's order holds what their entry asked for (invariant 9):
// a winner told WON with an order of their own, admitted by the draw, but
// of another quantity fails.
func TestRun_FailsADrawWinnerWhoseOrderHoldsAnotherItem(t *testing.T) {
	st, _ := testenv.Store(t)
	rs := testenv.RedisStore(t)
	ctx := t.Context()
	sale := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 3, "ann", "bob"))
	testenv.Warm(t, rs, sale, 3)
	base := idgen.At(time.Now())
	won := func(rank int, user string, id int64, item seckill.Item) {
		t.Helper()
		_, _, err := st.StartOrder(ctx, store.NewOrder{ID: id, SaleID: sale.ID, UserID: user, CreatedAt: time.Now().UTC(), Drawn: true, Item: item})
		require.NoError(t, err)
		exec(t, st, `UPDATE lobby_entries SET rank = ?, outcome = ?, order_id = ? WHERE sale_id = ? AND user_id = ?`,
			rank, seckill.EntryWon, id, sale.ID, user)
	}
	won(1, "ann", base+1, seckill.DefaultItem)
	won(2, "bob", base+2, seckill.Item{SKU: seckill.DefaultSKU, Quantity: 2}) // entered for one unit
	require.NoError(t, st.FinishDraw(ctx, sale.ID))

	rep := audited(t, st, rs, sale)

	require.Contains(t, failed(rep), 9, "%s", rep)
	require.Contains(t, rep.String(), fmt.Sprintf("draw rank 2 (bob), told WON, entered for 1 x default, but order %d holds 2 x default", base+2))
	require.NotContains(t, rep.String(), "(ann)")
}

// A buyer waits in the line of one variant: units of another in stock
// are not stranded (invariant 7), and the sale is at rest and passes.
// Once red has a unit in stock while someone waits for red (a unit of red
// came back and did not reach the line), it is stranded.
func TestRun_BuyersWaitingForOneVariantDoNotStrandAnother(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := redBlue(t, st, rs, 1, 5, 1)
	admit(t, st, rs, sale, "ann", idgen.At(time.Now()), seckill.Item{SKU: "red", Quantity: 1})
	require.Equal(t, seckill.Waiting, join(t, st, rs, sale, "bob", seckill.Item{SKU: "red", Quantity: 1}).Outcome)

	rep := audited(t, st, rs, sale)
	require.Equal(t, int64(1), rep.Waiting)
	require.True(t, rep.OK() && rep.AtRest, "blue's units are no unit of red's line:\n%s", rep)

	exec(t, st, `UPDATE sale_variants SET total = total + 1, available = available + 1 WHERE sale_id = ? AND sku = 'red'`, sale.ID)
	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Variant("red").Stock).Err())
	rep = audited(t, st, rs, sale)

	require.Equal(t, []int{7}, failed(rep), "%s", rep)
	require.Contains(t, rep.String(), "variant red: 1 units in stock while 1 buyers wait for it")
	require.NotContains(t, rep.String(), "variant blue: 5 units in stock")
}

// A restock between its halves is a restock in flight, and the audit
// accounts for it exactly (the hostile review's finding 8): its database
// half written and its Redis half not run, or run in part, Redis lacks
// the units it has not placed yet and nothing else; once placed, before
// the mark, Redis holds them all. A real drift in the middle still fails.
func TestRun_ARestockBetweenItsHalvesIsNoViolation(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.OpenSale(t, st, 2)
	testenv.Warm(t, rs, sale, 2)
	a := &audit.Auditor{DB: st.Gorm(), Redis: rs}

	// The database half: 3 units more, Redis not told yet.
	rec, _, err := st.Restock(ctx, sale.ID, seckill.DefaultSKU, 3, "key-1", time.Now())
	require.NoError(t, err)
	rep, err := a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK() && rep.AtRest, "the database half alone:\n%s", rep)

	// A drift meanwhile still fails: a unit more in Redis.
	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Stock).Err())
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.Contains(t, failed(rep), 2, "%s", rep)
	require.Contains(t, failed(rep), 7, "%s", rep)
	require.NoError(t, rdb.Decr(ctx, rs.SaleKeys(sale.ID).Stock).Err())

	// Placed in part (a script placed 1 unit, as a long line's share
	// would): Redis lacks the other 2, exactly.
	require.NoError(t, rdb.IncrBy(ctx, rs.SaleKeys(sale.ID).Stock, 1).Err())
	require.NoError(t, rdb.HSet(ctx, rs.SaleKeys(sale.ID).Meta[:len(rs.SaleKeys(sale.ID).Meta)-len("meta")]+"restocks", rec.ID, 1).Err())
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "placed in part:\n%s", rep)
	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Stock).Err())
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.Contains(t, failed(rep), 2, "a unit the restock has not placed is still one too many:\n%s", rep)
	require.NoError(t, rdb.Decr(ctx, rs.SaleKeys(sale.ID).Stock).Err())

	// The Redis half done (the rest placed), the mark not yet.
	next := int64(9000)
	res, err := rs.Restock(ctx, rec, termsOf(t, sale, seckill.DefaultSKU), func() (int64, error) { next++; return next, nil })
	require.NoError(t, err)
	require.Equal(t, seckill.RestockAppliedNow, res.Outcome)
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK() && rep.AtRest, "placed, not marked:\n%s", rep)
	require.NoError(t, rdb.Incr(ctx, rs.SaleKeys(sale.ID).Stock).Err())
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.Contains(t, failed(rep), 2, "%s", rep)
	require.NoError(t, rdb.Decr(ctx, rs.SaleKeys(sale.ID).Stock).Err())

	require.NoError(t, st.MarkRestockApplied(ctx, sale.ID, rec.ID))
	rep, err = a.Run(ctx, sale.ID, audit.Options{})
	require.NoError(t, err)
	require.True(t, rep.OK() && rep.AtRest, "applied:\n%s", rep)
}

// A done draw that left an entrant without a rank or an outcome (told
// ENTERED for ever) fails invariant 9 (hostile review: ranks written when
// reached must all be written).
func TestRun_FailsADoneDrawThatLeftAnEntrantUntold(t *testing.T) {
	st, _ := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	rs := redisstore.New(rdb, prefix)
	ctx := t.Context()
	sale := testenv.StartedNow(t, st, testenv.LobbySale(t, st, 1, "ann", "bob"))
	testenv.Warm(t, rs, sale, 1)
	require.NoError(t, st.Gorm().Exec(`UPDATE lobby_entries SET rank = 1, outcome = ? WHERE sale_id = ? AND user_id = 'ann'`,
		seckill.EntryLost, sale.ID).Error)
	require.NoError(t, st.FinishDraw(ctx, sale.ID))

	rep, err := (&audit.Auditor{DB: st.Gorm(), Redis: rs}).Run(ctx, sale.ID, audit.Options{})

	require.NoError(t, err)
	require.Contains(t, failed(rep), 9, "%s", rep)
	require.Contains(t, rep.String(), "the draw is done, and 1 entrants (bob first) have no rank or no outcome")
}
