//go:build !slim

package app_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// awaiting claims a unit for user and waits for the saga to lock it.
func (s *system) awaiting(sale, user string) seckill.OrderJSON {
	s.t.Helper()
	r := s.claim(sale, user)
	require.Equal(s.t, http.StatusAccepted, r.status, "%s", r.body)
	return s.waitOrder(r.json(s.t)["order_id"].(string), user, seckill.StatusAwaitingPayment, 30*time.Second)
}

// waitRefund waits until the order shows a SUCCEEDED refund of amount.
func (s *system) waitRefund(orderID, user string, amount int64) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		o := s.order(orderID, user)
		return o.Refund != nil && o.Refund.Status == "SUCCEEDED" && o.Refund.AmountCents == amount
	}, 30*time.Second, 50*time.Millisecond, "refund of %d on order %s", amount, orderID)
}

func (s *system) count(query string, args ...any) int {
	s.t.Helper()
	db, err := s.store.SQLDB()
	require.NoError(s.t, err)
	var n int
	require.NoError(s.t, db.QueryRowContext(context.Background(), query, args...).Scan(&n))
	return n
}

// TestPayments_EveryPaymentEndsPaidOrRefunded: duplicates, second payments,
// wrong amounts and late payments each end as exactly one PAID order or a
// refund, never both and never neither.
func TestPayments_EveryPaymentEndsPaidOrRefunded(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(10, 5*time.Second)

	t.Run("the same event ten times at once", func(t *testing.T) {
		o := s.awaiting(sale, "tenfold")
		var wg sync.WaitGroup
		statuses := make([]int, 10)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = s.webhook("evt_ten", seckill.PaymentSucceeded, o.OrderID, 990).status
			}()
		}
		wg.Wait()
		for _, st := range statuses {
			require.Equal(t, http.StatusOK, st)
		}
		s.waitOrder(o.OrderID, "tenfold", seckill.StatusPaid, 20*time.Second)
		require.Equal(t, 1, s.count("SELECT count(*) FROM payment_events WHERE id = 'evt_ten'"))
		require.Equal(t, 0, s.count("SELECT count(*) FROM refunds"))
		require.EqualValues(t, 1, s.dbStock(sale).Sold)
	})

	t.Run("a second payment for a paid order is refunded", func(t *testing.T) {
		o := s.awaiting(sale, "twice")
		require.Equal(t, http.StatusOK, s.webhook("evt_twice_1", seckill.PaymentSucceeded, o.OrderID, 990).status)
		s.waitOrder(o.OrderID, "twice", seckill.StatusPaid, 20*time.Second)
		r := s.webhook("evt_twice_2", seckill.PaymentSucceeded, o.OrderID, 990)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		s.waitRefund(o.OrderID, "twice", 990)
		require.Equal(t, seckill.StatusPaid, s.order(o.OrderID, "twice").Status)
		require.Equal(t, 1, s.count("SELECT count(*) FROM dev_provider_refunds WHERE idempotency_key = 'evt_twice_2'"))
	})

	t.Run("a wrong amount is not applied and is refunded", func(t *testing.T) {
		o := s.awaiting(sale, "wrong")
		require.Equal(t, http.StatusOK, s.webhook("evt_wrong", seckill.PaymentSucceeded, o.OrderID, 500).status)
		s.waitRefund(o.OrderID, "wrong", 500)
		require.Equal(t, seckill.StatusAwaitingPayment, s.order(o.OrderID, "wrong").Status)
		require.Equal(t, http.StatusOK, s.webhook("evt_right", seckill.PaymentSucceeded, o.OrderID, 990).status)
		s.waitOrder(o.OrderID, "wrong", seckill.StatusPaid, 20*time.Second)
		s.recordHistory(seckill.OrderWorkflowID(mustInt(t, o.OrderID)), "v4-mismatch_refunded_then_paid")
	})

	t.Run("a payment recorded in time whose signal never came pays the order at its deadline", func(t *testing.T) {
		// The webhook recorded it and crashed before signalling (or its
		// signal failed and the provider retries later): the saga reads it
		// as it closes the order, and the buyer keeps the unit paid for.
		o := s.awaiting(sale, "unsignalled")
		_, inserted, err := s.store.RecordPaymentEvent(context.Background(), seckill.PaymentRecord{
			ID: "evt_unsignalled", Type: string(seckill.PaymentSucceeded), OrderID: mustInt(t, o.OrderID),
			PaymentIntentID: "pi_unsignalled", AmountCents: 990, Currency: "usd", Payload: []byte(`{}`),
			Outcome: seckill.OutcomeReceived,
		})
		require.NoError(t, err)
		require.True(t, inserted)
		final := s.waitOrder(o.OrderID, "unsignalled", seckill.StatusPaid, 30*time.Second)
		require.Nil(t, final.Refund)
		require.Nil(t, final.CloseReason)
		require.Equal(t, 1, s.count("SELECT count(*) FROM payment_events WHERE id = 'evt_unsignalled' AND outcome = 'APPLIED'"))
		s.recordHistory(seckill.OrderWorkflowID(mustInt(t, o.OrderID)), "v4-paid_in_time_signal_lost")
	})

	t.Run("a late payment is refunded and the order stays closed", func(t *testing.T) {
		o := s.awaiting(sale, "late")
		s.waitOrder(o.OrderID, "late", seckill.StatusClosed, 30*time.Second)
		r := s.webhook("evt_late", seckill.PaymentSucceeded, o.OrderID, 990)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		// LATE when the saga has ended; DELIVERED when it was still
		// finishing and records LATE itself. Either way: refunded.
		require.Contains(t, []any{string(seckill.OutcomeLate), string(seckill.OutcomeDelivered)}, r.json(t)["outcome"])
		s.waitRefund(o.OrderID, "late", 990)
		require.Equal(t, 1, s.count("SELECT count(*) FROM payment_events WHERE id = 'evt_late' AND outcome = 'LATE'"))
		// Delivered again: still one refund.
		require.Equal(t, http.StatusOK, s.webhook("evt_late", seckill.PaymentSucceeded, o.OrderID, 990).status)
		require.Equal(t, 1, s.count("SELECT count(*) FROM refunds WHERE event_id = 'evt_late'"))
		require.Equal(t, 1, s.count("SELECT count(*) FROM dev_provider_refunds WHERE idempotency_key = 'evt_late'"))
		require.Equal(t, seckill.StatusClosed, s.order(o.OrderID, "late").Status)
	})

	t.Run("payments racing the deadline end paid or refunded", func(t *testing.T) {
		const n = 6
		orders := make([]seckill.OrderJSON, n)
		users := make([]string, n)
		for i := range orders {
			users[i] = "racer" + string(rune('a'+i))
			orders[i] = s.awaiting(sale, users[i])
		}
		var wg sync.WaitGroup
		for i, o := range orders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Aim at the deadline, a little before or after it.
				at := o.PayBy.Add(time.Duration(i-n/2) * 15 * time.Millisecond)
				time.Sleep(time.Until(at))
				s.webhook("evt_race_"+users[i], seckill.PaymentSucceeded, o.OrderID, 990)
			}()
		}
		wg.Wait()
		for i, o := range orders {
			var final seckill.OrderJSON
			require.Eventually(t, func() bool {
				final = s.order(o.OrderID, users[i])
				return final.Status == seckill.StatusPaid ||
					(final.Status == seckill.StatusClosed && final.Refund != nil && final.Refund.Status == "SUCCEEDED")
			}, 30*time.Second, 50*time.Millisecond, "order of %s", users[i])
			if final.Status == seckill.StatusPaid {
				require.Nil(t, final.Refund, "a paid order was also refunded")
			}
			t.Logf("%s paid at the deadline %+v: %s", users[i], time.Duration(i-n/2)*15*time.Millisecond, final.Status)
		}
	})

	// At rest: every paid order holds a sold unit and the rest is back.
	require.Eventually(t, func() bool {
		st := s.dbStock(sale)
		return st.Locked == 0 && st.Remaining == st.Available
	}, 30*time.Second, 100*time.Millisecond)
	st := s.dbStock(sale)
	paid := s.count("SELECT count(*) FROM orders WHERE status = 'PAID'")
	require.EqualValues(t, paid, st.Sold)
	require.Equal(t, st.Total, st.Available+st.Sold)
	s.requireAudit(sale)
}

