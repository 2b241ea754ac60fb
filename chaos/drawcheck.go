package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/draw/drawcli"
)

// drawLine is what a lobby run reports of its draw (the JSON line's
// "draw").
type drawLine struct {
	Plan string `json:"plan"`
	// Entrants: buyers whose entry was answered 201 or 200; EntryAnswers:
	// every entry's last answer, by status or code.
	Entrants     int            `json:"entrants"`
	EntryAnswers map[string]int `json:"entry_answers"`
	// EntriesLost: entrants answered 201 or 200 whom GET /lobby/me does
	// not know after the draw.
	EntriesLost int `json:"entries_lost"`
	// Done: the database recorded the draw DONE within the run's bound.
	Done     bool   `json:"done"`
	State    string `json:"state"`
	Entries  int    `json:"entries"`
	Admitted int    `json:"admitted"` // the draw's record: entries WON
	// K is the number of entries the draw must admit: per variant, in
	// rank order, while the variant still has their quantity (fitRanks).
	K int `json:"k"`
	// Outcomes: the entries by outcome in the database; Told: GET
	// /lobby/me's answers to the buyers after the draw.
	Outcomes map[string]int `json:"outcomes"`
	Told     map[string]int `json:"told"`
	// SaleEndedInDraw: ends_at came before the draw was recorded done.
	SaleEndedInDraw bool `json:"sale_ended_in_draw"`
	// Seconds: from starts_at to the draw recorded done.
	Seconds float64 `json:"seconds"`
	// VerifyFailed: the checks of `seckill draw verify` that failed, with
	// their first problems; VerifyError: the published draw could not be
	// read.
	VerifyFailed []string `json:"verify_failed,omitempty"`
	VerifyError  string   `json:"verify_error,omitempty"`
	// Misinformed and Skipped name the first entrants misinformed and the
	// first ranks skipped.
	Misinformed []string    `json:"misinformed,omitempty"`
	Skipped     []string    `json:"skipped,omitempty"`
	Faults      []drawFault `json:"faults"`
	Watch       watchSeen   `json:"watch"`
}

// maxNamed bounds the entrants and ranks a line names.
const maxNamed = 10

// measureDraw holds the sale's draw to what it published and to the
// orders: draw_verified (the published draw, read through the API as
// `seckill draw verify` reads it, passes draw.Verify),
// entrants_misinformed and ranks_skipped (both from PostgreSQL, and what
// GET /lobby/me told each buyer).
func measureDraw(dbName, base, admin, saleID string, sh *shop, watch *drawWatch, plan lobbyPlan, done bool) (d *drawLine, verified bool, misinformed, skipped int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := connectDB(ctx, dbName)
	if err != nil {
		return nil, false, 0, 0, err
	}
	defer func() { _ = conn.Close(ctx) }()
	sale, _ := strconv.ParseInt(saleID, 10, 64)
	d = &drawLine{Plan: plan.String(), Done: done, Outcomes: map[string]int{}, Told: map[string]int{}, Faults: watch.faults, Watch: watch.seen}

	var (
		state            *string
		entries, adm     *int
		startsAt, endsAt time.Time
		drawnAt          *time.Time
	)
	if err := conn.QueryRow(ctx, `SELECT draw_state, draw_entries, draw_admitted, starts_at, ends_at, drawn_at FROM sales WHERE id = $1`, sale).
		Scan(&state, &entries, &adm, &startsAt, &endsAt, &drawnAt); err != nil {
		return nil, false, 0, 0, fmt.Errorf("read the draw: %w", err)
	}
	if state != nil {
		d.State = *state
	}
	if entries != nil {
		d.Entries = *entries
	}
	if adm != nil {
		d.Admitted = *adm
	}
	if d.K, err = fitRanks(ctx, conn, sale, d.Entries); err != nil {
		return nil, false, 0, 0, err
	}
	if drawnAt != nil {
		d.Seconds = drawnAt.Sub(startsAt).Seconds()
		d.SaleEndedInDraw = endsAt.Before(*drawnAt)
	}
	if err := countOutcomes(ctx, conn, sale, d.Outcomes); err != nil {
		return nil, false, 0, 0, err
	}

	sh.mu.Lock()
	d.EntryAnswers = make(map[string]int, len(sh.entryAnswers))
	for k, n := range sh.entryAnswers {
		d.EntryAnswers[k] = n
	}
	told := make(map[int]lobbyAnswer, len(sh.told))
	for i, a := range sh.told {
		told[i] = a
		d.Told[a.Status]++
	}
	for i := range sh.entered {
		d.Entrants++
		if a, ok := sh.told[i]; ok && a.Status == "NOT_IN_LOBBY" {
			d.EntriesLost++
		}
	}
	sh.mu.Unlock()
	if unanswered := sh.o.buyers - len(told); unanswered > 0 {
		d.Told["unanswered"] = unanswered
	}

	verified = verifyDraw(ctx, base, admin, saleID, d)
	who, err := misinformedEntrants(ctx, conn, sale, sh, told)
	if err != nil {
		return nil, false, 0, 0, err
	}
	d.Misinformed = named(who)
	ranks, err := skippedRanks(ctx, conn, sale, d.K, d.SaleEndedInDraw)
	if err != nil {
		return nil, false, 0, 0, err
	}
	d.Skipped = named(ranks)
	return d, verified, len(who), len(ranks), nil
}

