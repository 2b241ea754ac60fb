package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/audit"
)

// line is the JSON line that ends each seed's run.
type line struct {
	Variant  string  `json:"variant"`
	Seed     uint64  `json:"seed"`
	Redis    string  `json:"redis"`
	Segments int     `json:"segments"`
	Waitlist float64 `json:"waitlist"`
	Payments string  `json:"payments"`
	Lobby    bool    `json:"lobby"`

	// Admitted: 202s given. Paid, Closed: orders of the sale in the
	// database, the waitlist's included; UnitsPaid, UnitsClosed: the
	// units those orders hold (each order its quantity).
	Admitted int `json:"admitted"`
	// UnitsAdmitted: the units of the 202s (each its quantity).
	UnitsAdmitted int64 `json:"units_admitted"`
	Paid          int   `json:"paid"`
	Closed        int   `json:"closed"`
	UnitsPaid     int64 `json:"units_paid"`
	UnitsClosed   int64 `json:"units_closed"`
	// AdmittedButLost: 202s whose order never got a row.
	AdmittedButLost int `json:"admitted_but_lost"`
	// Unsettled: orders the driver follows that neither reached PAID or
	// CLOSED nor vanished within the settle window, and are past their
	// pay_by (plus the grace).
	Unsettled int `json:"unsettled"`
	// OpenInTime: followed orders still before their pay_by when the
	// settle window closed (a waitlist keeps making new ones while buyers
	// wait): not a violation.
	OpenInTime int `json:"open_in_time"`
	// PaymentsKeptWithoutRefund: payment_intent.succeeded events that
	// neither paid their order (PAID with the event's PaymentIntent) nor
	// have a SUCCEEDED refund, orders without a row included.
	PaymentsKeptWithoutRefund int `json:"payments_kept_without_refund"`
	// UnitsStranded: over the variants, the database's available minus
	// what Redis holds, in stock and held for a line's head (signed), plus
	// the units left in stock while the head of their variant's line could
	// be served from them (until the sale ends); VariantsStranded: each
	// variant's, where not 0 (two variants' drifts of opposite signs do not
	// cancel there).
	UnitsStranded    int64            `json:"units_stranded"`
	VariantsStranded map[string]int64 `json:"variants_stranded,omitempty"`
	// OrdersStuck: orders QUEUED or AWAITING_PAYMENT past pay_by plus the
	// grace after settling.
	OrdersStuck int  `json:"orders_stuck"`
	AuditOK     bool `json:"audit_ok"`
	// A lobby run's (absent otherwise): DrawVerified, the published draw
	// passes `seckill draw verify`; EntrantsMisinformed, entrants told
	// WON without an order of theirs, or told LOST or WAITING while
	// holding an order the draw admitted (or never told); RanksSkipped,
	// ranks that fit the stock (drawLine.K) not admitted that the sale's end
	// does not explain. Draw says more.
	DrawVerified        *bool     `json:"draw_verified,omitempty"`
	EntrantsMisinformed *int      `json:"entrants_misinformed,omitempty"`
	RanksSkipped        *int      `json:"ranks_skipped,omitempty"`
	Draw                *drawLine `json:"draw,omitempty"`
	// OK: every one of the above held (admitted_but_lost only where Redis
	// has a replica to fail over to).
	OK         bool     `json:"ok"`
	Violations []string `json:"violations,omitempty"`

	// Orders counts the sale's orders by status, Units their units.
	Orders                map[string]int   `json:"orders"`
	Units                 map[string]int64 `json:"units"`
	PaymentEventsSucceded int              `json:"payment_events_succeeded"`
	PaymentEventsFailed   int              `json:"payment_events_failed"`
	Refunds               int              `json:"refunds"`
	RefundsSucceeded      int              `json:"refunds_succeeded"`
	RefundReasons         map[string]int   `json:"refund_reasons,omitempty"`

	WaitlistJoins       int            `json:"waitlist_joins"`
	WaitlistJoinAnswers map[string]int `json:"waitlist_join_answers,omitempty"`
	// WaitlistOrders: the sale's orders that are not 202s (the waitlist
	// gave them), from the database; WaitlistOrdersSeen: those the
	// buyers learned of (and paid by their fate).
	WaitlistOrders     int `json:"waitlist_orders"`
	WaitlistOrdersPaid int `json:"waitlist_orders_paid"`
	// WaitlistUnits, WaitlistUnitsPaid: the units of those orders.
	WaitlistUnits      int64 `json:"waitlist_units"`
	WaitlistUnitsPaid  int64 `json:"waitlist_units_paid"`
	WaitlistOrdersSeen int   `json:"waitlist_orders_seen"`
	WaitlistOrdersLost int   `json:"waitlist_orders_lost"`
	Waiting            int64 `json:"waiting"`

	// The driver's own follow-up: orders answered 404 for a minute.
	AdmittedPolledLost       int `json:"admitted_polled_lost"`
	WaitlistOrdersPolledLost int `json:"waitlist_orders_polled_lost"`

	// Stock is the audit's, summed over the variants; Variants each
	// variant's.
	Stock          seckill.Stock        `json:"stock"`
	Variants       []audit.VariantStock `json:"variants,omitempty"`
	AtRest         bool                 `json:"at_rest"`
	FailedChecks   []int                `json:"failed_checks,omitempty"`
	Faults         map[string]int       `json:"faults"`
	APIBorrowKills []borrowKill         `json:"api_borrow_kills,omitempty"`
	ElapsedSeconds float64              `json:"elapsed_s"`
}

