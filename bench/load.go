package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// Outcome classifies one claim's answer by its status: the API's outcomes
// (seckill.Outcome, whose names the report uses), and what only a client
// sees.
type Outcome uint8

const (
	Admitted Outcome = iota
	SoldOut
	AlreadyClaimed
	RateLimited
	Unavailable // 503
	OtherError  // any other status
	Failed      // no answer: transport error or timeout
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	string(seckill.Admitted), string(seckill.SoldOut), string(seckill.AlreadyClaimed), string(seckill.RateLimited),
	string(seckill.Unavailable), "OTHER_ERROR", "NO_ANSWER",
}

func (o Outcome) String() string { return outcomeNames[o] }

// sample is one claim: when it was meant to be sent (since the start of
// the burst), how long it took from then until its answer, and the answer.
type sample struct {
	intendedMs uint32
	latencyUs  uint32
	outcome    Outcome
}

// admission is an order the burst won.
type admission struct {
	orderID    int64
	saleID     int64
	answeredAt time.Time // when the 202 arrived
}

// loadPlan is one burst: requests at a fixed rate, buyer i%len(tokens) on
// sale i%len(sales).
type loadPlan struct {
	host     string // host:port of the API
	sales    []int64
	tokens   [][]byte // "Bearer ..." header values, one per buyer
	requests int
	rate     int
	conns    int
	progress io.Writer
	// won, when set, is told every admission as its 202 arrives (the
	// payers pay from there, as a buyer who pays at once would). It must
	// not block for long: size its buffer to the stock.
	won chan<- admission
	// waitShare of the buyers answered SOLD_OUT join the sale's waitlist
	// at once, on the same connection, as a shopper would from the page.
	waitShare float64
}

type loadResult struct {
	samples    []sample
	admissions []admission
	start      time.Time
	wall       time.Duration // first intended send to last answer
	statuses   map[int]int   // HTTP status counts (0: no answer)
	// joins: the waitlist joins (waitShare) by answer, and their latency.
	joins     map[string]int
	joinsHist *hdrhistogram.Histogram
}

// burst runs the claims on an open loop (openLoop): claim i is buyer
// i%len(tokens)'s, on sale i%len(sales).
func burst(p loadPlan) (*loadResult, error) {
	if p.requests <= 0 || p.rate <= 0 || p.conns <= 0 || len(p.sales) == 0 || len(p.tokens) == 0 {
		return nil, fmt.Errorf("bench: empty load plan")
	}
	paths := make([][]byte, len(p.sales))
	joinPaths := make([][]byte, len(p.sales))
	for i, s := range p.sales {
		paths[i] = salePath(s, "claims")
		joinPaths[i] = salePath(s, "waitlist")
	}
	var counts [numOutcomes]atomic.Int64
	start := time.Now().Add(50 * time.Millisecond)
	loop := openLoop{host: p.host, requests: p.requests, rate: p.rate, conns: p.conns, start: start}
	if p.progress != nil {
		loop.progress = func(now time.Time) {
			var c [numOutcomes]int64
			var total int64
			for i := range c {
				c[i] = counts[i].Load()
				total += c[i]
			}
			fmt.Fprintf(p.progress, "  %5.1fs  sent %d/%d  admitted %d  sold out %d  already %d  errors %d\n",
				now.Sub(start).Seconds(), total, p.requests, c[Admitted], c[SoldOut], c[AlreadyClaimed],
				c[RateLimited]+c[Unavailable]+c[OtherError]+c[Failed])
		}
	}
	lanes := make([]*claimLane, p.conns)
	lr := loop.run(func(w int) lane {
		lanes[w] = &claimLane{plan: &p, paths: paths, joinPaths: joinPaths, start: start, counts: &counts,
			samples: make([]sample, 0, p.requests/p.conns+1), joins: map[string]int{}, joinsHist: newHist()}
		return lanes[w]
	})
	res := &loadResult{start: start, wall: time.Since(start), statuses: lr.statuses, joins: map[string]int{}, joinsHist: newHist()}
	n := 0
	for _, l := range lanes {
		n += len(l.samples)
	}
	res.samples = make([]sample, 0, n)
	for _, l := range lanes {
		res.samples = append(res.samples, l.samples...)
		res.admissions = append(res.admissions, l.won...)
		for k, v := range l.joins {
			res.joins[k] += v
		}
		res.joinsHist.Merge(l.joinsHist)
	}
	runtime.GC()
	return res, nil
}

// claimLane is one worker of the burst: it records each claim's answer
// as a sample, tells the payers every admission as it arrives, and joins
// the waitlist when refused, as its share of the buyers would.
type claimLane struct {
	plan             *loadPlan
	paths, joinPaths [][]byte // by sale
	start            time.Time
	counts           *[numOutcomes]atomic.Int64 // every lane's, for the progress line

	samples   []sample
	won       []admission
	joins     map[string]int
	joinsHist *hdrhistogram.Histogram
}

