package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/lua"
)

var (
	claimScript    = redis.NewScript(lua.Claim)
	releaseScript  = redis.NewScript(lua.Release)
	joinScript     = redis.NewScript(lua.Join)
	handOverScript = redis.NewScript(lua.HandOver)
	warmScript     = redis.NewScript(lua.Warm)
	rewarmScript   = redis.NewScript(lua.Rewarm)
)

// RelayGroup is the consumer group of the outbox relay on every sale stream.
const RelayGroup = "relay"

// KeyRetention is how long a sale's keys outlive its end: longer than the
// longest payment timeout, so every order of the sale settles first.
const KeyRetention = 7 * 24 * time.Hour

// ClaimOutcome is the decision of one admission, as claim.lua codes it.
type ClaimOutcome int

// Outcomes of claim.lua, in its return-code order.
const (
	Admitted ClaimOutcome = iota
	SoldOut
	AlreadyClaimed
	NotStarted
	Ended
	NotWarmed
	RateLimited
)

// Claim is the outcome in the domain's vocabulary (metrics, stats).
func (o ClaimOutcome) Claim() seckill.ClaimOutcome {
	switch o {
	case Admitted:
		return seckill.ClaimAdmitted
	case SoldOut:
		return seckill.ClaimSoldOut
	case AlreadyClaimed:
		return seckill.ClaimAlreadyClaimed
	case NotStarted:
		return seckill.ClaimNotStarted
	case Ended:
		return seckill.ClaimEnded
	case NotWarmed:
		return seckill.ClaimNotWarmed
	case RateLimited:
		return seckill.ClaimRateLimited
	}
	return seckill.ClaimError
}

// Keys are the Redis keys of one sale.
type Keys struct {
	Stock, Claims, Meta, Outbox string
	// Admitted maps each admitted order id to "<pay_by ms>:<user>".
	Admitted string
	// Wait is the waitlist: user -> join sequence, first come first.
	// Waited maps a user the waitlist gave a unit to the order.
	Wait, Waited string
}

// SaleKeys returns the keys of sale id.
func (s *Store) SaleKeys(saleID int64) Keys {
	tag := s.prefix + ":{s" + strconv.FormatInt(saleID, 10) + "}:"
	return Keys{Stock: tag + "stock", Claims: tag + "claims", Meta: tag + "meta", Outbox: tag + "outbox", Admitted: tag + "admitted",
		Wait: tag + "wait", Waited: tag + "waited"}
}

// unitKeys are the keys of every script that gives a unit to a buyer
// (release, join, handover), in their KEYS order.
func (k Keys) unitKeys() []string {
	return []string{k.Stock, k.Claims, k.Meta, k.Outbox, k.Admitted, k.Wait, k.Waited}
}

// args are Terms as the scripts take them: timeout ms, amount, currency.
func (t Terms) args() []any {
	return []any{t.PaymentTimeout.Milliseconds(), t.AmountCents, t.Currency}
}

// ActiveSalesKey is a sorted set of warmed sale ids scored by the time
// (unix ms) until which the relay must watch their outbox.
func (s *Store) ActiveSalesKey() string { return s.prefix + ":sales" }

// ActiveSales lists the sales whose outbox must still be watched (warmed,
// and not past their keys' expiry), read from ActiveSalesKey.
func (s *Store) ActiveSales(ctx context.Context) ([]int64, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.ActiveSalesKey(), &redis.ZRangeBy{
		Min: strconv.FormatInt(time.Now().UnixMilli(), 10), Max: "+inf",
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list active sales: %w", err)
	}
	sales := make([]int64, 0, len(ids))
	for _, v := range ids {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			sales = append(sales, id)
		}
	}
	return sales, nil
}

// RestockChannel is the pub/sub channel told a sale id whenever a unit
// returns to a sale's counter.
func (s *Store) RestockChannel() string { return s.prefix + ":restock" }

// OrderChannel is the pub/sub channel told an order id whenever the
// order's row changes (status, refund), so the API's event streams
// answer at once instead of polling.
func (s *Store) OrderChannel() string { return s.prefix + ":orders" }

