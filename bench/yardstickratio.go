package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/proc"
)

// YardstickRatio compares the API's claims with the yardstick's
// (ServeYardstick: fasthttp, the JWT, the admission script and nothing
// else), in the same run, on the same machine, against the same Redis
// (issue 34, item 4: "p99 no more than 1.5 x the yardstick's, throughput
// at least 0.9 x"). Each round gives each server a fresh sale of Units
// units (1 by default: every unit the API sells starts a saga, whose
// Temporal, worker and relay work shares the machine during the API's
// round, where the yardstick's units start nothing; with 100 units that
// work alone took the API's p99 from 0.16 x the yardstick's to 1.4-1.6 x,
// BENCHMARKS.md) and, in turn, forwards then backwards (ABBA), so that
// drift on a shared machine falls on both alike. Past the sale's units
// the API answers from its sold-out flag and the yardstick, which has
// none, from the script: the open loop compares the paths a burst's
// buyers take, not the same work; the "script" loop compares that.
//   - latency: an open loop (openLoop, no coordinated omission) of Rate
//     claims a second for RoundSeconds, the buyers of the burst claiming
//     again, each once: the sale sells out within it, as at the peak, and
//     every later buyer is refused SOLD_OUT;
//   - throughput: a closed loop on the sold-out sale (every connection
//     sends its next claim as soon as its last is answered): the most
//     answers a second each server gives the buyers who lost ("flag":
//     the API answers them from its sold-out flag, the yardstick has none
//     and runs the script);
//   - the script's path: the same closed loop with an Idempotency-Key of
//     its own on every claim, so that the admission script answers each
//     on both ("script").
type YardstickRatio struct {
	Rounds       int     `json:"rounds"`
	RoundSeconds float64 `json:"round_seconds"`
	Rate         int     `json:"rate"`
	Units        int     `json:"units"`
	Conns        int     `json:"conns"`
	// Arms' figures per round: P50 and P99 in ms of the open loop, and
	// answers a second of the closed loops, by arm ("api", "yardstick");
	// Median: each list's median, by "arm p50|p99|per_second|script".
	P50             map[string][]float64 `json:"p50_ms"`
	P99             map[string][]float64 `json:"p99_ms"`
	PerSecond       map[string][]float64 `json:"per_second"`
	ScriptPerSecond map[string][]float64 `json:"script_per_second"`
	Median          map[string]float64   `json:"median"`
	// Admitted: the winners of each arm's open loops together (each
	// round's sale has Units units, so Rounds x Units when both keep up).
	Admitted map[string]int `json:"admitted"`
	// Unexpected answers by arm: other than 202, 409 SOLD_OUT or
	// ALREADY_CLAIMED, or none.
	Unexpected      map[string]int `json:"unexpected"`
	FirstUnexpected string         `json:"first_unexpected,omitempty"`
	// APISales are the sales the API's rounds sold (one a round): the
	// bench audits them at its end, as it does the burst's.
	APISales []int64 `json:"api_sales"`
}

// The arms of YardstickRatio.
const (
	armAPI       = "api"
	armYardstick = "yardstick"
)