// judge sets OK and Violations.
func (l *line) judge(replicated bool) {
	var v []string
	if !l.AuditOK {
		v = append(v, "audit failed")
	}
	if l.Unsettled > 0 {
		v = append(v, fmt.Sprintf("%d orders unsettled", l.Unsettled))
	}
	if l.PaymentsKeptWithoutRefund != 0 {
		v = append(v, fmt.Sprintf("%d payments kept without refund", l.PaymentsKeptWithoutRefund))
	}
	if l.UnitsStranded != 0 || len(l.VariantsStranded) > 0 {
		v = append(v, fmt.Sprintf("%d units stranded (by variant: %v)", l.UnitsStranded, l.VariantsStranded))
	}
	if l.OrdersStuck > 0 {
		v = append(v, fmt.Sprintf("%d orders stuck", l.OrdersStuck))
	}
	if replicated && l.AdmittedButLost > 0 {
		v = append(v, fmt.Sprintf("%d admitted but lost with a replica to fail over to", l.AdmittedButLost))
	}
	if d := l.Draw; d != nil {
		if !d.Done {
			v = append(v, "the draw was not done in time")
		}
		if !*l.DrawVerified {
			v = append(v, "the published draw fails draw verify")
		}
		if *l.EntrantsMisinformed > 0 {
			v = append(v, fmt.Sprintf("%d entrants misinformed", *l.EntrantsMisinformed))
		}
		if *l.RanksSkipped > 0 {
			v = append(v, fmt.Sprintf("%d ranks skipped", *l.RanksSkipped))
		}
		if d.EntriesLost > 0 {
			v = append(v, fmt.Sprintf("%d entries answered 201 lost", d.EntriesLost))
		}
	}
	l.Violations, l.OK = v, len(v) == 0
}

func parseAudit(out []byte) (*audit.Report, error) {
	var r audit.Report
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("audit output: %w", err)
	}
	return &r, nil
}

// connectDB connects the referee to the run's database, trying again for
// up to 30 s: the machine's PostgreSQL is shared, restarted by the faults,
// and may be out of connections for a moment ("too many clients").
func connectDB(ctx context.Context, dbName string) (*pgx.Conn, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/"+dbName+"?sslmode=disable")
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return conn, err
		}
		time.Sleep(time.Second)
	}
}

