package bench

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// claimBody is what a v4 claim names: the variant and the quantity
// (docs/API.md "Claims"). The bench's sales have one variant, "default".
var claimBody = []byte(`{"sku":"default","quantity":1}`)

// BodyRatio compares claims that carry a body naming the variant and the
// quantity with claims that carry none (a v3 claim), in the same run, on
// the same sold-out sale: what the body costs the API (issue 32).
//
// Two paths are measured, each with rounds of a closed loop (every
// connection sends its next claim as soon as its last is answered) that
// alternate with and without the body, ABBA, so that drift on a shared
// machine falls on both alike:
//   - "flag": the sold-out flag answers (the loser's path at the peak:
//     the body is still read, as the claim's variant picks the flag);
//   - "script": each claim has an Idempotency-Key of its own, so the
//     admission script answers it (the path of every claim that is not
//     refused in the API).
type BodyRatio struct {
	SaleID       int64           `json:"sale_id"`
	Rounds       int             `json:"rounds"`
	RoundSeconds float64         `json:"round_seconds"`
	Conns        int             `json:"conns"`
	Paths        []BodyRatioPath `json:"paths"`
}

// BodyRatioPath is one path's figures: claims answered per second in each
// round, with and without a body, their medians, and the ratio of the
// medians (with / without: 1 means the body costs nothing).
type BodyRatioPath struct {
	Path        string    `json:"path"`
	Without     []float64 `json:"without_per_second"`
	With        []float64 `json:"with_per_second"`
	MedianWith  float64   `json:"median_with"`
	MedianNone  float64   `json:"median_without"`
	Ratio       float64   `json:"ratio"`
	Unexpected  int       `json:"unexpected_answers"` // answers other than 409 SOLD_OUT
	FirstAnswer string    `json:"first_unexpected,omitempty"`
}

// bodyRatio runs the comparison against the API at host on a sale of one
// unit that a first buyer has already won and paid, so that every claim
// of the rounds is answered 409 SOLD_OUT and starts no saga. tokens[0] is
// that first buyer; the rounds' buyers cycle through the others.
func bodyRatio(ctx context.Context, o Options, host string, tokens [][]byte, runID string) (*BodyRatio, error) {
	now := time.Now().UTC()
	sale, err := postSale(ctx, o.APIURL, o.Config.JWTSecret, map[string]any{
		"name": "bench " + runID + " body ratio", "price_cents": 990, "stock": 1,
		"starts_at":               now.Add(-time.Minute).Format(time.RFC3339),
		"ends_at":                 now.Add(6 * time.Hour).Format(time.RFC3339),
		"payment_timeout_seconds": int(o.PaymentTimeout / time.Second),
	})
	if err != nil {
		return nil, err
	}
	if err := sellOut(ctx, o, host, sale, tokens[0]); err != nil {
		return nil, err
	}
	r := &BodyRatio{SaleID: sale, Rounds: o.BodyRounds, RoundSeconds: o.BodyRoundTime.Seconds(), Conns: o.Conns}
	path := salePath(sale, "claims")
	var next atomic.Int64 // the buyer of the next claim, over every round
	next.Store(1)
	for _, p := range []string{"flag", "script"} {
		bp := BodyRatioPath{Path: p}
		for round := range o.BodyRounds {
			// ABBA: without first in even rounds, with first in odd ones.
			for _, withBody := range []bool{round%2 == 1, round%2 == 0} {
				lr := closedLoop(ctx, host, o.Conns, o.BodyRoundTime, func(c *closedConn) {
					i := next.Add(1)
					// Never tokens[0]: it holds the sale's one order, and
					// the script would answer it ALREADY_CLAIMED.
					c.req.Header.SetBytesV("Authorization", tokens[1+int(i)%(len(tokens)-1)])
					if withBody {
						c.req.Header.SetContentType("application/json")
						c.req.SetBodyRaw(claimBody)
					}
					if p == "script" {
						c.req.Header.Set("Idempotency-Key", "bench-"+runID+"-"+strconv.FormatInt(i, 36))
					}
					c.req.SetRequestURIBytes(path)
				}, soldOut)
				bp.Unexpected += lr.unexpected
				if bp.FirstAnswer == "" {
					bp.FirstAnswer = lr.first
				}
				if withBody {
					bp.With = append(bp.With, lr.perSecond)
				} else {
					bp.Without = append(bp.Without, lr.perSecond)
				}
			}
		}
		bp.MedianWith, bp.MedianNone = median(bp.With), median(bp.Without)
		if bp.MedianNone > 0 {
			bp.Ratio = bp.MedianWith / bp.MedianNone
		}
		r.Paths = append(r.Paths, bp)
	}
	return r, ctx.Err()
}