// yardstickRatio starts the yardstick as a child process of binary
// (`seckill yardstick`) on a Redis prefix of its own and runs the rounds
// against it and the API at host. The yardstick's keys are removed
// afterwards.
func yardstickRatio(ctx context.Context, o Options, host string, tokens [][]byte, runID string) (*YardstickRatio, error) {
	cfg := o.Config
	cfg.RedisPrefix += "-yardstick-" + runID
	port := proc.FreePort()
	ystick := "127.0.0.1:" + strconv.Itoa(port)
	rs, err := app.OpenRedis(cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rs.Close() }()
	defer func() { _ = rs.DropAll(context.Background()) }()
	log := o.YardstickLog
	if log == nil {
		log = o.Progress // benchmarking a running API: no launch log
	}
	if log == nil {
		log = io.Discard
	}
	child := proc.New("yardstick", log, yardstickEnv(cfg, ystick), o.YardstickBinary, "yardstick",
		"--payment-timeout", o.PaymentTimeout.String())
	if err := child.Start(); err != nil {
		return nil, err
	}
	defer child.Stop()
	if err := proc.WaitHTTP("http://"+ystick+"/readyz", time.Minute); err != nil {
		return nil, fmt.Errorf("the yardstick did not start: %w", err)
	}
	r := &YardstickRatio{Rounds: o.YardstickRounds, RoundSeconds: o.YardstickRoundTime.Seconds(), Rate: o.YardstickRate,
		Units: o.YardstickUnits, Conns: o.Conns,
		P50: map[string][]float64{}, P99: map[string][]float64{}, PerSecond: map[string][]float64{}, ScriptPerSecond: map[string][]float64{},
		Median: map[string]float64{}, Admitted: map[string]int{}, Unexpected: map[string]int{}}
	requests := int(float64(o.YardstickRate) * o.YardstickRoundTime.Seconds())
	arms := []string{armAPI, armYardstick}
	nextSale := int64(0)
	for round := range o.YardstickRounds {
		order := arms
		if round%2 == 1 {
			order = []string{arms[1], arms[0]}
		}
		for _, arm := range order {
			target, sale := host, int64(0)
			if arm == armAPI {
				now := time.Now().UTC()
				sale, err = postSale(ctx, o.APIURL, o.Config.JWTSecret, map[string]any{
					"name": fmt.Sprintf("bench %s yardstick round %d", runID, round+1), "price_cents": benchPriceCents,
					"stock": o.YardstickUnits, "starts_at": now.Add(-time.Minute).Format(time.RFC3339),
					"ends_at": now.Add(6 * time.Hour).Format(time.RFC3339), "payment_timeout_seconds": int(o.PaymentTimeout / time.Second),
				})
			} else {
				target = ystick
				nextSale++
				sale = nextSale
				now := time.Now()
				_, err = rs.Warm(ctx, seckill.WarmSpec{SaleID: sale,
					Variants: []seckill.VariantUnits{{SKU: seckill.DefaultSKU, Units: int64(o.YardstickUnits)}},
					StartsAt: now.Add(-time.Minute), EndsAt: now.Add(6 * time.Hour)})
			}
			if err != nil {
				return nil, fmt.Errorf("%s round %d: %w", arm, round+1, err)
			}
			if arm == armAPI {
				r.APISales = append(r.APISales, sale)
			}
			lr, err := burst(loadPlan{host: target, sales: []int64{sale}, tokens: tokens, requests: requests,
				rate: o.YardstickRate, conns: o.Conns})
			if err != nil {
				return nil, err
			}
			h := newHist()
			for _, s := range lr.samples {
				_ = h.RecordValue(int64(max(s.latencyUs, 1)))
				switch s.outcome {
				case Admitted:
					r.Admitted[arm]++
				case SoldOut, AlreadyClaimed:
				default:
					r.Unexpected[arm]++
					if r.FirstUnexpected == "" {
						r.FirstUnexpected = fmt.Sprintf("%s: %s", arm, s.outcome)
					}
				}
			}
			l := latencies(h, 0)
			r.P50[arm] = append(r.P50[arm], l.P50)
			r.P99[arm] = append(r.P99[arm], l.P99)

			path := salePath(sale, "claims")
			cl := claimsLoop(ctx, o, target, path, tokens, "")
			sl := claimsLoop(ctx, o, target, path, tokens, fmt.Sprintf("bench-%s-%s-%d", runID, arm, round))
			r.PerSecond[arm] = append(r.PerSecond[arm], cl.perSecond)
			r.ScriptPerSecond[arm] = append(r.ScriptPerSecond[arm], sl.perSecond)
			r.Unexpected[arm] += cl.unexpected + sl.unexpected
			for _, first := range []string{cl.first, sl.first} {
				if r.FirstUnexpected == "" && first != "" {
					r.FirstUnexpected = arm + ": " + first
				}
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	for _, arm := range arms {
		r.Median[arm+" p50"] = median(slices.Clone(r.P50[arm]))
		r.Median[arm+" p99"] = median(slices.Clone(r.P99[arm]))
		r.Median[arm+" per_second"] = median(slices.Clone(r.PerSecond[arm]))
		r.Median[arm+" script"] = median(slices.Clone(r.ScriptPerSecond[arm]))
	}
	return r, nil
}

// yardstickEnv is the yardstick child's environment beside the bench's
// own (which it inherits, as the launched API does: SECKILL_CLAIM_RATE and
// the JWT audience among them): cfg's Redis, prefix and JWT secret, and
// its address.
func yardstickEnv(cfg app.Config, addr string) []string {
	return []string{
		"REDIS_URL=" + cfg.RedisURL,
		"SECKILL_REDIS_PREFIX=" + cfg.RedisPrefix,
		"SECKILL_JWT_SECRET=" + string(cfg.JWTSecret),
		"SECKILL_HTTP_ADDR=" + addr,
	}
}

// claimsLoop is a closed loop of claims on path, the buyers of tokens in
// turn, each claim with an Idempotency-Key of its own under keyPrefix
// (none when it is empty), expecting the answers a buyer who lost gets.
func claimsLoop(ctx context.Context, o Options, target string, path []byte, tokens [][]byte, keyPrefix string) closedResult {
	var next atomic.Int64
	return closedLoop(ctx, target, o.Conns, o.YardstickRoundTime, func(c *closedConn) {
		i := next.Add(1)
		c.req.Header.SetBytesV("Authorization", tokens[int(i)%len(tokens)])
		if keyPrefix != "" {
			c.req.Header.Set("Idempotency-Key", keyPrefix+"-"+strconv.FormatInt(i, 10))
		}
		c.req.SetRequestURIBytes(path)
	}, refused)
}

// refused reports whether a claim's answer is one a buyer who lost gets:
// 409 SOLD_OUT, or ALREADY_CLAIMED for a winner of the round who claims
// again (the yardstick has no sold-out flag to answer them first).
func refused(resp *fasthttp.Response) bool {
	return soldOut(resp) || resp.StatusCode() == fasthttp.StatusConflict && bytes.Contains(resp.Body(), codeAlreadyClaimed)
}
