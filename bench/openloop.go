package bench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// openLoop is an open-loop load: request i is due at start + i/rate
// whatever became of the ones before it, and its latency is measured from
// then, so a slow server's queueing shows up in the figures instead of
// slowing the senders down (coordinated omission). conns workers, one
// connection each, take the next due request as soon as they are free.
// The claims' burst and the lobby's entries both run on it.
type openLoop struct {
	host     string // host:port of the API
	requests int
	rate     int // requests due per second
	conns    int
	start    time.Time // when request 0 is due
	// deadline, when set, ends the loop: a request due at or after it, or
	// whose turn comes after it, is not sent (loopResult.notSent).
	deadline time.Time
	// progress, when set, is called once a second while the loop runs.
	progress func(now time.Time)
}

// lane is one worker of an open loop: where its requests go, and what it
// makes of their answers. Each worker has its own, so a lane keeps its
// figures without locks; the caller merges them once the loop is over.
type lane interface {
	// target is where request i is POSTed (with no body) and its
	// Authorization header ("Bearer ...").
	target(i int) (path, token []byte)
	// answered records request i's answer.
	answered(x *exchange)
}

// exchange is one request of an open loop and its answer.
type exchange struct {
	i        int
	due      time.Time
	answered time.Time // when the answer came, or the request failed
	err      error     // no answer: a transport error or a timeout
	resp     *fasthttp.Response
	// post sends a follow-up on the same connection (resp is then its
	// answer), as a buyer does from the page the answer showed.
	post func(path, token []byte) error
}

// latency is the request's, from its due time to its answer.
func (x *exchange) latency() time.Duration { return x.answered.Sub(x.due) }

// status is the answer's HTTP status, 0 for no answer.
func (x *exchange) status() int {
	if x.err != nil {
		return 0
	}
	return x.resp.StatusCode()
}

// loopResult is what every open loop counts.
type loopResult struct {
	sent, notSent int
	statuses      map[int]int // by HTTP status (0: no answer)
}

// run sends the loop's requests, newLane(w) making worker w's lane, and
// returns once every request was answered or not sent.
func (l openLoop) run(newLane func(w int) lane) loopResult {
	client := loadClient(l.host, l.conns)
	interval := float64(time.Second) / float64(l.rate)
	var (
		next, notSent atomic.Int64
		wg            sync.WaitGroup
		counted       = make([]loopResult, l.conns)
	)
	stopProgress := everySecond(l.progress)
	for w := range l.conns {
		ln := newLane(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := newLoopConn(client, l.host)
			defer conn.release()
			mine := loopResult{statuses: map[int]int{}}
			for {
				i := int(next.Add(1) - 1)
				if i >= l.requests {
					break
				}
				due := l.start.Add(time.Duration(float64(i) * interval))
				if l.tooLate(due) {
					notSent.Add(1)
					continue
				}
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				path, token := ln.target(i)
				err := conn.post(path, token)
				x := exchange{i: i, due: due, answered: time.Now(), err: err, resp: conn.resp, post: conn.post}
				mine.sent++
				mine.statuses[x.status()]++
				ln.answered(&x)
			}
			counted[w] = mine
		}()
	}
	wg.Wait()
	stopProgress()
	res := loopResult{notSent: int(notSent.Load()), statuses: map[int]int{}}
	for _, c := range counted {
		res.sent += c.sent
		for k, v := range c.statuses {
			res.statuses[k] += v
		}
	}
	return res
}

// tooLate reports whether a request due at due is past the loop's
// deadline, or its turn came after it.
func (l openLoop) tooLate(due time.Time) bool {
	return !l.deadline.IsZero() && (!due.Before(l.deadline) || !time.Now().Before(l.deadline))
}

// loopConn is a worker's request and response, reused for every request
// it sends.
type loopConn struct {
	client *fasthttp.HostClient
	host   string
	req    *fasthttp.Request
	resp   *fasthttp.Response
}

func newLoopConn(client *fasthttp.HostClient, host string) *loopConn {
	return &loopConn{client: client, host: host, req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}
}

// post sends a POST with no body to path as the buyer with token.
func (c *loopConn) post(path, token []byte) error {
	c.req.Reset()
	c.req.Header.SetMethod(fasthttp.MethodPost)
	c.req.Header.SetHost(c.host)
	c.req.SetRequestURIBytes(path)
	c.req.Header.SetBytesV("Authorization", token)
	c.resp.Reset()
	return c.client.Do(c.req, c.resp)
}

func (c *loopConn) release() {
	fasthttp.ReleaseRequest(c.req)
	fasthttp.ReleaseResponse(c.resp)
}

// everySecond calls f once a second until stop is called (f nil: never);
// stop returns once f no longer runs.
func everySecond(f func(now time.Time)) (stop func()) {
	if f == nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				f(now)
			}
		}
	}()
	return func() { close(done); <-stopped }
}
