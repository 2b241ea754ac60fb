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
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/redisstore"
	"github.com/seckill/seckill/tracing"
)

// DefaultParallel is how many workflow starts one relay keeps in flight
// per sale unless told otherwise.
const DefaultParallel = 32

// DefaultClaimIdle is how long an entry may sit unacknowledged with a live
// relay before another takes it over, unless told otherwise.
const DefaultClaimIdle = 30 * time.Second

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
	rstore  *redisstore.Store
	sagas   Starter
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	pace    *rate.Limiter // nil: unpaced
}

// Starter starts an admitted claim's saga (saga.Client); starting one
// that exists already succeeds.
type Starter interface {
	Start(ctx context.Context, in seckill.SagaInput) error
}

// New returns a relay starting sagas with sagas.
func New(rstore *redisstore.Store, sagas Starter, cfg Config, log *slog.Logger) *Relay {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.ClaimIdle <= 0 {
		cfg.ClaimIdle = DefaultClaimIdle
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
	r := &Relay{rstore: rstore, sagas: sagas, cfg: cfg, log: log.With("consumer", cfg.Consumer)}
	if cfg.Rate > 0 {
		r.pace = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate/10)))
	}
	return r
}

// Run relays until ctx is done. It watches every outbox of every sale
// listed as active (one per part of the sale's stock).
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
	watching := map[redisstore.Outbox]context.CancelFunc{}
	defer func() {
		for _, stop := range watching {
			stop()
		}
	}()
	tick := time.NewTicker(r.cfg.Refresh)
	defer tick.Stop()
	for {
		outboxes, err := r.activeOutboxes(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("list sales to relay", "error", err)
		}
		if err == nil {
			for o, stop := range watching {
				if !outboxes[o] {
					stop()
					delete(watching, o)
				}
			}
			for o := range outboxes {
				if _, ok := watching[o]; ok {
					continue
				}
				wctx, stop := context.WithCancel(ctx)
				watching[o] = stop
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.watch(wctx, o)
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

func (r *Relay) activeOutboxes(ctx context.Context) (map[redisstore.Outbox]bool, error) {
	list, err := r.rstore.ActiveOutboxes(ctx)
	if err != nil {
		return nil, err
	}
	outboxes := make(map[redisstore.Outbox]bool, len(list))
	for _, o := range list {
		outboxes[o] = true
	}
	return outboxes, nil
}

// beat refreshes this relay's liveness mark.
func (r *Relay) beat(ctx context.Context) error {
	return r.rstore.MarkRelayAlive(ctx, r.cfg.Consumer, 3*r.cfg.Heartbeat)
}

// heartbeat keeps this relay's liveness mark until ctx is done, then
// removes it so the others take over at once whatever this relay left.
func (r *Relay) heartbeat(ctx context.Context) {
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_ = r.rstore.MarkRelayGone(dctx, r.cfg.Consumer)
			return
		case <-t.C:
			if err := r.beat(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("relay liveness", "error", err)
			}
		}
	}
}

// watch relays one outbox until ctx is done.
func (r *Relay) watch(ctx context.Context, o redisstore.Outbox) {
	log := r.log.With("saleID", o.SaleID, "segment", o.Segment)
	var lastTakeover, lastIdleTakeover time.Time
	failures := 0
	for ctx.Err() == nil {
		err := func() error {
			if time.Since(lastTakeover) >= r.cfg.Heartbeat {
				if err := r.takeOverDead(ctx, o); err != nil {
					return err
				}
				lastTakeover = time.Now()
			}
			if time.Since(lastIdleTakeover) >= r.cfg.ClaimIdle/2 {
				if err := r.takeOver(ctx, o); err != nil {
					return err
				}
				lastIdleTakeover = time.Now()
			}
			entries, err := r.rstore.ReadOutbox(ctx, o, r.cfg.Consumer, r.cfg.BatchSize, r.cfg.Block)
			if err != nil {
				return err
			}
			return r.relay(ctx, o, entries)
		}()
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		log.Warn("relay outbox", "error", err)
		sleep(ctx, backoff(failures))
	}
}

// takeOverDead takes over and relays the pending entries of consumers
// whose liveness mark is gone, and forgets those consumers once they hold
// none.
func (r *Relay) takeOverDead(ctx context.Context, o redisstore.Outbox) error {
	consumers, err := r.rstore.OutboxConsumers(ctx, o)
	if err != nil {
		return err
	}
	for _, c := range consumers {
		if c.Name == r.cfg.Consumer {
			continue
		}
		alive, err := r.rstore.RelayAlive(ctx, c.Name)
		if err != nil {
			return err
		}
		if alive {
			continue
		}
		if c.Pending == 0 {
			// Dead and holding nothing: forget it, so the list stays short.
			// A consumer that is only slow re-creates itself on its next read.
			if c.Idle > 3*r.cfg.Heartbeat {
				_ = r.rstore.ForgetOutboxConsumer(ctx, o, c.Name)
			}
			continue
		}
		for {
			taken, err := r.rstore.TakeOverPending(ctx, o, c.Name, r.cfg.Consumer, r.cfg.BatchSize)
			if err != nil {
				return err
			}
			if len(taken) == 0 {
				break // none left, or another relay took them first
			}
			r.log.Info("took over the pending outbox entries of a dead relay", "saleID", o.SaleID, "segment", o.Segment, "dead", c.Name, "count", len(taken))
			if err := r.relay(ctx, o, taken); err != nil {
				return err
			}
		}
	}
	return nil
}

// takeOver takes over and relays entries other consumers left pending too
// long.
func (r *Relay) takeOver(ctx context.Context, o redisstore.Outbox) error {
	start := "0-0"
	for {
		taken, next, err := r.rstore.TakeOverIdle(ctx, o, r.cfg.Consumer, r.cfg.ClaimIdle, start, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if len(taken) > 0 {
			r.log.Info("took over pending outbox entries", "saleID", o.SaleID, "segment", o.Segment, "count", len(taken))
			if err := r.relay(ctx, o, taken); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// relay starts a workflow for each entry, then acknowledges and deletes
// the entries whose start succeeded.
func (r *Relay) relay(ctx context.Context, o redisstore.Outbox, entries []redisstore.OutboxEntry) error {
	done := make([]string, 0, len(entries))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Parallel)
	for _, e := range entries {
		if e.Err != nil {
			// Only claim.lua writes the outbox; an entry it cannot have
			// written is acknowledged so it does not block the stream.
			r.log.Error("dropping malformed outbox entry", "saleID", o.SaleID, "segment", o.Segment, "id", e.ID, "error", e.Err)
			mu.Lock()
			done = append(done, e.ID)
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			sctx := gctx
			if e.TraceParent != "" {
				// The claim was traced: its saga's start (and through
				// Temporal's headers the saga) joins the claim's trace.
				var span trace.Span
				sctx, span = tracing.Tracer().Start(tracing.WithTraceParent(gctx, e.TraceParent), "relay: start OrderSaga",
					trace.WithAttributes(attribute.Int64("seckill.order_id", e.Saga.OrderID), attribute.Int64("seckill.sale_id", e.Saga.SaleID)))
				defer span.End()
			}
			if err := r.start(sctx, e.Saga); err != nil {
				return err
			}
			mu.Lock()
			done = append(done, e.ID)
			mu.Unlock()
			return nil
		})
	}
	startErr := g.Wait()
	if len(done) > 0 {
		// Acknowledge with a context of its own: entries whose workflow has
		// started should be acknowledged even when we are shutting down.
		// Unacknowledged entries are relayed again later; the starts are
		// idempotent, so that only costs time.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := r.rstore.AckOutbox(actx, o, done); err != nil {
			return err
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
		// A start in flight when the relay is asked to stop is let finish:
		// cut off, the workflow may exist with its first task eagerly
		// handed to a worker that never hears of it, so the saga would wait
		// for the task's timeout. No new attempt follows a stop.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := r.sagas.Start(sctx, in)
		cancel()
		if err == nil {
			r.metrics.observeStart(in.AdmittedAt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.metrics.startFailed()
		r.log.WarnContext(ctx, "start order saga", "orderID", in.OrderID, "attempt", attempt, "error", err)
		sleep(ctx, backoff(attempt))
	}
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
