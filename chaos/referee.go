package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/proc"
	"github.com/seckill/seckill/redisstore"
)

// referee reads the sale's Redis keys directly (never through toxiproxy),
// as the audit does: the segments' stocks, the moves between them, the
// waitlist's admissions and the outbox.
type referee struct {
	rdb      redis.UniversalClient
	rs       *redisstore.Store
	sale     int64
	segments int
	prefix   string
}

func openReferee(rawURL string, sale int64, segments int) (*referee, error) {
	rdb, err := redisClient(rawURL)
	if err != nil {
		return nil, err
	}
	rs := redisstore.New(rdb, redisPrefix)
	rs.KnowSegments(sale, segments)
	return &referee{rdb: rdb, rs: rs, sale: sale, segments: segments}, nil
}

func (r *referee) close() { _ = r.rdb.Close() }

// redisClient connects to a REDIS_URL of any of the three forms
// (redis://, redis-sentinel://, redis-cluster://), with short timeouts:
// the referee polls, and a failover must not hold it.
func redisClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	kind := ""
	for _, k := range []string{"sentinel", "cluster"} {
		if base, ok := strings.CutSuffix(u.Scheme, "-"+k); ok {
			u.Scheme, kind = base, k
		}
	}
	switch kind {
	case "sentinel":
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, err
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
		return redis.NewFailoverClient(o), nil
	case "cluster":
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, err
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, err
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, time.Second, time.Second
	return redis.NewClient(o), nil
}

// stockKey is the stock key of segment p of the sale (its Cluster slot is
// the segment's).
func (r *referee) stockKey(p int) string { return r.rs.SegmentKeys(r.sale, p).Stock }

// stocks reads every segment's stock (-1: a segment not loaded).
func (r *referee) stocks(ctx context.Context) ([]int64, error) {
	cmds := make([]*redis.StringCmd, r.segments)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for q := range r.segments {
			cmds[q] = p.Get(ctx, r.stockKey(q))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]int64, r.segments)
	for q, c := range cmds {
		v, err := c.Int64()
		if err != nil {
			v = -1
		}
		out[q] = v
	}
	return out, nil
}

func (r *referee) outboxBacklog() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.rs.OutboxBacklog(ctx, []int64{r.sale})
}