// PublishOrderChange tells every API process that order orderID changed.
// Best effort: a missed message only delays a stream until its next poll.
func (s *Store) PublishOrderChange(ctx context.Context, orderID int64) error {
	return s.rdb.Publish(ctx, s.OrderChannel(), strconv.FormatInt(orderID, 10)).Err()
}

// IdempotencyTTL is how long the first answer to an Idempotency-Key is kept.
const IdempotencyTTL = 24 * time.Hour

// ClaimResult is the outcome of one admission.
type ClaimResult struct {
	Outcome ClaimOutcome
	// OrderID is the new order (Admitted) or the user's active order
	// (AlreadyClaimed); zero otherwise.
	OrderID int64
	// Replayed is set when the result is the recorded first answer to the
	// same Idempotency-Key.
	Replayed bool
	// RetryAfter is how long a RateLimited user must wait.
	RetryAfter time.Duration
	// PayBy is the admitted order's payment deadline, fixed at admission
	// (Admitted only).
	PayBy time.Time
}

// Terms are what an admitted buyer owes and for how long they may pay:
// the sale's price and payment timeout, fixed at admission.
type Terms struct {
	PaymentTimeout time.Duration
	AmountCents    int64
	Currency       string
}

// TermsOf are sale's terms for every buyer it admits.
func TermsOf(sale seckill.Sale) Terms {
	return Terms{PaymentTimeout: sale.PaymentTimeout, AmountCents: sale.PriceCents, Currency: sale.Currency}
}

// Claim runs the admission for userID on saleID with the fresh orderID;
// an admitted buyer owes terms, and may pay until the admission time (on
// Redis' clock) plus terms.PaymentTimeout. With a non-empty idempotencyKey
// the first decision for (user, sale, key) is recorded for IdempotencyTTL
// and returned again to every repeat. An error means the outcome is
// unknown (Redis unreachable or timed out): the caller must not assume the
// claim failed or succeeded.
func (s *Store) Claim(ctx context.Context, saleID int64, userID string, orderID int64, idempotencyKey string, terms Terms) (ClaimResult, error) {
	idem, idemKey := "0", ""
	if idempotencyKey != "" {
		idem, idemKey = "1", s.idempotencyKey(saleID, userID, idempotencyKey)
	}
	keys := s.claimKeys(saleID, userID, idemKey)
	var res []any
	// Only a new admission waits for the replicas: losers wrote nothing a
	// buyer is told about. (A replayed 202 wrote nothing either; its first
	// answer waited, or was a 503 the buyer retried after.)
	err := s.durably(ctx, keys[0], func(c redis.Cmdable) (bool, error) {
		var err error
		res, err = claimScript.Run(ctx, c, keys,
			userID, orderID, saleID, int64(IdempotencyTTL/time.Second), idem,
			s.limit.Max, s.limit.Window.Milliseconds(),
			terms.PaymentTimeout.Milliseconds(), terms.AmountCents, terms.Currency).Slice()
		if err != nil {
			return false, fmt.Errorf("claim script: %w", err)
		}
		if len(res) != 4 {
			return false, fmt.Errorf("claim script: unexpected reply %v", res)
		}
		return res[0] == int64(Admitted) && res[2] == int64(0), nil
	})
	if err != nil {
		return ClaimResult{}, err
	}
	code, ok := res[0].(int64)
	if !ok || code < int64(Admitted) || code > int64(RateLimited) {
		return ClaimResult{}, fmt.Errorf("claim script: unexpected code %v", res[0])
	}
	replayed, _ := res[2].(int64)
	r := ClaimResult{Outcome: ClaimOutcome(code), Replayed: replayed == 1}
	if ms, _ := res[3].(string); ms != "" {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return ClaimResult{}, fmt.Errorf("claim script: bad pay_by %q", ms)
		}
		r.PayBy = time.UnixMilli(n).UTC()
	}
	if r.Outcome == RateLimited {
		ms, _ := strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
		r.RetryAfter = time.Duration(max(ms, 1)) * time.Millisecond
		return r, nil
	}
	if str, _ := res[1].(string); str != "" {
		if r.OrderID, err = strconv.ParseInt(str, 10, 64); err != nil {
			return ClaimResult{}, fmt.Errorf("claim script: bad order id %q", str)
		}
	}
	return r, nil
}

