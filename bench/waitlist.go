package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/store"
)

// Waitlist is what the waitlist did in a run (--waitlist SHARE).
type Waitlist struct {
	// Joined: buyers answered SOLD_OUT who joined at once, with the
	// join's latency; Answers counts the join answers.
	Joined  Latencies      `json:"joined"`
	Answers map[string]int `json:"answers"`
	// Admitted: orders the waitlist gave (a released unit, or a unit
	// still in stock at the join).
	Admitted int `json:"admitted"`
	// HandOverToAwaitPayment: from the moment a released unit became a
	// waiting buyer's order (the release script, which also records the
	// admission) to that order's AWAITING_PAYMENT, database times.
	HandOverToAwaitPayment Latencies `json:"handover_to_awaiting_payment"`
	// DeadlineToClose: from a timed-out order's pay_by to its CLOSED row,
	// whose activity releases the unit (the other half of "release to the
	// next buyer").
	DeadlineToClose Latencies `json:"deadline_to_close"`
}

// followWaitlist sends every order the sales' waitlists give (read from
// Redis, as each waiting buyer's page learns it from GET /waitlist/me) to
// orders as it appears, until ctx is done; it returns how many it found.
func followWaitlist(ctx context.Context, rs *redisstore.Store, sales []int64, orders chan<- admission) int {
	known := map[int64]bool{}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		for _, sale := range sales {
			given, err := rs.WaitlistAdmissions(ctx, sale)
			if err != nil {
				continue
			}
			for _, id := range given {
				if !known[id] {
					known[id] = true
					orders <- admission{orderID: id, saleID: sale, answeredAt: time.Now()}
				}
			}
		}
		select {
		case <-ctx.Done():
			return len(known)
		case <-t.C:
		}
	}
}

// followAndPay follows the waitlist's orders (followWaitlist) and pays
// WaitlistPayShare of them from the moment they are given; the returned
// function stops following and says how many there were and what the
// payers did.
func followAndPay(ctx context.Context, o Options, rs *redisstore.Store, sales []int64) func() (int, payResult) {
	orders := make(chan admission, 1024)
	fctx, stop := context.WithCancel(ctx)
	found := make(chan int, 1)
	go func() {
		found <- followWaitlist(fctx, rs, sales, orders)
		close(orders)
	}()
	payers := o
	payers.PayShare, payers.FailShare = o.WaitlistPayShare, 0
	paid := make(chan payResult, 1)
	go func() { paid <- pay(ctx, payers, orders) }()
	return func() (int, payResult) {
		stop()
		return <-found, <-paid
	}
}

// waitQuiet waits until the sales have no order waiting for its saga or
// its payment and no admission waiting in the outbox, twice a second
// apart: every released unit has found its buyer (or the stock), and
// their orders have settled.
func waitQuiet(ctx context.Context, o Options, st *store.Store, rs *redisstore.Store, sales []int64, say func(string, ...any)) error {
	deadline := time.Now().Add(o.SettleWithin)
	quiet := 0
	for quiet < 2 {
		open, err := countOrders(ctx, st, sales, unsettled)
		if err != nil {
			return err
		}
		backlog, err := rs.OutboxBacklog(ctx, sales)
		if err != nil {
			return err
		}
		if open == 0 && backlog == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the waitlist's orders did not settle within %s (%d open, %d in the outbox)", o.SettleWithin, open, backlog)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	say("waitlist: every released unit found its buyer, and their orders settled")
	return nil
}

// unsettled: the order waits for its saga (QUEUED) or its payment.
func unsettled(s seckill.OrderStatus) bool { return !s.Terminal() }

// addWaitlist measures the waitlist's orders (those the burst did not
// win) and the timed-out orders whose units it took, from the database.
func (r *Report) addWaitlist(ctx context.Context, st *store.Store, sales []int64, burst []admission) error {
	won := make(map[int64]bool, len(burst))
	for _, a := range burst {
		won[a.orderID] = true
	}
	rows, err := st.OrderTimelines(ctx, sales)
	if err != nil {
		return err
	}
	handover, closing := newHist(), newHist()
	record := func(h *hdrhistogram.Histogram, d time.Duration) { _ = h.RecordValue(max(d.Microseconds(), 1)) }
	for _, row := range rows {
		if !won[row.ID] {
			r.Waitlist.Admitted++
			if row.AwaitingAt != nil {
				record(handover, row.AwaitingAt.Sub(idgen.Time(row.ID)))
			}
		}
		if row.CloseReason == seckill.ClosePaymentTimeout && row.PayBy != nil && row.ClosedAt != nil {
			record(closing, row.ClosedAt.Sub(*row.PayBy))
		}
	}
	r.Waitlist.HandOverToAwaitPayment = latencies(handover, 0)
	r.Waitlist.DeadlineToClose = latencies(closing, 0)
	return nil
}
