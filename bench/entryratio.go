package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// EntryRatio compares lobby entries with claims, in the same run, on the
// same API (issue 34: "a lobby takes entries at no less than 0.5 x the
// claim rate"). Rounds of a closed loop (every connection sends its next
// request as soon as its last is answered) take turns, forwards then
// backwards (ABC CBA), so that drift on a shared machine falls on all
// alike:
//   - "entries": POST /lobby of a sale whose lobby is open, each by a
//     buyer who has not entered yet, expecting 201 (a committed entry);
//   - "flag": claims on a sold-out sale, expecting 409 SOLD_OUT from the
//     API's sold-out flag: the path that answers almost every buyer of a
//     burst, and the fastest the API has;
//   - "script": the same claims, each with an Idempotency-Key of its own,
//     so that the admission script answers each (a claim's work in Redis).
//
// The burst's own claims per second (Claims.PerSecond) is the yardstick
// the issue names; Report.ratios gives entries against each.
type EntryRatio struct {
	LobbySaleID   int64   `json:"lobby_sale_id"`
	SoldOutSaleID int64   `json:"sold_out_sale_id"`
	Rounds        int     `json:"rounds"`
	RoundSeconds  float64 `json:"round_seconds"`
	Conns         int     `json:"conns"`
	// PerSecond: answers per second of each round, by arm; Median: their
	// medians.
	PerSecond map[string][]float64 `json:"per_second"`
	Median    map[string]float64   `json:"median"`
	// Unexpected answers by arm: entries not answered 201, claims not
	// 409 SOLD_OUT.
	Unexpected      map[string]int `json:"unexpected"`
	FirstUnexpected string         `json:"first_unexpected,omitempty"`
}

// The arms of EntryRatio.
const (
	armEntries = "entries"
	armFlag    = "flag"
	armScript  = "script"
)

// entrantsPerSecond bounds the entries a round can take (far above what
// one machine answers): the comparison mints that many fresh buyers per
// second of its entry rounds, so that every entry is a first one.
const entrantsPerSecond = 25000

// entryRatio runs the comparison against the API at host. tokens[0] wins
// and pays the sold-out sale's one unit, the others claim; the entries
// are made by buyers of their own, each entering once.
func entryRatio(ctx context.Context, o Options, host string, tokens [][]byte, runID string) (*EntryRatio, error) {
	entrants, err := mintTokens(o.Config.JWTSecret, int(float64(o.EntryRounds)*o.EntryRoundTime.Seconds()*entrantsPerSecond)+1, runID+"-entrant")
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	soldOutSale, err := postSale(ctx, o.APIURL, o.Config.JWTSecret, map[string]any{
		"name": "bench " + runID + " entry ratio, sold out", "price_cents": 990, "stock": 1,
		"starts_at":               now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at":                 now.Add(6 * time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(o.PaymentTimeout / time.Second),
	})
	if err != nil {
		return nil, err
	}
	if err := sellOut(ctx, o, host, soldOutSale, tokens[0]); err != nil {
		return nil, err
	}
	// The lobby stays open for the whole comparison: its draw is due long
	// after the run.
	startsAt := now.Add(3 * time.Hour)
	lobbySale, err := postSale(ctx, o.APIURL, o.Config.JWTSecret, map[string]any{
		"name": "bench " + runID + " entry ratio, lobby", "price_cents": 990, "stock": 1,
		"lobby_opens_at":          now.Add(-time.Second).Format(time.RFC3339Nano),
		"starts_at":               startsAt.Format(time.RFC3339),
		"ends_at":                 startsAt.Add(6 * time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(o.PaymentTimeout / time.Second),
	})
	if err != nil {
		return nil, err
	}
	r := &EntryRatio{LobbySaleID: lobbySale, SoldOutSaleID: soldOutSale, Rounds: o.EntryRounds,
		RoundSeconds: o.EntryRoundTime.Seconds(), Conns: o.Conns,
		PerSecond: map[string][]float64{}, Median: map[string]float64{}, Unexpected: map[string]int{}}
	lobbyPath := salePath(lobbySale, "lobby")
	claimPath := salePath(soldOutSale, "claims")
	var nextEntrant, nextClaim atomic.Int64
	entered := func(resp *fasthttp.Response) bool { return resp.StatusCode() == fasthttp.StatusCreated }
	arms := []string{armEntries, armFlag, armScript}
	for round := range o.EntryRounds {
		order := arms
		if round%2 == 1 {
			order = []string{arms[2], arms[1], arms[0]}
		}
		for _, arm := range order {
			var lr closedResult
			if arm == armEntries {
				lr = closedLoop(ctx, host, o.Conns, o.EntryRoundTime, func(c *closedConn) {
					c.req.Header.SetBytesV("Authorization", entrants[int(nextEntrant.Add(1)-1)%len(entrants)])
					c.req.Header.SetContentType("application/json")
					c.req.SetBodyRaw(claimBody)
					c.req.SetRequestURIBytes(lobbyPath)
				}, entered)
			} else {
				lr = closedLoop(ctx, host, o.Conns, o.EntryRoundTime, func(c *closedConn) {
					i := nextClaim.Add(1)
					// Never tokens[0]: it holds the sale's one order.
					c.req.Header.SetBytesV("Authorization", tokens[1+int(i)%(len(tokens)-1)])
					c.req.Header.SetContentType("application/json")
					c.req.SetBodyRaw(claimBody)
					if arm == armScript {
						c.req.Header.Set("Idempotency-Key", "bench-"+runID+"-entry-ratio-"+strconv.FormatInt(i, 36))
					}
					c.req.SetRequestURIBytes(claimPath)
				}, soldOut)
			}
			r.PerSecond[arm] = append(r.PerSecond[arm], lr.perSecond)
			r.Unexpected[arm] += lr.unexpected
			if r.FirstUnexpected == "" {
				r.FirstUnexpected = lr.first
			}
		}
	}
	for _, arm := range arms {
		r.Median[arm] = median(r.PerSecond[arm])
	}
	return r, ctx.Err()
}