// ClaimCommand is the Redis command Claim runs for a claim without an
// Idempotency-Key (EVALSHA, the script's hash, its keys and arguments),
// with user and order as given: redis-benchmark replays it as the raw
// ceiling of the claim path. Preload the script first.
func (s *Store) ClaimCommand(saleID int64, user, order string, terms Terms) []string {
	keys := s.claimKeys(saleID, user, "")
	cmd := append([]string{"EVALSHA", claimScript.Hash(), strconv.Itoa(len(keys))}, keys...)
	return append(cmd, user, order, strconv.FormatInt(saleID, 10), strconv.FormatInt(int64(IdempotencyTTL/time.Second), 10), "0",
		strconv.Itoa(s.limit.Max), strconv.FormatInt(s.limit.Window.Milliseconds(), 10),
		strconv.FormatInt(terms.PaymentTimeout.Milliseconds(), 10), strconv.FormatInt(terms.AmountCents, 10), terms.Currency)
}

// claimKeys are claim.lua's KEYS for userID on saleID, with idem as KEYS[5].
// Without an Idempotency-Key (idem "") the script never reads KEYS[5]: a
// placeholder in the sale's slot stands in, rather than a key hashed on
// every claim.
func (s *Store) claimKeys(saleID int64, userID, idem string) []string {
	k := s.SaleKeys(saleID)
	tag := k.Stock[:len(k.Stock)-len("stock")] // the sale's "prefix:{sN}:"
	if idem == "" {
		idem = tag + "idem:-"
	}
	return []string{k.Stock, k.Claims, k.Meta, k.Outbox, idem, tag + "rl:" + userID, k.Admitted, k.Wait, k.Waited}
}

// idempotencyKey is the record of one user's key on one sale. The client's
// key is hashed: it may hold any printable characters, and its length must
// not grow Redis keys.
func (s *Store) idempotencyKey(saleID int64, userID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return s.prefix + ":{s" + strconv.FormatInt(saleID, 10) + "}:idem:" + userID + ":" + hex.EncodeToString(sum[:16])
}

// WarmSpec is what warm-up loads for one sale.
type WarmSpec struct {
	SaleID   int64
	Units    int64
	StartsAt time.Time
	EndsAt   time.Time
}

// Warm loads spec into Redis unless the sale's counter is live, and lists
// the sale for the relay. It reports whether it loaded the counter now.
func (s *Store) Warm(ctx context.Context, spec WarmSpec) (bool, error) {
	if spec.Units < 0 {
		return false, errors.New("warm: negative units")
	}
	k := s.SaleKeys(spec.SaleID)
	expire := spec.EndsAt.Add(KeyRetention)
	loaded, err := warmScript.Run(ctx, s.rdb,
		[]string{k.Stock, k.Meta, k.Outbox},
		spec.Units, spec.StartsAt.UnixMilli(), spec.EndsAt.UnixMilli(), expire.UnixMilli(), RelayGroup).Int()
	if err != nil {
		return false, fmt.Errorf("warm script: %w", err)
	}
	if err := s.listForRelay(ctx, spec); err != nil {
		return false, err
	}
	return loaded == 1, nil
}

// listForRelay lists the sale for the relay, which watches a sale's outbox
// until every claim of it has been relayed; claims stop at EndsAt, so a day
// past it is ample.
func (s *Store) listForRelay(ctx context.Context, spec WarmSpec) error {
	if err := s.rdb.ZAdd(ctx, s.ActiveSalesKey(), redis.Z{
		Score:  float64(spec.EndsAt.Add(24 * time.Hour).UnixMilli()),
		Member: strconv.FormatInt(spec.SaleID, 10),
	}).Err(); err != nil {
		return fmt.Errorf("list sale for relay: %w", err)
	}
	return nil
}

// ActiveClaim is a user's order that still counts as their one claim.
type ActiveClaim struct {
	UserID  string
	OrderID int64
}

