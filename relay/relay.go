// Package relay moves admitted claims from each sale's Redis outbox stream
// to Temporal: one OrderSaga per entry, workflow ID order-<order_id>.
//
// An entry is acknowledged (and deleted) only after its workflow start
// returned, so the start is durable first; a start that fails or times out
// is retried with the same workflow ID, never rolled back. Several relays
// may run at once: they share one consumer group, and a start that finds
// the workflow already there counts as done.
//
// A relay that dies leaves its entries pending. Each relay keeps a
// liveness key in Redis (refreshed every Heartbeat, gone after three
// missed beats); the others take over the pending entries of a consumer
// whose key is gone at once (XPENDING + XCLAIM), so a killed worker's
// claims get their sagas within seconds. Because starting a saga is
// idempotent by workflow ID, taking over entries a live relay is still
// starting would only cost time; as a safety net for a relay that lives
// but is stuck, entries idle for ClaimIdle are taken over too (XAUTOCLAIM).
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/lua"
	"github.com/seckill/seckill/saga"
)

// DefaultParallel is how many workflow starts one relay keeps in flight
// per sale unless told otherwise.
const DefaultParallel = 32

// Config tunes a relay. Zero values take the defaults in brackets.
type Config struct {
	// Consumer names this relay in the consumer group; unique per process.
	Consumer string
	// BatchSize is the most entries read at once per sale [256].
	BatchSize int
	// Parallel is the most workflow starts in flight per sale
	// [DefaultParallel].
	Parallel int
	// Rate paces this relay's saga starts (per second, all sales
	// together; 0: unpaced). On a machine whose cores the API and the
	// Temporal server share, every saga started during a sale's first
	// seconds takes CPU from the claims; buyers lose nothing by a later
	// start (they can pay from the 202, until the pay_by fixed then).
	Rate float64
	// ClaimIdle is how long an entry may sit unacknowledged with a live
	// consumer before this one takes it over [30s].
	ClaimIdle time.Duration
	// Heartbeat is how often this relay refreshes its liveness key; a
	// consumer whose key is gone (three beats missed) is dead and its
	// pending entries are taken over at once [1s].
	Heartbeat time.Duration
	// Block is how long one read waits for new entries [2s].
	Block time.Duration
	// Refresh is how often the list of sales to watch is re-read [1s].
	Refresh time.Duration
}

// Relay is the outbox relay.
type Relay struct {
	scripts *lua.Scripts
	sagas   *saga.Client
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	pace    *rate.Limiter // nil: unpaced
}

// New returns a relay starting sagas with sagas.
func New(scripts *lua.Scripts, sagas *saga.Client, cfg Config, log *slog.Logger) *Relay {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.ClaimIdle <= 0 {
		cfg.ClaimIdle = 30 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Block <= 0 {
		cfg.Block = min(2*time.Second, cfg.Heartbeat)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	r := &Relay{scripts: scripts, sagas: sagas, cfg: cfg, log: log.With("consumer", cfg.Consumer)}
	if cfg.Rate > 0 {
		r.pace = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate/10)))
	}
	return r
}

