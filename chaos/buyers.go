package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
)

// shop is the buyers' side of one run: their claims, their waitlist joins,
// their payments and the orders they hold.
type shop struct {
	o      options
	seed   uint64
	base   string
	saleID string
	client *http.Client

	mu       sync.Mutex
	orders   map[string]int // 202s: order id -> its buyer's fate
	units    map[string]int // 202s: order id -> its units
	waitlist map[string]int // orders the waitlist gave: order id -> fate
	fresh    []string       // waitlist orders the settle loop has not seen yet
	answers  map[string]int // waitlist join answers, by status or code

	// A lobby run's entrants: who was answered 201 or 200, every entry's
	// answer, and what GET /lobby/me told each buyer after the draw.
	entered      map[int]bool
	entryAnswers map[string]int
	told         map[int]lobbyAnswer

	joins    atomic.Int64 // buyers now on the waitlist (WAITING or ALREADY_WAITING)
	payments inflight
}

func newShop(o options, seed uint64, base, saleID string) *shop {
	return &shop{o: o, seed: seed, base: base, saleID: saleID, client: &http.Client{Timeout: 5 * time.Second},
		orders: map[string]int{}, units: map[string]int{}, waitlist: map[string]int{}, answers: map[string]int{},
		entered: map[int]bool{}, entryAnswers: map[string]int{}, told: map[int]lobbyAnswer{}}
}

func (s *shop) user(i int) string { return fmt.Sprintf("buyer-%d-%04d", s.seed, i) }

func (s *shop) token(i int) string {
	t, _ := auth.SignToken([]byte(jwtSecret), s.user(i), false, time.Hour)
	return t
}

// buyerOf is the index of the buyer named user, or -1.
func (s *shop) buyerOf(user string) int {
	rest, ok := strings.CutPrefix(user, fmt.Sprintf("buyer-%d-", s.seed))
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return i
}

// quantity is the units buyer i claims (and waits for).
func (s *shop) quantity(i int) int {
	if s.o.quantityMax <= 1 {
		return 1
	}
	return itemOf(s.seed, i, s.o.variants, s.o.quantityMax).Quantity
}

// amountCents is what buyer i pays for their order: their quantity of
// units at the one price every chaos sale's variants have (an order of
// several units paid one unit's price is a mismatch, refunded).
func (s *shop) amountCents(i int) int64 {
	return unitPriceCents * int64(s.quantity(i))
}

// admittedUnits is the units of the 202s.
func (s *shop) admittedUnits() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for id := range s.orders {
		n += int64(s.units[id])
	}
	return n
}

// admitted is a copy of the 202s: order id -> fate.
func (s *shop) admitted() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.orders)
}

// waitlistOrders is a copy of the orders the waitlist gave that the
// buyers learned of: order id -> fate.
func (s *shop) waitlistOrders() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.waitlist)
}

// takeNewWaitlistOrders returns the waitlist orders learned since the last
// call.
func (s *shop) takeNewWaitlistOrders() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.fresh
	s.fresh = nil
	return out
}

func (s *shop) joinCounts() (joins int, answers map[string]int, orders int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	answers = make(map[string]int, len(s.answers))
	for k, n := range s.answers {
		answers[k] = n
	}
	return int(s.joins.Load()), answers, len(s.waitlist)
}

// fate of buyer i: 0 pays, 1 fails, 2 never pays.
func fate(seed uint64, i int) int {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%d", seed, i)
	return int(h.Sum64() % 3)
}

// joinsWaitlist says whether buyer i, answered SOLD_OUT, joins the
// waitlist: share of the buyers do, drawn from the seed.
func joinsWaitlist(seed uint64, i int, share float64) bool {
	if share <= 0 {
		return false
	}
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%d/waitlist", seed, i)
	return float64(h.Sum64()%10000) < share*10000
}

// payDelay is how long buyer i takes to pay once their order is given.
func payDelay(i int) time.Duration { return time.Duration(i%2500) * time.Millisecond }