// openOrders counts the orders waiting for their saga or their payment.
func openOrders(dbName string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := connectDB(ctx, dbName)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM orders WHERE status IN ('QUEUED', 'AWAITING_PAYMENT')`).Scan(&n)
	return n, err
}

// paymentsKept counts the successful payment events that neither paid
// their order (PAID, with the event's PaymentIntent) nor have a SUCCEEDED
// refund, whether or not the order has a row.
const paymentsKept = `SELECT count(*) FROM payment_events e
	WHERE e.type = 'payment_intent.succeeded'
	  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = e.order_id AND o.status = 'PAID' AND o.payment_intent_id = e.payment_intent_id)
	  AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.event_id = e.id AND r.status = 'SUCCEEDED')`

// measure reads the run's outcome from PostgreSQL (the run's own
// database: every row is this sale's) and from the audit's report. A
// payment kept without a refund is read again for up to 90 s while it is
// not 0: a refund may still be on its way once the audit passes.
func measure(dbName string, sh *shop, rep *audit.Report, ls lines, timeout time.Duration) (*line, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := connectDB(ctx, dbName)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(ctx) }()
	l := &line{Orders: map[string]int{}, Units: map[string]int64{}, RefundReasons: map[string]int{}}

	for deadline := time.Now().Add(90 * time.Second); ; {
		if err := conn.QueryRow(ctx, paymentsKept).Scan(&l.PaymentsKeptWithoutRefund); err != nil {
			return nil, fmt.Errorf("payments kept: %w", err)
		}
		if l.PaymentsKeptWithoutRefund == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}

	rows, err := conn.Query(ctx, `SELECT status, count(*), sum(quantity) FROM orders GROUP BY status`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var s string
		var n int
		var u int64
		if err := rows.Scan(&s, &n, &u); err != nil {
			return nil, err
		}
		l.Orders[s], l.Units[s] = n, u
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	l.Paid, l.Closed = l.Orders[string(seckill.StatusPaid)], l.Orders[string(seckill.StatusClosed)]
	l.UnitsPaid, l.UnitsClosed = l.Units[string(seckill.StatusPaid)], l.Units[string(seckill.StatusClosed)]

	// Orders still waiting for their saga or their payment past pay_by
	// (or, without one, their admission plus the payment timeout) plus
	// the grace.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM orders WHERE status IN ('QUEUED', 'AWAITING_PAYMENT')
		AND COALESCE(pay_by, created_at + make_interval(secs => $1)) + make_interval(secs => $2) < now()`,
		timeout.Seconds(), grace.Seconds()).Scan(&l.OrdersStuck); err != nil {
		return nil, fmt.Errorf("orders stuck: %w", err)
	}

	admitted := ids(sh.admitted())
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM unnest($1::bigint[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = a.id)`,
		admitted).Scan(&l.AdmittedButLost); err != nil {
		return nil, fmt.Errorf("admitted but lost: %w", err)
	}
	l.UnitsAdmitted = sh.admittedUnits()
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'PAID'),
		COALESCE(sum(quantity), 0), COALESCE(sum(quantity) FILTER (WHERE status = 'PAID'), 0) FROM orders WHERE NOT (id = ANY($1::bigint[]))`,
		admitted).Scan(&l.WaitlistOrders, &l.WaitlistOrdersPaid, &l.WaitlistUnits, &l.WaitlistUnitsPaid); err != nil {
		return nil, fmt.Errorf("waitlist orders: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM unnest($1::bigint[]) AS w(id) WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = w.id)`,
		ids(sh.waitlistOrders())).Scan(&l.WaitlistOrdersLost); err != nil {
		return nil, fmt.Errorf("waitlist orders lost: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE type = 'payment_intent.succeeded'), count(*) FILTER (WHERE type = 'payment_intent.payment_failed') FROM payment_events`).
		Scan(&l.PaymentEventsSucceded, &l.PaymentEventsFailed); err != nil {
		return nil, err
	}
	rows, err = conn.Query(ctx, `SELECT reason, status, count(*) FROM refunds GROUP BY reason, status`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var reason, status string
		var n int
		if err := rows.Scan(&reason, &status, &n); err != nil {
			return nil, err
		}
		l.Refunds += n
		l.RefundReasons[reason+"/"+status] += n
		if status == "SUCCEEDED" {
			l.RefundsSucceeded += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	if rep == nil {
		// No report: nothing to say of Redis; the audit failed.
		return l, nil
	}
	l.Stock, l.Variants, l.AtRest, l.Waiting = rep.Stock, rep.Variants, rep.AtRest, rep.Waiting
	for _, c := range rep.Checks {
		if !c.OK {
			l.FailedChecks = append(l.FailedChecks, c.Invariant)
		}
	}
	var ended bool
	if err := conn.QueryRow(ctx, `SELECT COALESCE(bool_and(ends_at <= now()), false) FROM sales`).Scan(&ended); err != nil {
		return nil, fmt.Errorf("sale ended: %w", err)
	}
	l.strand(rep, ls, ended)
	return l, nil
}

// strand sets UnitsStranded and VariantsStranded from the audit's report
// and the lines Redis holds: of each variant, what the database says is
// available and Redis holds neither in stock nor for its line's head,
// signed; and the units in stock while the head of the variant's line
// could be served from them (those and the units held for the head cover
// the quantity it waits for) are stranded too, until the sale ends (a
// lobby run's may end inside its draw): the waitlist then serves nobody,
// and its entries are answered EXPIRED.
func (l *line) strand(rep *audit.Report, ls lines, ended bool) {
	by := map[string]int64{}
	for _, v := range rep.Variants {
		by[v.SKU] = v.Stock.Available - v.Stock.Remaining - ls.held[v.SKU]
		if left := v.Stock.Remaining; !ended && left > 0 && ls.waiting[v.SKU] > 0 && left+ls.held[v.SKU] >= ls.headWants[v.SKU] {
			by[v.SKU] += left
		}
	}
	for sku, n := range by {
		l.UnitsStranded += n
		if n == 0 {
			delete(by, sku)
		}
	}
	if len(by) > 0 {
		l.VariantsStranded = by
	}
}

func ids(m map[string]int) []int64 {
	out := make([]int64, 0, len(m))
	for id := range m {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}