func (c *claimLane) target(i int) (path, token []byte) {
	return c.paths[i%len(c.plan.sales)], c.plan.tokens[i%len(c.plan.tokens)]
}

func (c *claimLane) answered(x *exchange) {
	p, sale, buyer := c.plan, x.i%len(c.plan.sales), x.i%len(c.plan.tokens)
	o := classify(x)
	if o == Admitted {
		if id, ok := orderIDOf(x.resp.Body()); ok {
			a := admission{orderID: id, saleID: p.sales[sale], answeredAt: time.Now()}
			c.won = append(c.won, a)
			if p.won != nil {
				p.won <- a
			}
		}
	}
	if o == SoldOut && p.waitShare > 0 && joins2Wait(buyer, p.waitShare) {
		t := time.Now()
		err := x.post(c.joinPaths[sale], p.tokens[buyer])
		_ = c.joinsHist.RecordValue(max(time.Since(t).Microseconds(), 1))
		c.joins[joinAnswer(err, x.resp)]++
	}
	c.counts[o].Add(1)
	c.samples = append(c.samples, sample{
		intendedMs: uint32(x.due.Sub(c.start) / time.Millisecond),
		latencyUs:  uint32(min(x.latency()/time.Microsecond, 1<<32-1)),
		outcome:    o,
	})
}

var (
	codeSoldOut        = []byte(`"code":"SOLD_OUT"`)
	codeAlreadyClaimed = []byte(`"code":"ALREADY_CLAIMED"`)
)

// classify names a claim's answer.
func classify(x *exchange) Outcome {
	if x.err != nil {
		return Failed
	}
	switch x.resp.StatusCode() {
	case fasthttp.StatusAccepted:
		return Admitted
	case fasthttp.StatusConflict:
		body := x.resp.Body()
		switch {
		case bytes.Contains(body, codeSoldOut):
			return SoldOut
		case bytes.Contains(body, codeAlreadyClaimed):
			return AlreadyClaimed
		}
		return OtherError
	case fasthttp.StatusTooManyRequests:
		return RateLimited
	case fasthttp.StatusServiceUnavailable:
		return Unavailable
	default:
		return OtherError
	}
}

// joins2Wait reports whether buyer joins the waitlist when refused: the
// same buyers on every run (a hash of the index), share of them.
func joins2Wait(buyer int, share float64) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strconv.Itoa(buyer)))
	return float64(h.Sum32()%1_000_000)/1_000_000 < share
}

// joinAnswer is a join's answer: its status (WAITING, ADMITTED) or its
// error code.
func joinAnswer(err error, resp *fasthttp.Response) string {
	if err != nil {
		return "NO_ANSWER"
	}
	var body struct{ Status, Code string }
	_ = json.Unmarshal(resp.Body(), &body)
	if resp.StatusCode() == fasthttp.StatusCreated {
		return body.Status
	}
	if body.Code != "" {
		return body.Code
	}
	return strconv.Itoa(resp.StatusCode())
}

// salePath is the path of a sale's resource: claims, lobby, waitlist.
func salePath(sale int64, resource string) []byte {
	return []byte("/api/v1/sales/" + strconv.FormatInt(sale, 10) + "/" + resource)
}

func orderIDOf(body []byte) (int64, bool) {
	var r struct {
		OrderID string `json:"order_id"`
	}
	if json.Unmarshal(body, &r) != nil {
		return 0, false
	}
	id, err := strconv.ParseInt(r.OrderID, 10, 64)
	return id, err == nil
}

// mintTokens signs one user token per buyer before the run, on every core,
// so signing costs nothing during the burst.
func mintTokens(secret []byte, buyers int, runID string) ([][]byte, error) {
	tokens := make([][]byte, buyers)
	workers := runtime.GOMAXPROCS(0)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < buyers; i += workers {
				tok, err := auth.SignToken(secret, "b"+runID+"-"+strconv.Itoa(i), false, 6*time.Hour)
				if err != nil {
					errs <- err
					return
				}
				tokens[i] = []byte("Bearer " + tok)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return tokens, <-errs
}

// loadClient is the HTTP client of an open-loop load: conns connections to
// host, and timeouts long enough that a slow answer is measured, not cut.
func loadClient(host string, conns int) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                host,
		MaxConns:            conns,
		ReadTimeout:         30 * time.Second,
		WriteTimeout:        30 * time.Second,
		MaxConnWaitTimeout:  30 * time.Second,
		MaxIdleConnDuration: time.Minute,
	}
}