// TestCancel_RacingPaymentHasOneOutcome: a cancel and a payment sent at
// the same moment end in exactly one of PAID or CLOSED (CANCELLED) with the
// payment refunded.
func TestCancel_RacingPaymentHasOneOutcome(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(10, 600*time.Second)
	for i := range 5 {
		user := "canceller" + string(rune('a'+i))
		o := s.awaiting(sale, user)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.mustDo("POST", "/api/v1/orders/"+o.OrderID+"/cancel", s.token(user, false), nil)
		}()
		go func() {
			defer wg.Done()
			s.webhook("evt_cancel_race_"+user, seckill.PaymentSucceeded, o.OrderID, 990)
		}()
		wg.Wait()
		var final seckill.OrderJSON
		require.Eventually(t, func() bool {
			final = s.order(o.OrderID, user)
			return final.Status == seckill.StatusPaid ||
				(final.Status == seckill.StatusClosed && final.Refund != nil && final.Refund.Status == "SUCCEEDED")
		}, 30*time.Second, 50*time.Millisecond)
		if final.Status == seckill.StatusClosed {
			require.Equal(t, seckill.CloseCancelled, *final.CloseReason)
		} else {
			require.Nil(t, final.Refund)
		}
		t.Logf("%s: %s", user, final.Status)
	}
	require.Eventually(t, func() bool {
		st := s.dbStock(sale)
		return st.Locked == 0 && st.Remaining == st.Available
	}, 30*time.Second, 100*time.Millisecond)
	s.requireAudit(sale)
}

