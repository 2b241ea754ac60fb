package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// The outbox: every admission appends one entry to its segment's stream
// (seckill:{sN}:outbox, and {sN.p} for the other segments of a sale of
// several); relays read it in the consumer group RelayGroup, start each
// entry's saga, then acknowledge and delete it. Every command here names
// one stream, so it runs on the slot of its segment.

// Outbox names one outbox stream: segment Segment of sale SaleID.
type Outbox struct {
	SaleID  int64
	Segment int
}

func (s *Store) stream(o Outbox) string { return s.SegmentKeys(o.SaleID, o.Segment).Outbox }

// ActiveOutboxes lists the outboxes the relay must watch: every segment of
// every active sale (ActiveSales).
func (s *Store) ActiveOutboxes(ctx context.Context) ([]Outbox, error) {
	sales, err := s.ActiveSales(ctx)
	if err != nil {
		return nil, err
	}
	var out []Outbox
	for _, id := range sales {
		n, err := s.Segments(ctx, id)
		if err != nil {
			return nil, err
		}
		for p := range n {
			out = append(out, Outbox{SaleID: id, Segment: p})
		}
	}
	return out, nil
}

// OutboxEntry is one admitted claim waiting for its saga.
type OutboxEntry struct {
	ID   string // the stream entry id
	Saga seckill.SagaInput
	// TraceParent is the claim request's span (W3C traceparent), "" when
	// the claim was not traced or the entry came from the waitlist.
	TraceParent string
	// Err is set when the entry is not one claim.lua can have written: it
	// is acknowledged without a saga, so it does not block the stream.
	Err error
}

// OutboxConsumer is one relay known to a sale's consumer group.
type OutboxConsumer struct {
	Name    string
	Pending int64         // entries it read and did not acknowledge
	Idle    time.Duration // since its last read
}

// ErrOutboxGroupLost is returned by ReadOutbox when the sale's stream or
// consumer group was gone (Redis restarted empty): it has been recreated
// from the stream's start, so nothing written from now on is skipped.
var ErrOutboxGroupLost = errors.New("the outbox consumer group was lost and has been recreated")

// ReadOutbox reads up to count new entries of outbox o for consumer,
// waiting up to block for the first. None: an empty slice.
func (s *Store) ReadOutbox(ctx context.Context, o Outbox, consumer string, count int, block time.Duration) ([]OutboxEntry, error) {
	stream := s.stream(o)
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: RelayGroup, Consumer: consumer, Streams: []string{stream, ">"}, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if isRedisError(err, "NOGROUP") {
		if cerr := s.rdb.XGroupCreateMkStream(ctx, stream, RelayGroup, "0").Err(); cerr != nil && !isRedisError(cerr, "BUSYGROUP") {
			return nil, fmt.Errorf("recreate the outbox consumer group: %w", cerr)
		}
		return nil, ErrOutboxGroupLost
	}
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	var out []OutboxEntry
	for _, st := range res {
		out = append(out, entries(st.Messages)...)
	}
	return out, nil
}

// AckOutbox acknowledges and deletes entries ids of outbox o, in one
// transaction on its slot.
func (s *Store) AckOutbox(ctx context.Context, o Outbox, ids []string) error {
	stream := s.stream(o)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, stream, RelayGroup, ids...)
		p.XDel(ctx, stream, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("acknowledge outbox entries: %w", err)
	}
	return nil
}

// OutboxConsumers lists the relays known to outbox o's consumer group.
func (s *Store) OutboxConsumers(ctx context.Context, o Outbox) ([]OutboxConsumer, error) {
	cs, err := s.rdb.XInfoConsumers(ctx, s.stream(o), RelayGroup).Result()
	if err != nil {
		return nil, fmt.Errorf("list relay consumers: %w", err)
	}
	consumers := make([]OutboxConsumer, len(cs))
	for i, c := range cs {
		consumers[i] = OutboxConsumer{Name: c.Name, Pending: c.Pending, Idle: c.Idle}
	}
	return consumers, nil
}

// ForgetOutboxConsumer removes consumer from outbox o's group.
func (s *Store) ForgetOutboxConsumer(ctx context.Context, o Outbox, consumer string) error {
	return s.rdb.XGroupDelConsumer(ctx, s.stream(o), RelayGroup, consumer).Err()
}