// sellOut has buyer claim the sale's one unit and pays for it, so the
// sale is sold out for good and its one order settles PAID.
func sellOut(ctx context.Context, o Options, host string, sale int64, buyer []byte) error {
	c := loadClient(host, 1)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetHost(host)
	req.SetRequestURIBytes(salePath(sale, "claims"))
	req.Header.SetBytesV("Authorization", buyer)
	if err := c.Do(req, resp); err != nil {
		return fmt.Errorf("bench: the body ratio's first claim: %w", err)
	}
	id, ok := orderIDOf(resp.Body())
	if resp.StatusCode() != fasthttp.StatusAccepted || !ok {
		return fmt.Errorf("bench: the body ratio's first claim was answered %d %s", resp.StatusCode(), resp.Body())
	}
	won := make(chan admission, 1)
	won <- admission{orderID: id, saleID: sale, answeredAt: time.Now()}
	close(won)
	payAll := o
	payAll.PayShare, payAll.FailShare = 1, 0
	return pay(ctx, payAll, won).err
}

// soldOut is the answer every claim of the body ratio's rounds expects.
func soldOut(resp *fasthttp.Response) bool {
	return resp.StatusCode() == fasthttp.StatusConflict && bytes.Contains(resp.Body(), codeSoldOut)
}

// closedConn is one connection of a closed loop and its request, which
// the loop resets to a POST before each claim and prepare fills in.
type closedConn struct {
	req  *fasthttp.Request
	resp *fasthttp.Response
}

type closedResult struct {
	answered   int
	perSecond  float64
	unexpected int
	first      string // the first unexpected answer, for the report
}

// closedLoop sends POSTs on conns connections for d, each connection its
// next as soon as its last was answered, and counts the answers expect
// accepts per second; an answer it refuses (or no answer: a refused
// connection fails fast) is counted unexpected, not answered.
func closedLoop(ctx context.Context, host string, conns int, d time.Duration, prepare func(*closedConn), expect func(*fasthttp.Response) bool) closedResult {
	client := loadClient(host, conns)
	start := time.Now()
	end := start.Add(d)
	var (
		mu  sync.Mutex
		res closedResult
		wg  sync.WaitGroup
	)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &closedConn{req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}
			defer fasthttp.ReleaseRequest(c.req)
			defer fasthttp.ReleaseResponse(c.resp)
			var n, bad int
			first := ""
			for ctx.Err() == nil && time.Now().Before(end) {
				c.req.Reset()
				c.req.Header.SetMethod(fasthttp.MethodPost)
				c.req.Header.SetHost(host)
				prepare(c)
				c.resp.Reset()
				err := client.Do(c.req, c.resp)
				if err == nil && expect(c.resp) {
					n++
				} else {
					bad++
					if first == "" {
						if err != nil {
							first = err.Error()
						} else {
							first = fmt.Sprintf("%d %s", c.resp.StatusCode(), c.resp.Body())
						}
					}
				}
			}
			mu.Lock()
			res.answered += n
			res.unexpected += bad
			if res.first == "" {
				res.first = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.perSecond = float64(res.answered) / time.Since(start).Seconds()
	return res
}

// median of xs (0 for none); xs is left unsorted.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