// followWaitlist hands every order the sale's waitlist gives to its buyer
// (s.waitlistOrder pays it by the buyer's fate) until ctx is done.
func (r *referee) followWaitlist(ctx context.Context, s *shop) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		given, err := r.rs.WaitlistAdmissions(rctx, r.sale)
		cancel()
		if err == nil {
			for user, id := range given {
				if i := s.buyerOf(user); i >= 0 {
					s.waitlistOrder(fmt.Sprint(id), i)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// borrowKill is one SIGKILL of the API while claims borrowed between the
// sale's segments, as the JSON line reports it.
type borrowKill struct {
	AtSeconds float64 `json:"at_s"`
	// Stocks are the segments' stocks read just before the kill.
	Stocks []int64 `json:"stocks"`
	// MovesLeft: the moves between segments in flight just after the kill
	// (the killed API's among them, left for the next mover or
	// reconciliation to finish).
	MovesLeft int `json:"moves_left"`
	// Borrowing: a segment was empty while another held units (claims of the
	// empty segment's buyers borrow), a segment was about to be (down to a tenth
	// of its share), or a move was in flight. False: no such moment came while buyers
	// claimed, and the API was killed when they were done.
	Borrowing bool `json:"borrowing"`
}

// killWhileBorrowing SIGKILLs the API (its supervisor restarts it) while
// claims borrow between the sale's segments: it polls the segments' stocks every
// 2 ms (and their moves every 20 ms) and kills the API a moment (0-5 ms,
// from rng) after one segment is empty while another holds units, a segment is
// down to a tenth of its share of the units (at least its last one), or a
// move is in flight. At most twice, 5 s apart,
// while buyers claim; if no such moment came during the claims, once when
// they end. It returns the kills.
func (r *referee) killWhileBorrowing(ctx context.Context, claimsDone <-chan struct{}, apiProc *proc.Proc, base string, share int64, rng *rand.Rand, start time.Time) []borrowKill {
	var kills []borrowKill
	kill := func(st []int64, borrowing bool) {
		time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
		apiProc.Kill()
		k := borrowKill{AtSeconds: time.Since(start).Seconds(), Stocks: st, Borrowing: borrowing}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		if moves, err := r.rs.Moves(rctx, r.sale); err == nil {
			k.MovesLeft = len(moves)
		}
		cancel()
		kills = append(kills, k)
		fmt.Printf("  %5.1fs fault: api-borrow (segments %v, %d moves in flight after the kill, borrowing %v)\n", k.AtSeconds, st, k.MovesLeft, borrowing)
		_ = proc.WaitHTTP(base+"/readyz", 60*time.Second)
	}
	// The segments drain evenly (a claim borrows half of the fullest segment), so
	// the borrowing is the burst's last few units and can pass between two
	// polls: a segment down to a tenth of its share counts as borrowing.
	lowMark := max(1, share/10)
	var last time.Time
	for poll := 0; len(kills) < 2; poll++ {
		select {
		case <-ctx.Done():
			return kills
		case <-claimsDone:
			if len(kills) == 0 {
				st, _ := r.stocks(context.Background())
				kill(st, false)
			}
			return kills
		case <-time.After(2 * time.Millisecond):
		}
		if !last.IsZero() && time.Since(last) < 5*time.Second {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := r.stocks(rctx)
		moves := 0
		if err == nil && poll%10 == 0 {
			var ms []seckill.Move
			ms, err = r.rs.Moves(rctx, r.sale)
			moves = len(ms)
		}
		cancel()
		if err != nil {
			continue
		}
		empty, low, holding := false, false, int64(0)
		for _, v := range st {
			switch {
			case v == 0:
				empty = true
			case v > 0 && v <= lowMark:
				low = true
			}
			if v > 0 {
				holding += v
			}
		}
		if (empty || low) && holding > 0 || moves > 0 {
			kill(st, true)
			last = time.Now()
		}
	}
	return kills
}

// lines is what Redis holds of each variant's waiting line at the end of a
// run, as strand weighs the units in stock against it: the buyers waiting,
// the units held for the head (not in stock), and the quantity the head
// (the first to join over every segment) waits for.
type lines struct {
	waiting, held, headWants map[string]int64
}

// readLines reads the lines of the sale's variants skus.
func (r *referee) readLines(ctx context.Context, skus []string) (lines, error) {
	out := lines{waiting: map[string]int64{}, held: map[string]int64{}, headWants: map[string]int64{}}
	w, err := r.rs.WaitingByVariant(ctx, r.sale)
	if err != nil {
		return out, err
	}
	for sku, n := range w {
		out.waiting[sku] = n
	}
	held, err := r.rs.UnitsHeld(ctx, []int64{r.sale}, time.Now())
	if err != nil {
		return out, err
	}
	for sku, v := range held[r.sale].Variants {
		out.held[sku] = v.ForWaiting
	}
	for _, sku := range skus {
		head, seg, first := "", 0, 0.0
		for p := range r.segments {
			z, err := r.rdb.ZRangeWithScores(ctx, r.rs.SegmentKeys(r.sale, p).Variant(sku).Wait, 0, 0).Result()
			if err != nil {
				return out, err
			}
			if len(z) == 1 && (head == "" || z[0].Score < first) {
				head, seg, first = fmt.Sprint(z[0].Member), p, z[0].Score
			}
		}
		if head == "" {
			continue
		}
		out.headWants[sku] = 1 // a buyer who joined before quantities waits for one
		entry, err := r.rdb.HGet(ctx, r.rs.SegmentKeys(r.sale, seg).Lines, head).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return out, err
		}
		if q, _, ok := strings.Cut(entry, ":"); ok {
			if n, err := strconv.ParseInt(q, 10, 64); err == nil {
				out.headWants[sku] = n
			}
		}
	}
	return out, nil
}