// buy sends every buyer's claim (retrying ambiguous answers with the same
// Idempotency-Key, so a retry is never a second claim), pays or fails the
// admitted ones, and sends the chosen share of those answered SOLD_OUT to
// the waitlist. It returns when every buyer has had their answer; payers
// go on (s.payments).
func (s *shop) buy() {
	o := s.o
	spread := o.faultsFor * 3 / 4
	// With segments, the sale opens with a burst: the first buyers come at
	// once, so claims borrow between the segments while the API may die.
	burst := 0
	if o.segments > 1 {
		burst = min(o.buyers/3, 2*o.units)
	}
	start := time.Now()
	eachBuyer(o.buyers, 64, func(i int) {
		if i >= burst {
			time.Sleep(time.Until(start.Add(spread * time.Duration(i) / time.Duration(o.buyers))))
		}
		s.claim(i)
	})
}

// eachBuyer calls do(i) for buyers 0..n-1 in order of i, workers at a
// time, and returns when every call has.
func eachBuyer(n, workers int, do func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				do(i)
			}
		}()
	}
	wg.Wait()
}

// claim is buyer i's claim, retried until it has an answer (bounded).
func (s *shop) claim(i int) {
	token := s.token(i)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		req := s.itemRequest(i, "/claims")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", "chaos-claim")
		resp, err := s.client.Do(req)
		if err != nil {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		var body struct {
			OrderID string `json:"order_id"`
			Code    string `json:"code"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusAccepted:
			f := fate(s.seed, i)
			s.mu.Lock()
			s.orders[body.OrderID] = f
			s.units[body.OrderID] = s.quantity(i)
			s.mu.Unlock()
			if f < 2 {
				s.payments.add()
				go func() {
					defer s.payments.done()
					s.pay(body.OrderID, i, f == 1, payDelay(i))
				}()
			}
			return
		case resp.StatusCode == http.StatusConflict && body.Code == string(seckill.CodeDrawInProgress):
			// The draw is recorded done and the sale not yet open in
			// Redis (FinishDraw's worker died in between: its retry is up
			// to 30 s away): try again, later than for an outage.
			time.Sleep(time.Second)
			continue
		case resp.StatusCode == http.StatusConflict:
			if body.Code == string(seckill.CodeSoldOut) && joinsWaitlist(s.seed, i, s.o.waitlist) {
				s.join(i, token)
			}
			return
		case resp.StatusCode == http.StatusNotFound:
			return
		}
		time.Sleep(300 * time.Millisecond) // 503, 429, 5xx: try again
	}
}

// itemRequest is buyer i's POST to the sale's path (/claims, /waitlist),
// with the item they ask for as its body (none on a run of one variant and
// quantity 1: a v3 request).
func (s *shop) itemRequest(i int, path string) *http.Request {
	body := s.o.itemBody(s.seed, i)
	req, _ := http.NewRequest("POST", s.base+"/api/v1/sales/"+s.saleID+path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// join puts buyer i on the sale's waitlist at once, as the shop page
// offers a buyer answered SOLD_OUT, retrying ambiguous answers (joining is
// idempotent per user). An order given at once is paid by the buyer's fate.
func (s *shop) join(i int, token string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req := s.itemRequest(i, "/waitlist")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := s.client.Do(req)
		if err != nil {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		var body struct {
			Status  string `json:"status"`
			Code    string `json:"code"`
			OrderID string `json:"order_id"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		answer := body.Status
		if answer == "" {
			answer = body.Code
		}
		switch {
		case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusNotFound:
			s.mu.Lock()
			s.answers[answer]++
			s.mu.Unlock()
			switch answer {
			case "WAITING", string(seckill.CodeAlreadyWaiting):
				s.joins.Add(1)
			case "ADMITTED", string(seckill.CodeAlreadyClaimed):
				if body.OrderID != "" {
					s.waitlistOrder(body.OrderID, i)
				}
			}
			return
		}
		time.Sleep(300 * time.Millisecond) // 503 (waitlist paused), 5xx: try again
	}
	s.mu.Lock()
	s.answers["gave-up"]++
	s.mu.Unlock()
}

// waitlistOrder records order id, given by the waitlist to buyer i (at the
// join, or later from a released unit), once, and pays it by i's fate.
func (s *shop) waitlistOrder(id string, i int) { s.follow(id, i, true) }

// follow records order id of buyer i, once (whether a claim, the draw or
// the waitlist gave it), in the waitlist's book or the 202s', and pays it
// by i's fate.
func (s *shop) follow(id string, i int, fromWaitlist bool) {
	f := fate(s.seed, i)
	s.mu.Lock()
	_, claimed := s.orders[id]
	_, waited := s.waitlist[id]
	if claimed || waited {
		s.mu.Unlock()
		return
	}
	if fromWaitlist {
		s.waitlist[id] = f
		s.fresh = append(s.fresh, id)
	} else {
		s.orders[id] = f
		s.units[id] = s.quantity(i)
	}
	s.mu.Unlock()
	if f < 2 {
		s.payments.add()
		go func() {
			defer s.payments.done()
			s.pay(id, i, f == 1, payDelay(i))
		}()
	}
}

// pay pays (or fails) order orderID of buyer i after delay. With the dev
// provider it sends a signed payment event naming pi_<order>; with Stripe
// the buyer first asks for the order's PaymentIntent and the event names
// it, as Stripe's would. Each step is retried (bounded).
func (s *shop) pay(orderID string, i int, fail bool, delay time.Duration) {
	intent := "pi_" + orderID
	if s.o.payments == "stripe" {
		var ok bool
		if intent, ok = s.paymentIntent(orderID, i); !ok {
			return // the order was closed (or lost) before the buyer could pay
		}
	}
	time.Sleep(delay)
	typ := seckill.PaymentSucceeded
	if fail {
		typ = seckill.PaymentFailed
	}
	id, _ := strconv.ParseInt(orderID, 10, 64)
	body := api.EventBody(seckill.PaymentEvent{
		EventID: "evt_" + orderID, Type: typ, PaymentIntentID: intent, AmountCents: s.amountCents(i), Currency: "usd",
	}, id, time.Now())
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("POST", s.base+"/api/v1/payments/webhook", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", api.Sign(body, []byte(webhookSecret), time.Now()))
		resp, err := s.client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// paymentIntent asks for order orderID's PaymentIntent as its buyer
// (POST /api/v1/orders/{id}/payment) until it has one (bounded); false
// when the order cannot be paid any more (PAID or CLOSED) or never answers.
func (s *shop) paymentIntent(orderID string, i int) (string, bool) {
	token := s.token(i)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("POST", s.base+"/api/v1/orders/"+orderID+"/payment", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := s.client.Do(req)
		if err != nil {
			time.Sleep(300 * time.Millisecond)
			continue
		}
		var body struct {
			Code    string `json:"code"`
			Payment *struct {
				PaymentIntentID string `json:"payment_intent_id"`
			} `json:"payment"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && body.Payment != nil && body.Payment.PaymentIntentID != "":
			return body.Payment.PaymentIntentID, true
		case resp.StatusCode == http.StatusConflict && body.Code == string(seckill.CodeOrderNotPayable):
			return "", false
		}
		time.Sleep(300 * time.Millisecond) // 404 (not yet known), 503, 5xx: try again
	}
	return "", false
}

// inflight counts goroutines at work, like a WaitGroup that may be added
// to while someone waits.
type inflight struct {
	mu sync.Mutex
	n  int
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	f.n--
	f.mu.Unlock()
}

// waitIdle waits until none is at work, for at most within.
func (f *inflight) waitIdle(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		f.mu.Lock()
		n := f.n
		f.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