// TestCancel_OperatorCancellationRacingPaymentsNeverStrandsAnOrder is the
// operator's version of the race above, 40 orders at once: each order is
// sent a payment and, at the same instant, the Temporal UI's "Request
// Cancellation" of its workflow. Every order ends PAID, or CLOSED with the
// payment refunded; none is left awaiting payment with its workflow gone.
func TestCancel_OperatorCancellationRacingPaymentsNeverStrandsAnOrder(t *testing.T) {
	s := startSystem(t, systemOptions{})
	const n = 40
	sale := s.createSale(n, 600*time.Second)
	orders := make([]seckill.OrderJSON, n)
	for i := range orders {
		orders[i] = s.awaiting(sale, "racer"+strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for i, o := range orders {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.webhook("evt_operator_race_"+strconv.Itoa(i), seckill.PaymentSucceeded, o.OrderID, 990)
		}()
		go func() {
			defer wg.Done()
			_ = s.temporal.CancelWorkflow(context.Background(), seckill.OrderWorkflowID(mustInt(t, o.OrderID)), "")
		}()
	}
	wg.Wait()
	outcomes := map[string]int{}
	for i, o := range orders {
		user := "racer" + strconv.Itoa(i)
		var final seckill.OrderJSON
		require.Eventually(t, func() bool {
			final = s.order(o.OrderID, user)
			return final.Status == seckill.StatusPaid ||
				(final.Status == seckill.StatusClosed && final.Refund != nil && final.Refund.Status == "SUCCEEDED")
		}, 60*time.Second, 50*time.Millisecond, "order of %s: %+v", user, final)
		if final.Status == seckill.StatusPaid {
			require.Nil(t, final.Refund, "a paid order keeps its payment")
		}
		outcomes[string(final.Status)]++
	}
	t.Logf("40 orders, each paid and cancelled by an operator at once: %v", outcomes)
	require.Eventually(t, func() bool {
		st := s.dbStock(sale)
		return st.Locked == 0 && st.Remaining == st.Available
	}, 30*time.Second, 100*time.Millisecond)
	s.requireAudit(sale)
}