// Run relays until ctx is done. It watches every sale listed as active.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if err := r.beat(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("relay liveness", "error", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.heartbeat(ctx)
	}()
	watching := map[int64]context.CancelFunc{}
	defer func() {
		for _, stop := range watching {
			stop()
		}
	}()
	tick := time.NewTicker(r.cfg.Refresh)
	defer tick.Stop()
	for {
		sales, err := r.activeSales(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("list sales to relay", "error", err)
		}
		if err == nil {
			for id, stop := range watching {
				if !sales[id] {
					stop()
					delete(watching, id)
				}
			}
			for id := range sales {
				if _, ok := watching[id]; ok {
					continue
				}
				wctx, stop := context.WithCancel(ctx)
				watching[id] = stop
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.watch(wctx, id)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (r *Relay) activeSales(ctx context.Context) (map[int64]bool, error) {
	ids, err := r.scripts.ActiveSales(ctx)
	if err != nil {
		return nil, err
	}
	sales := make(map[int64]bool, len(ids))
	for _, id := range ids {
		sales[id] = true
	}
	return sales, nil
}

// LivenessKey is the Redis key that says relay consumer, of the
// installation with key prefix, is alive.
func LivenessKey(prefix, consumer string) string {
	return prefix + ":relay:alive:" + consumer
}

func (r *Relay) aliveKey(consumer string) string { return LivenessKey(r.scripts.Prefix(), consumer) }

// beat refreshes this relay's liveness key.
func (r *Relay) beat(ctx context.Context) error {
	return r.scripts.Client().Set(ctx, r.aliveKey(r.cfg.Consumer), time.Now().UnixMilli(), 3*r.cfg.Heartbeat).Err()
}

// heartbeat keeps this relay's liveness key until ctx is done, then
// removes it so the others take over at once whatever this relay left.
func (r *Relay) heartbeat(ctx context.Context) {
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_ = r.scripts.Client().Del(dctx, r.aliveKey(r.cfg.Consumer)).Err()
			return
		case <-t.C:
			if err := r.beat(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("relay liveness", "error", err)
			}
		}
	}
}

// watch relays one sale's outbox until ctx is done.
func (r *Relay) watch(ctx context.Context, saleID int64) {
	log := r.log.With("saleID", saleID)
	stream := r.scripts.SaleKeys(saleID).Outbox
	rdb := r.scripts.Client()
	var lastTakeover, lastIdleTakeover time.Time
	failures := 0
	for ctx.Err() == nil {
		err := func() error {
			if time.Since(lastTakeover) >= r.cfg.Heartbeat {
				if err := r.takeOverDead(ctx, stream); err != nil {
					return err
				}
				lastTakeover = time.Now()
			}
			if time.Since(lastIdleTakeover) >= r.cfg.ClaimIdle/2 {
				if err := r.takeOver(ctx, stream); err != nil {
					return err
				}
				lastIdleTakeover = time.Now()
			}
			res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
				Group: lua.RelayGroup, Consumer: r.cfg.Consumer,
				Streams: []string{stream, ">"}, Count: int64(r.cfg.BatchSize), Block: r.cfg.Block,
			}).Result()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read outbox: %w", err)
			}
			for _, s := range res {
				if err := r.relay(ctx, stream, s.Messages); err != nil {
					return err
				}
			}
			return nil
		}()
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if isNoGroup(err) {
			// The stream or group was lost (Redis restarted empty): recreate
			// the group from id 0 so nothing written from now on is skipped.
			if err := rdb.XGroupCreateMkStream(ctx, stream, lua.RelayGroup, "0").Err(); err != nil && !isBusyGroup(err) {
				log.Warn("recreate relay group", "error", err)
			}
		}
		failures++
		log.Warn("relay outbox", "error", err)
		sleep(ctx, backoff(failures))
	}
}

// takeOverDead claims and relays the pending entries of consumers whose
// liveness key is gone, and forgets those consumers once they hold none.
func (r *Relay) takeOverDead(ctx context.Context, stream string) error {
	rdb := r.scripts.Client()
	consumers, err := rdb.XInfoConsumers(ctx, stream, lua.RelayGroup).Result()
	if err != nil {
		return fmt.Errorf("list relay consumers: %w", err)
	}
	for _, c := range consumers {
		if c.Name == r.cfg.Consumer {
			continue
		}
		alive, err := rdb.Exists(ctx, r.aliveKey(c.Name)).Result()
		if err != nil {
			return fmt.Errorf("check relay liveness: %w", err)
		}
		if alive == 1 {
			continue
		}
		if c.Pending == 0 {
			// Dead and holding nothing: forget it, so the list stays short.
			// A consumer that is only slow re-creates itself on its next read.
			if c.Idle > 3*r.cfg.Heartbeat {
				_ = rdb.XGroupDelConsumer(ctx, stream, lua.RelayGroup, c.Name).Err()
			}
			continue
		}
		for {
			pending, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
				Stream: stream, Group: lua.RelayGroup, Consumer: c.Name, Start: "-", End: "+", Count: int64(r.cfg.BatchSize),
			}).Result()
			if err != nil {
				return fmt.Errorf("list pending entries of %s: %w", c.Name, err)
			}
			if len(pending) == 0 {
				break
			}
			ids := make([]string, len(pending))
			for i, p := range pending {
				ids[i] = p.ID
			}
			msgs, err := rdb.XClaim(ctx, &redis.XClaimArgs{
				Stream: stream, Group: lua.RelayGroup, Consumer: r.cfg.Consumer, Messages: ids,
			}).Result()
			if err != nil {
				return fmt.Errorf("take over entries of %s: %w", c.Name, err)
			}
			r.log.Info("took over the pending outbox entries of a dead relay", "stream", stream, "dead", c.Name, "count", len(msgs))
			if err := r.relay(ctx, stream, msgs); err != nil {
				return err
			}
			if len(msgs) == 0 {
				break // another relay took them first
			}
		}
	}
	return nil
}