// Rewarm loads a sale whose keys Redis lost (restarted empty) from a
// database snapshot: spec.Units as the counter and claims as the users'
// active orders. It does nothing when the counter is live, and reports
// whether it loaded the sale now.
func (s *Store) Rewarm(ctx context.Context, spec WarmSpec, claims []ActiveClaim) (bool, error) {
	if spec.Units < 0 {
		spec.Units = 0
	}
	k := s.SaleKeys(spec.SaleID)
	expire := spec.EndsAt.Add(KeyRetention)
	args := make([]any, 0, 5+2*len(claims))
	args = append(args, spec.Units, spec.StartsAt.UnixMilli(), spec.EndsAt.UnixMilli(), expire.UnixMilli(), RelayGroup)
	for _, c := range claims {
		args = append(args, c.UserID, c.OrderID)
	}
	loaded, err := rewarmScript.Run(ctx, s.rdb, []string{k.Stock, k.Meta, k.Outbox, k.Claims}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("rewarm script: %w", err)
	}
	if err := s.listForRelay(ctx, spec); err != nil {
		return false, err
	}
	return loaded == 1, nil
}

// NextOrder is what a released unit becomes when a buyer is waiting for
// one: a fresh order id and the sale's terms.
type NextOrder struct {
	ID    int64
	Terms Terms
}

// Released is what a Release did.
type Released struct {
	// Now is set when the claim still named the order and was released
	// by this call.
	Now bool
	// HandedTo is the waiting buyer who got the unit, as a new admission;
	// nil when nobody did (the unit went back to the stock, or stayed out
	// of it).
	HandedTo *Admission
}

// Release forgets userID's claim on saleID if it still names orderID and,
// when next is not nil, gives the unit back: to the first waiting buyer,
// as order next.ID with next.Terms, or with nobody waiting to the warmed
// counter for open claims. Safe to repeat: a repeat finds the claim gone
// and does nothing.
func (s *Store) Release(ctx context.Context, saleID int64, userID string, orderID int64, next *NextOrder) (Released, error) {
	k := s.SaleKeys(saleID)
	args := []any{userID, orderID, "0", s.RestockChannel(), saleID}
	if next != nil {
		args[2] = "1"
		args = append(append(args, next.ID), next.Terms.args()...)
	} else {
		args = append(args, 0, 0, 0, "")
	}
	// A release waits for the replicas too: lost in a failover, the unit
	// would be missing from the counter (or from the buyer it went to) and
	// the user's claim back. On ErrNotReplicated the caller retries, which
	// finds nothing left to do or, after a failover that lost it, does it
	// again.
	var out Released
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		res, err := releaseScript.Run(ctx, c, k.unitKeys(), args...).Slice()
		if err != nil {
			return false, fmt.Errorf("release script: %w", err)
		}
		if out, err = parseReleased(saleID, next, res); err != nil {
			return false, err
		}
		return out.Now, nil
	})
	return out, err
}

func parseReleased(saleID int64, next *NextOrder, res []any) (Released, error) {
	if len(res) != 3 {
		return Released{}, fmt.Errorf("release script: unexpected reply %v", res)
	}
	out := Released{Now: res[0] == int64(1)}
	if user, _ := res[1].(string); user != "" && next != nil {
		ms, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
		if err != nil {
			return Released{}, fmt.Errorf("release script: bad pay_by %v", res[2])
		}
		out.HandedTo = &Admission{OrderID: next.ID, SaleID: saleID, UserID: user, PayBy: time.UnixMilli(ms).UTC()}
	}
	return out, nil
}

// Remaining reads a sale's counter; ok is false when the sale is not warmed.
func (s *Store) Remaining(ctx context.Context, saleID int64) (n int64, ok bool, err error) {
	n, err = s.rdb.Get(ctx, s.SaleKeys(saleID).Stock).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read stock: %w", err)
	}
	return n, true, nil
}