// TakeOverPending moves up to count of the entries consumer holds pending
// on outbox o to taker, and returns them (none: empty).
func (s *Store) TakeOverPending(ctx context.Context, o Outbox, consumer, taker string, count int) ([]OutboxEntry, error) {
	stream := s.stream(o)
	pending, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: RelayGroup, Consumer: consumer, Start: "-", End: "+", Count: int64(count),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list pending entries of %s: %w", consumer, err)
	}
	if len(pending) == 0 {
		return nil, nil
	}
	ids := make([]string, len(pending))
	for i, p := range pending {
		ids[i] = p.ID
	}
	msgs, err := s.rdb.XClaim(ctx, &redis.XClaimArgs{Stream: stream, Group: RelayGroup, Consumer: taker, Messages: ids}).Result()
	if err != nil {
		return nil, fmt.Errorf("take over entries of %s: %w", consumer, err)
	}
	return entries(msgs), nil
}

// TakeOverIdle moves to taker up to count entries of outbox o that have
// been pending for at least minIdle, scanning from start ("0-0" for the
// beginning); next is where to go on ("0-0": done).
func (s *Store) TakeOverIdle(ctx context.Context, o Outbox, taker string, minIdle time.Duration, start string, count int) (taken []OutboxEntry, next string, err error) {
	msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.stream(o), Group: RelayGroup, Consumer: taker,
		MinIdle: minIdle, Start: start, Count: int64(count),
	}).Result()
	if err != nil {
		return nil, "", fmt.Errorf("take over pending entries: %w", err)
	}
	return entries(msgs), next, nil
}

// OutboxBacklog sums the lengths of the outboxes of saleIDs (every segment).
func (s *Store) OutboxBacklog(ctx context.Context, saleIDs []int64) (int64, error) {
	var streams []string
	for _, id := range saleIDs {
		ks, err := s.allKeys(ctx, id)
		if err != nil {
			return 0, err
		}
		for _, k := range ks {
			streams = append(streams, k.Outbox)
		}
	}
	cmds := make([]*redis.IntCmd, len(streams))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range streams {
			cmds[i] = p.XLen(ctx, st)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read outbox lengths: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// relayAliveKey says relay consumer is alive.
func (s *Store) relayAliveKey(consumer string) string { return s.prefix + ":relay:alive:" + consumer }

// MarkRelayAlive says consumer is alive for ttl.
func (s *Store) MarkRelayAlive(ctx context.Context, consumer string, ttl time.Duration) error {
	return s.rdb.Set(ctx, s.relayAliveKey(consumer), time.Now().UnixMilli(), ttl).Err()
}

// MarkRelayGone says consumer has stopped, so the others take over what
// it left at once.
func (s *Store) MarkRelayGone(ctx context.Context, consumer string) error {
	return s.rdb.Del(ctx, s.relayAliveKey(consumer)).Err()
}

// RelayAlive reports whether consumer's liveness mark is there.
func (s *Store) RelayAlive(ctx context.Context, consumer string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.relayAliveKey(consumer)).Result()
	if err != nil {
		return false, fmt.Errorf("check relay liveness: %w", err)
	}
	return n == 1, nil
}

func entries(msgs []redis.XMessage) []OutboxEntry {
	out := make([]OutboxEntry, len(msgs))
	for i, m := range msgs {
		in, err := parseEntry(m.Values)
		tp, _ := m.Values["tp"].(string)
		out[i] = OutboxEntry{ID: m.ID, Saga: in, TraceParent: tp, Err: err}
	}
	return out
}

// parseEntry reads the fields claim.lua writes: o order, u user, s sale,
// t admission time (ms), and since payable-at-admission p pay_by (ms),
// a amount (cents), c currency, d "1" for an admission of the sale's
// draw, and k sku and n quantity unless the order is one unit of "default".
func parseEntry(values map[string]any) (seckill.SagaInput, error) {
	str := func(k string) string { s, _ := values[k].(string); return s }
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
	in := seckill.SagaInput{OrderID: orderID, SaleID: saleID, UserID: user, AdmittedAt: time.UnixMilli(ms).UTC(), Drawn: str("d") == "1",
		Item: seckill.DefaultItem}
	// k sku and n quantity: written unless one unit of "default".
	if sku := str("k"); sku != "" {
		q, err := strconv.Atoi(str("n"))
		if err != nil || q < 1 || !seckill.ValidSKU(sku) {
			return seckill.SagaInput{}, fmt.Errorf("item %q x %q: malformed", str("n"), sku)
		}
		in.Item = seckill.Item{SKU: sku, Quantity: q}
	}
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

func isRedisError(err error, prefix string) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), prefix)
}