// takeOver claims and relays entries other consumers left pending too long.
func (r *Relay) takeOver(ctx context.Context, stream string) error {
	start := "0-0"
	for {
		msgs, next, err := r.scripts.Client().XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: stream, Group: lua.RelayGroup, Consumer: r.cfg.Consumer,
			MinIdle: r.cfg.ClaimIdle, Start: start, Count: int64(r.cfg.BatchSize),
		}).Result()
		if err != nil {
			return fmt.Errorf("take over pending entries: %w", err)
		}
		if len(msgs) > 0 {
			r.log.Info("took over pending outbox entries", "stream", stream, "count", len(msgs))
			if err := r.relay(ctx, stream, msgs); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// relay starts a workflow for each message, then acknowledges and deletes
// the messages whose start succeeded.
func (r *Relay) relay(ctx context.Context, stream string, msgs []redis.XMessage) error {
	done := make([]string, 0, len(msgs))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Parallel)
	for _, m := range msgs {
		in, err := parseEntry(m)
		if err != nil {
			// Only claim.lua writes the outbox; an entry it cannot have
			// written is acknowledged so it does not block the stream.
			r.log.Error("dropping malformed outbox entry", "stream", stream, "id", m.ID, "error", err)
			mu.Lock()
			done = append(done, m.ID)
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			if err := r.start(gctx, in); err != nil {
				return err
			}
			mu.Lock()
			done = append(done, m.ID)
			mu.Unlock()
			return nil
		})
	}
	startErr := g.Wait()
	if len(done) > 0 {
		// Acknowledge with a context of its own: entries whose workflow has
		// started should be acknowledged even when we are shutting down.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, err := r.scripts.Client().TxPipelined(actx, func(p redis.Pipeliner) error {
			p.XAck(actx, stream, lua.RelayGroup, done...)
			p.XDel(actx, stream, done...)
			return nil
		})
		if err != nil {
			// Unacknowledged entries are relayed again later; the starts are
			// idempotent, so that only costs time.
			return fmt.Errorf("acknowledge outbox entries: %w", err)
		}
	}
	return startErr
}

// start starts the saga of in, retrying with the same workflow ID until it
// exists or ctx is done. A workflow that already exists (running or closed)
// is success: the claim has its saga.
func (r *Relay) start(ctx context.Context, in seckill.SagaInput) error {
	if r.pace != nil {
		if err := r.pace.Wait(ctx); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.sagas.Start(sctx, in)
		cancel()
		if err == nil {
			r.metrics.observeStart(in.AdmittedAt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("start order saga", "orderID", in.OrderID, "attempt", attempt, "error", err)
		sleep(ctx, backoff(attempt))
	}
}

func parseEntry(m redis.XMessage) (seckill.SagaInput, error) {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	orderID, err := strconv.ParseInt(str("o"), 10, 64)
	if err != nil {
		return seckill.SagaInput{}, fmt.Errorf("order id: %w", err)
	}
	saleID, err := strconv.ParseInt(str("s"), 10, 64)
	if err != nil {
		return seckill.SagaInput{}, fmt.Errorf("sale id: %w", err)
	}
	user := str("u")
	if user == "" {
		return seckill.SagaInput{}, errors.New("no user id")
	}
	ms, err := strconv.ParseInt(str("t"), 10, 64)
	if err != nil {
		return seckill.SagaInput{}, fmt.Errorf("admission time: %w", err)
	}
	in := seckill.SagaInput{OrderID: orderID, SaleID: saleID, UserID: user, AdmittedAt: time.UnixMilli(ms).UTC()}
	// Entries written before payable-at-admission have no terms: the saga
	// derives pay_by from the admission time and the sale.
	if p := str("p"); p != "" {
		payBy, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return seckill.SagaInput{}, fmt.Errorf("pay_by: %w", err)
		}
		amount, err := strconv.ParseInt(str("a"), 10, 64)
		if err != nil {
			return seckill.SagaInput{}, fmt.Errorf("amount: %w", err)
		}
		in.PayBy, in.AmountCents, in.Currency = time.UnixMilli(payBy).UTC(), amount, str("c")
	}
	return in, nil
}

func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 6)
	return min(d, 5*time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func isNoGroup(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOGROUP")
}

func isBusyGroup(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "BUSYGROUP")
}