// RemainingMany reads the counters of several sales in one round trip.
// A sale that is not warmed is absent from the map.
func (s *Store) RemainingMany(ctx context.Context, saleIDs []int64) (map[int64]int64, error) {
	cmds := make([]*redis.StringCmd, len(saleIDs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range saleIDs {
			cmds[i] = p.Get(ctx, s.SaleKeys(id).Stock)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read stock: %w", err)
	}
	out := make(map[int64]int64, len(saleIDs))
	for i, cmd := range cmds {
		if n, err := cmd.Int64(); err == nil {
			out[saleIDs[i]] = n
		}
	}
	return out, nil
}

// ClaimOf returns the order id userID holds on saleID, or 0.
func (s *Store) ClaimOf(ctx context.Context, saleID int64, userID string) (int64, error) {
	id, err := s.rdb.HGet(ctx, s.SaleKeys(saleID).Claims, userID).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read claim: %w", err)
	}
	return id, nil
}

// Admission is an admitted order as Redis holds it until its saga has
// written it down.
type Admission struct {
	OrderID int64
	SaleID  int64
	UserID  string
	PayBy   time.Time
}

// Admission finds order orderID among the admissions of saleIDs (the
// sales to look in). ok is false when none of them admitted it.
func (s *Store) Admission(ctx context.Context, orderID int64, saleIDs []int64) (a Admission, ok bool, err error) {
	cmds := make([]*redis.StringCmd, len(saleIDs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range saleIDs {
			cmds[i] = p.HGet(ctx, s.SaleKeys(id).Admitted, strconv.FormatInt(orderID, 10))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Admission{}, false, fmt.Errorf("find admission of order %d: %w", orderID, err)
	}
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil {
			continue
		}
		ms, user, found := strings.Cut(v, ":")
		n, perr := strconv.ParseInt(ms, 10, 64)
		if !found || perr != nil {
			return Admission{}, false, fmt.Errorf("admission of order %d: malformed %q", orderID, v)
		}
		return Admission{OrderID: orderID, SaleID: saleIDs[i], UserID: user, PayBy: time.UnixMilli(n).UTC()}, true, nil
	}
	return Admission{}, false, nil
}

// Preload loads every script into the script cache, so the first claims of
// a burst do not pay for an EVAL fallback.
func (s *Store) Preload(ctx context.Context) error {
	for _, sc := range []*redis.Script{claimScript, releaseScript, joinScript, handOverScript, warmScript, rewarmScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load script: %w", err)
		}
	}
	return nil
}

// lowerScript sets a counter to a lower target only while it still holds
// the value the caller read: a claim or a release in between wins.
var lowerScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur == ARGV[1] and tonumber(ARGV[2]) < tonumber(cur) then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0`)

// LowerRemaining lowers sale's counter from seen to target if it still
// holds seen. It never raises it. It reports whether it changed it.
func (s *Store) LowerRemaining(ctx context.Context, saleID, seen, target int64) (bool, error) {
	n, err := lowerScript.Run(ctx, s.rdb, []string{s.SaleKeys(saleID).Stock}, seen, target).Int()
	if err != nil {
		return false, fmt.Errorf("lower stock: %w", err)
	}
	return n == 1, nil
}

// Claims returns every claim of a sale: user id -> order id, 0 for a
// record that names no order (none of seckill's scripts writes one).
func (s *Store) Claims(ctx context.Context, saleID int64) (map[string]int64, error) {
	raw, err := s.rdb.HGetAll(ctx, s.SaleKeys(saleID).Claims).Result()
	if err != nil {
		return nil, fmt.Errorf("read claims: %w", err)
	}
	out := make(map[string]int64, len(raw))
	for user, v := range raw {
		id, _ := strconv.ParseInt(v, 10, 64)
		out[user] = max(id, 0)
	}
	return out, nil
}

// RestoreClaim writes userID's claim on saleID as orderID unless the user
// has one, and reports whether it wrote it.
func (s *Store) RestoreClaim(ctx context.Context, saleID int64, userID string, orderID int64) (bool, error) {
	ok, err := s.rdb.HSetNX(ctx, s.SaleKeys(saleID).Claims, userID, orderID).Result()
	if err != nil {
		return false, fmt.Errorf("restore claim: %w", err)
	}
	return ok, nil
}