func countOutcomes(ctx context.Context, conn *pgx.Conn, sale int64, into map[string]int) error {
	rows, err := conn.Query(ctx, `SELECT COALESCE(outcome, 'UNSETTLED'), count(*) FROM lobby_entries WHERE sale_id = $1 GROUP BY 1`, sale)
	if err != nil {
		return fmt.Errorf("count the draw's outcomes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		var n int
		if err := rows.Scan(&o, &n); err != nil {
			return err
		}
		into[o] = n
	}
	return rows.Err()
}

// verifyDraw reads the published draw through the API as `seckill draw
// verify` does (drawcli's client, with the admin token for the order list)
// and checks it with draw.Verify; a read that fails is tried again, three
// times in all.
func verifyDraw(ctx context.Context, base, admin, saleID string, d *drawLine) bool {
	c := &drawcli.Client{Base: base, HTTP: &http.Client{Timeout: time.Minute}, AdminToken: func() (string, error) { return admin, nil }}
	var (
		p   draw.Published
		err error
	)
	for try := 0; try < 3; try++ {
		if p, err = c.Fetch(ctx, saleID); err == nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		d.VerifyError = err.Error()
		return false
	}
	p.DevChainOK = true // the driver's own development beacon
	rep := draw.Verify(p)
	for _, c := range rep.Checks {
		if c.OK || c.Skipped {
			continue
		}
		s := c.Name
		if len(c.Problems) > 0 {
			s += ": " + c.Problems[0]
		}
		d.VerifyFailed = append(d.VerifyFailed, s)
	}
	// The order list is read, never skipped: an admin's token is at hand.
	return rep.OK() && p.OrdersUnavailable == ""
}

// misinformedQuery finds, from PostgreSQL, the entrants the draw's record
// misinforms, once each (the first reason):
//   - told WON, and the order told is not theirs or has no row;
//   - holding an order the draw admitted (orders.drawn), and told LOST, or
//     WAITING without that order, or another order, or having no settled
//     entry at all;
//   - told WAITING with an order (served as the draw queued them) that is
//     not theirs or has no row;
//   - never settled although the draw is done.
const misinformedQuery = `
SELECT DISTINCT ON (user_id) user_id, rank, order_id, why FROM (
  SELECT e.user_id, e.rank, e.order_id, 'WON, the order told has no row of theirs' AS why FROM lobby_entries e
  WHERE e.sale_id = $1 AND e.outcome = 'WON'
    AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = e.order_id AND o.user_id = e.user_id AND o.sale_id = e.sale_id)
  UNION ALL
  SELECT o.user_id, e.rank, o.id, 'holds an order the draw admitted, told ' || COALESCE(e.outcome, 'nothing') ||
    COALESCE(' with order ' || e.order_id, ' with no order') FROM orders o
  LEFT JOIN lobby_entries e ON e.sale_id = o.sale_id AND e.user_id = o.user_id
  WHERE o.sale_id = $1 AND o.drawn
    AND (e.outcome IS NULL OR e.outcome NOT IN ('WON', 'WAITING') OR e.order_id IS DISTINCT FROM o.id)
  UNION ALL
  SELECT e.user_id, e.rank, e.order_id, 'WAITING, the order told has no row of theirs' FROM lobby_entries e
  WHERE e.sale_id = $1 AND e.outcome = 'WAITING' AND e.order_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = e.order_id AND o.user_id = e.user_id AND o.sale_id = e.sale_id)
  UNION ALL
  SELECT e.user_id, e.rank, e.order_id, 'never settled, the draw done' FROM lobby_entries e JOIN sales s ON s.id = e.sale_id
  WHERE e.sale_id = $1 AND s.draw_state = 'DONE' AND e.outcome IS NULL
) m ORDER BY user_id, rank`

// misinformedEntrants lists the entrants misinformed: by the draw's record
// (misinformedQuery), or by GET /lobby/me's answers after the draw (told
// WON with an order that has no row of theirs, told LOST or WAITING while
// holding an order the draw admitted, or still told ENTERED), each once.
func misinformedEntrants(ctx context.Context, conn *pgx.Conn, sale int64, sh *shop, told map[int]lobbyAnswer) ([]string, error) {
	by := map[string]string{} // user -> why
	rows, err := conn.Query(ctx, misinformedQuery, sale)
	if err != nil {
		return nil, fmt.Errorf("misinformed entrants: %w", err)
	}
	for rows.Next() {
		var (
			user, why string
			rank      *int
			order     *int64
		)
		if err := rows.Scan(&user, &rank, &order, &why); err != nil {
			rows.Close()
			return nil, err
		}
		by[user] = fmt.Sprintf("%s (rank %s, order %s): %s", user, optional(rank), optional(order), why)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	// What /lobby/me told, against the orders.
	drawnOf, err := userOrders(ctx, conn, `SELECT user_id, id FROM orders WHERE sale_id = $1 AND drawn`, sale) // user -> an order the draw admitted
	if err != nil {
		return nil, fmt.Errorf("the draw's orders: %w", err)
	}
	var wonUsers []string
	var wonOrders []int64
	for i, a := range told {
		user := sh.user(i)
		switch a.Status {
		case "WON":
			id, err := strconv.ParseInt(a.OrderID, 10, 64)
			if err != nil {
				by[user] = fmt.Sprintf("%s (rank %d): /lobby/me told WON with order %q", user, a.Rank, a.OrderID)
				continue
			}
			wonUsers, wonOrders = append(wonUsers, user), append(wonOrders, id)
		case "LOST", "WAITING":
			if id, ok := drawnOf[user]; ok {
				by[user] = fmt.Sprintf("%s (rank %d): /lobby/me told %s, holding order %d the draw admitted", user, a.Rank, a.Status, id)
			}
		case "ENTERED":
			by[user] = fmt.Sprintf("%s: /lobby/me still told ENTERED after the draw", user)
		}
	}
	rowless, err := userOrders(ctx, conn, `SELECT w.user_id, w.id FROM unnest($1::text[], $2::bigint[]) AS w(user_id, id)
		WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = w.id AND o.user_id = w.user_id AND o.sale_id = $3)`, wonUsers, wonOrders, sale)
	if err != nil {
		return nil, fmt.Errorf("orders told by /lobby/me: %w", err)
	}
	for user, id := range rowless {
		by[user] = fmt.Sprintf("%s: /lobby/me told WON with order %d, which has no row of theirs", user, id)
	}
	out := make([]string, 0, len(by))
	for _, why := range by {
		out = append(out, why)
	}
	sort.Strings(out)
	return out, nil
}

// fitsSQL selects, for the sale $1, the ranked entries the draw must admit,
// recomputed from the entries and each variant's stock at the draw (not
// from lobby_entries.fits, which the draw wrote): per variant, in rank
// order, while the quantities so far add up to its stock at most
// (draw.Fitter; docs/DESIGN.md invariant 9).
const fitsSQL = `SELECT r.rank, r.user_id, r.outcome FROM (
	SELECT e.rank, e.user_id, COALESCE(e.outcome, '') AS outcome,
		sum(e.quantity) OVER (PARTITION BY e.sku ORDER BY e.rank) AS upto, COALESCE(v.draw_stock, v.total) AS stock
	FROM lobby_entries e JOIN sale_variants v ON v.sale_id = e.sale_id AND v.sku = e.sku
	WHERE e.sale_id = $1 AND e.rank IS NOT NULL) r WHERE r.upto <= r.stock`

// fitRanks is K, the number of entries the draw must admit (fitsSQL).
func fitRanks(ctx context.Context, conn *pgx.Conn, sale int64, entries int) (int, error) {
	var k int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (`+fitsSQL+`) f`, sale).Scan(&k); err != nil {
		return 0, fmt.Errorf("the entries that fit the stock: %w", err)
	}
	return min(k, entries), nil
}

// skippedRanks lists the entries that fit (fitsSQL) the draw did not admit
// (WON) although it should have. One may be LOST only because the sale
// ended before the draw reached it (ended: ends_at came before the draw
// was done): the draw admits in rank order, so such entries follow the
// last one WON. Any other entry that fits and is not WON is skipped:
// WAITING (a winner queued), unsettled, or LOST with a later one WON or
// without the sale having ended.
func skippedRanks(ctx context.Context, conn *pgx.Conn, sale int64, k int, ended bool) ([]string, error) {
	rows, err := conn.Query(ctx, fitsSQL+` ORDER BY r.rank`, sale)
	if err != nil {
		return nil, fmt.Errorf("the entries that fit: %w", err)
	}
	type entry struct {
		rank          int
		user, outcome string
	}
	var within []entry
	lastWon := 0
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.rank, &e.user, &e.outcome); err != nil {
			rows.Close()
			return nil, err
		}
		within = append(within, e)
		if e.outcome == "WON" {
			lastWon = e.rank
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range within {
		if e.outcome == "WON" || (e.outcome == "LOST" && ended && e.rank > lastWon) {
			continue
		}
		outcome := e.outcome
		if outcome == "" {
			outcome = "unsettled"
		}
		out = append(out, fmt.Sprintf("rank %d (%s): %s, last rank WON %d, sale ended in the draw %v", e.rank, e.user, outcome, lastWon, ended))
	}
	if len(within) < k {
		out = append(out, fmt.Sprintf("only %d of the %d entries that fit are in the lobby", len(within), k))
	}
	return out, nil
}

func named(all []string) []string {
	if len(all) <= maxNamed {
		return all
	}
	return append(all[:maxNamed:maxNamed], fmt.Sprintf("... and %d more", len(all)-maxNamed))
}

func optional[T any](p *T) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// userOrders runs query, whose rows are (user id, order id), and returns
// them by user (the last one read, for a user with several).
func userOrders(ctx context.Context, conn *pgx.Conn, query string, args ...any) (map[string]int64, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var user string
		var id int64
		if err := rows.Scan(&user, &id); err != nil {
			return nil, err
		}
		out[user] = id
	}
	return out, rows.Err()
}
