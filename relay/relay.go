// Package relay moves admitted claims from each sale's Redis outbox stream
// to Temporal: one OrderSaga per entry, workflow ID order-<order_id>.
//
// An entry is acknowledged (and deleted) only after its workflow start
// returned, so the start is durable first; a start that fails or times out
// is retried with the same workflow ID, never rolled back. Entries left
// pending by a relay that died are taken over (XAUTOCLAIM) once idle for
// ClaimIdle. Several relays may run at once: they share one consumer group,
// and a start that finds the workflow already there counts as done.
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
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/lua"
	"github.com/seckill/seckill/workflows"
)

// DefaultParallel is how many workflow starts one relay keeps in flight
// per sale unless told otherwise.
const DefaultParallel = 32

// Config tunes a relay. Zero values take the defaults in brackets.
type Config struct {
	TaskQueue string
	// Consumer names this relay in the consumer group; unique per process.
	Consumer string
	// BatchSize is the most entries read at once per sale [256].
	BatchSize int
	// Parallel is the most workflow starts in flight per sale
	// [DefaultParallel].
	Parallel int
	// ClaimIdle is how long an entry may sit unacknowledged with another
	// consumer before this one takes it over [30s].
	ClaimIdle time.Duration
	// Block is how long one read waits for new entries [2s].
	Block time.Duration
	// Refresh is how often the list of sales to watch is re-read [1s].
	Refresh time.Duration
}

// Relay is the outbox relay.
type Relay struct {
	scripts  *lua.Scripts
	temporal client.Client
	cfg      Config
	log      *slog.Logger
	metrics  *metrics
}

// New returns a relay.
func New(scripts *lua.Scripts, tc client.Client, cfg Config, log *slog.Logger) *Relay {
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = seckill.DefaultTaskQueue
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.ClaimIdle <= 0 {
		cfg.ClaimIdle = 30 * time.Second
	}
	if cfg.Block <= 0 {
		cfg.Block = 2 * time.Second
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	return &Relay{scripts: scripts, temporal: tc, cfg: cfg, log: log.With("consumer", cfg.Consumer)}
}

// Run relays until ctx is done. It watches every sale listed as active.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
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

// watch relays one sale's outbox until ctx is done.
func (r *Relay) watch(ctx context.Context, saleID int64) {
	log := r.log.With("saleID", saleID)
	stream := r.scripts.SaleKeys(saleID).Outbox
	rdb := r.scripts.Client()
	var lastTakeover time.Time
	failures := 0
	for ctx.Err() == nil {
		err := func() error {
			if time.Since(lastTakeover) >= r.cfg.ClaimIdle/2 {
				if err := r.takeOver(ctx, stream); err != nil {
					return err
				}
				lastTakeover = time.Now()
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
	opts := workflows.StartOptions(in, r.cfg.TaskQueue)
	for attempt := 1; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := r.temporal.ExecuteWorkflow(sctx, opts, seckill.OrderSagaWorkflow, in)
		cancel()
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if err == nil || errors.As(err, &started) {
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
	return seckill.SagaInput{OrderID: orderID, SaleID: saleID, UserID: user, AdmittedAt: time.UnixMilli(ms).UTC()}, nil
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
