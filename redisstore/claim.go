package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/tracing"
)

// scriptOutcomes are the answers of claim.lua and join.lua by their
// integer result code (one numbering for both scripts, documented at the
// top of each): the one place the scripts' codes become seckill.Outcome.
var scriptOutcomes = [...]seckill.Outcome{
	0:  seckill.Admitted,
	1:  seckill.SoldOut,
	2:  seckill.AlreadyClaimed,
	3:  seckill.SaleNotStarted,
	4:  seckill.SaleEnded,
	5:  seckill.Unavailable, // the sale's keys are missing: not warmed
	6:  seckill.RateLimited,
	7:  seckill.Waiting,
	8:  seckill.AlreadyWaiting,
	9:  seckill.WaitlistFull,
	10: seckill.NotEnoughStock,
	11: seckill.KeyReused,
}

// scriptOutcome maps a script's result code; ok is false for a code
// neither script returns.
func scriptOutcome(code any) (o seckill.Outcome, ok bool) {
	n, isInt := code.(int64)
	if !isInt || n < 0 || n >= int64(len(scriptOutcomes)) {
		return "", false
	}
	return scriptOutcomes[n], true
}

// IdempotencyTTL is how long the first answer to an Idempotency-Key is kept.
const IdempotencyTTL = 24 * time.Hour

// termArgs are terms as the scripts take them: timeout ms, price per
// unit, currency.
func termArgs(t seckill.Terms) []any {
	return []any{t.PaymentTimeout.Milliseconds(), t.UnitPriceCents, t.Currency}
}

// maxBorrows bounds how often a claim on a sale of several segments borrows
// from other segments (or waits for units in flight) before it answers a
// tentative SOLD_OUT.
const maxBorrows = 8

// Claim runs the admission of item (quantity units of one variant, all or
// none) for userID on saleID with the fresh orderID; an admitted buyer owes
// item.Quantity x terms.UnitPriceCents, and may pay until the admission time (on
// Redis' clock) plus terms.PaymentTimeout. With a non-empty idempotencyKey
// the first decision for (user, sale, key) is recorded for IdempotencyTTL
// and returned again to every repeat of the same item (another item under
// the key: KeyReused, nothing decided). An error means the outcome is
// unknown (Redis unreachable or timed out): the caller must not assume the
// claim failed or succeeded.
//
// On a sale of several segments the claim runs on the buyer's segment; when that
// segment is empty it borrows units from the fullest other segment (moves), so
// the answer is a final SOLD_OUT (or NOT_ENOUGH_STOCK) only when no segment
// has the variant's units to lend and none is in flight between segments. A segment whose line has waiting buyers borrows
// nothing for a new claim (the line comes first): its SOLD_OUT is
// Tentative, as is one given after maxBorrows.
func (s *Store) Claim(ctx context.Context, saleID int64, userID string, orderID int64, idempotencyKey string, terms seckill.Terms, item seckill.Item) (seckill.ClaimResult, error) {
	item = item.OrDefault()
	k, n, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return seckill.ClaimResult{}, err
	}
	k = k.Variant(item.SKU)
	home := segmentOf(userID, n)
	final := n == 1
	res, err := s.claimOnce(ctx, k, saleID, userID, orderID, idempotencyKey, terms, item, final)
	again := s.WithRateLimit(RateLimit{}) // one claim is one attempt, however often it borrows
	for attempt := 0; err == nil && (res.Outcome == seckill.SoldOut || res.Outcome == seckill.NotEnoughStock) && !final; attempt++ {
		var b borrowed
		if b, err = s.borrow(ctx, saleID, n, home, item, "b"+strconv.FormatInt(orderID, 10)+"."+strconv.Itoa(attempt)); err != nil {
			break
		}
		switch {
		case b == borrowedOwed, b != borrowedNone && attempt+1 >= maxBorrows:
			// Units may still come (to this segment's waiting buyers first):
			// SOLD_OUT for now, recorded for no Idempotency-Key.
			res.Tentative, res.Owed = true, b == borrowedOwed
			return res, nil
		case b == borrowedNone && idempotencyKey == "":
			// No segment has a unit and none is on its way: sold out. (With an
			// Idempotency-Key the script records the final answer below.)
			return res, nil
		case b == borrowedNone:
			final = true
		case b == borrowedInFlight: // units are on their way between segments: let them land
			time.Sleep(2 * time.Millisecond)
		}
		res, err = again.claimOnce(ctx, k, saleID, userID, orderID, idempotencyKey, terms, item, final)
	}
	return res, err
}

// claimOnce runs claim.lua on the segment with keys k. Unless final, a
// SOLD_OUT of the segment is not recorded as the Idempotency-Key's answer:
// other segments may still have units.
func (s *Store) claimOnce(ctx context.Context, k Keys, saleID int64, userID string, orderID int64, idempotencyKey string, terms seckill.Terms, item seckill.Item, final bool) (seckill.ClaimResult, error) {
	idem, idemKey := "0", ""
	if idempotencyKey != "" {
		idem, idemKey = "1", idempotencyKeyOf(k, userID, idempotencyKey)
	}
	fin := "1"
	if !final {
		fin = "0"
	}
	keys := claimKeys(k, userID, idemKey)
	var res []any
	// Only a new admission waits for the replicas: losers wrote nothing a
	// buyer is told about. (A replayed 202 wrote nothing either; its first
	// answer waited, or was a 503 the buyer retried after.)
	err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
		var err error
		res, err = claimScript.Run(ctx, c, keys,
			userID, orderID, saleID, int64(IdempotencyTTL/time.Second), idem,
			s.limit.Max, s.limit.Window.Milliseconds(),
			terms.PaymentTimeout.Milliseconds(), terms.UnitPriceCents, terms.Currency, fin, tracing.TraceParent(ctx), flag(s.byDraw),
			item.SKU, item.Quantity, flag(terms.Member)).Slice()
		if err != nil {
			return false, fmt.Errorf("claim script: %w", err)
		}
		if len(res) != 4 {
			return false, fmt.Errorf("claim script: unexpected reply %v", res)
		}
		o, _ := scriptOutcome(res[0])
		return o == seckill.Admitted && res[2] == int64(0), nil
	})
	if err != nil {
		return seckill.ClaimResult{}, err
	}
	return parseClaim(res)
}

func parseClaim(res []any) (seckill.ClaimResult, error) {
	o, ok := scriptOutcome(res[0])
	switch o {
	case seckill.Waiting, seckill.AlreadyWaiting, seckill.WaitlistFull:
		ok = false // join.lua's answers only
	}
	if !ok {
		return seckill.ClaimResult{}, fmt.Errorf("claim script: unexpected code %v", res[0])
	}
	replayed, _ := res[2].(int64)
	r := seckill.ClaimResult{Outcome: o, Replayed: replayed == 1}
	if ms, _ := res[3].(string); ms != "" {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return seckill.ClaimResult{}, fmt.Errorf("claim script: bad pay_by %q", ms)
		}
		r.PayBy = time.UnixMilli(n).UTC()
	}
	if r.Outcome == seckill.NotEnoughStock {
		r.Remaining, _ = strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
		return r, nil
	}
	if r.Outcome == seckill.RateLimited {
		ms, _ := strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
		r.RetryAfter = time.Duration(max(ms, 1)) * time.Millisecond
		return r, nil
	}
	if str, _ := res[1].(string); str != "" {
		var err error
		if r.OrderID, err = strconv.ParseInt(str, 10, 64); err != nil {
			return seckill.ClaimResult{}, fmt.Errorf("claim script: bad order id %q", str)
		}
	}
	return r, nil
}

// ClaimCommand is the Redis command Claim runs for a claim without an
// Idempotency-Key on a sale of one segment (EVALSHA, the script's hash, its
// keys and arguments), with user and order as given: redis-benchmark
// replays it as the raw ceiling of the claim path. Preload the script
// first.
func (s *Store) ClaimCommand(saleID int64, user, order string, terms seckill.Terms, item seckill.Item) []string {
	item = item.OrDefault()
	keys := claimKeys(s.SaleKeys(saleID).Variant(item.SKU), user, "")
	cmd := append([]string{"EVALSHA", claimScript.Hash(), strconv.Itoa(len(keys))}, keys...)
	return append(cmd, user, order, strconv.FormatInt(saleID, 10), strconv.FormatInt(int64(IdempotencyTTL/time.Second), 10), "0",
		strconv.Itoa(s.limit.Max), strconv.FormatInt(s.limit.Window.Milliseconds(), 10),
		strconv.FormatInt(terms.PaymentTimeout.Milliseconds(), 10), strconv.FormatInt(terms.UnitPriceCents, 10), terms.Currency, "1",
		"", "0", item.SKU, strconv.Itoa(item.Quantity))
}

// tag is the "prefix:{tag}:" every key of the segment with keys k starts with.
func (k Keys) tag() string { return strings.TrimSuffix(k.Meta, "meta") }

// claimKeys are claim.lua's KEYS for userID on the segment with keys k, with
// idem as KEYS[5]. Without an Idempotency-Key (idem "") the script never
// reads KEYS[5]: a placeholder in the segment's slot stands in, rather than a
// key hashed on every claim.
func claimKeys(k Keys, userID, idem string) []string {
	if idem == "" {
		idem = k.tag() + "idem:-"
	}
	return []string{k.Stock, k.Claims, k.Meta, k.Outbox, idem, k.tag() + "rl:" + userInKey(userID), k.Admitted, k.Wait, k.Waited, k.Units, k.Lines}
}

// userInKey is userID as it appears in a key name. An id of the form
// seckill accepted before provider subjects (1-64 of [A-Za-z0-9_-]) is
// itself, so the keys written before (Idempotency-Key records, rate-limit
// windows) are still found; any other ("auth0|5f3c", an e-mail, up to 255
// printable ASCII characters, ":" and braces included) is "~" and its
// base64url, so it never splits a key's parts or its hash tag. No two
// users share a key: "~" is never in the first form, and base64url is
// one-to-one. Claims, waitlist entries and outbox entries hold the id
// itself, as values or hash fields.
func userInKey(userID string) string {
	if len(userID) >= 1 && len(userID) <= 64 && strings.Trim(userID, keySafe) == "" {
		return userID
	}
	return "~" + base64.RawURLEncoding.EncodeToString([]byte(userID))
}

// keySafe are the characters a user id may keep in a key name.
const keySafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

// idempotencyKeyOf is the record of one user's key, in the user's segment.
// The client's key is hashed: it may hold any printable characters, and
// its length must not grow Redis keys.
func idempotencyKeyOf(k Keys, userID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return k.tag() + "idem:" + userInKey(userID) + ":" + hex.EncodeToString(sum[:16])
}

// ClaimOf returns the order id userID holds on saleID, or 0.
func (s *Store) ClaimOf(ctx context.Context, saleID int64, userID string) (int64, error) {
	k, _, err := s.userKeys(ctx, saleID, userID)
	if err != nil {
		return 0, err
	}
	id, err := s.rdb.HGet(ctx, k.Claims, userID).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read claim: %w", err)
	}
	return id, nil
}

// Claims returns every claim of a sale, over all its segments: user id ->
// order id, 0 for a record that names no order (none of seckill's scripts
// writes one).
func (s *Store) Claims(ctx context.Context, saleID int64) (map[string]int64, error) {
	raw, err := s.everySegment(ctx, saleID, func(k Keys) string { return k.Claims })
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

// everySegment reads the hash key(k) of every segment of saleID into one map
// (a buyer's fields live in their own segment only).
func (s *Store) everySegment(ctx context.Context, saleID int64, key func(Keys) string) (map[string]string, error) {
	segments, err := s.allKeys(ctx, saleID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range segments {
		raw, err := s.rdb.HGetAll(ctx, key(k)).Result()
		if err != nil {
			return nil, err
		}
		for field, v := range raw {
			out[field] = v
		}
	}
	return out, nil
}

// Admission finds order orderID among the admissions of saleIDs (the
// sales to look in, every segment of each). ok is false when none of them
// admitted it.
func (s *Store) Admission(ctx context.Context, orderID int64, saleIDs []int64) (a seckill.Admission, ok bool, err error) {
	type lookup struct {
		sale int64
		cmd  *redis.StringCmd
	}
	var cmds []lookup
	var keys [][]Keys
	for _, id := range saleIDs {
		ks, err := s.allKeys(ctx, id)
		if err != nil {
			return seckill.Admission{}, false, err
		}
		keys = append(keys, ks)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range saleIDs {
			for _, k := range keys[i] {
				cmds = append(cmds, lookup{id, p.HGet(ctx, k.Admitted, strconv.FormatInt(orderID, 10))})
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return seckill.Admission{}, false, fmt.Errorf("find admission of order %d: %w", orderID, err)
	}
	for _, l := range cmds {
		v, err := l.cmd.Result()
		if err != nil {
			continue
		}
		found, valid := parseAdmission(v)
		if !valid {
			return seckill.Admission{}, false, fmt.Errorf("admission of order %d: malformed %q", orderID, v)
		}
		found.OrderID, found.SaleID = orderID, l.sale
		return found, true, nil
	}
	return seckill.Admission{}, false, nil
}

// parseAdmission reads an admission record (admit.lua),
// "<pay_by ms>[d][/<quantity>/<sku>]:<user>": "d" when the draw admitted
// it, the item unless one unit of "default" (records written before
// variants have none). The markers come before the first ':' because a
// user id may hold ':' (a sku never does).
func parseAdmission(v string) (a seckill.Admission, ok bool) {
	head, user, found := strings.Cut(v, ":")
	head, item, hasItem := strings.Cut(head, "/")
	ms, drawn := strings.CutSuffix(head, "d")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !found || err != nil {
		return seckill.Admission{}, false
	}
	a.Item = seckill.DefaultItem
	if hasItem {
		q, sku, _ := strings.Cut(item, "/")
		if a.Item.Quantity, err = strconv.Atoi(q); err != nil || a.Item.Quantity < 1 || !seckill.ValidSKU(sku) {
			return seckill.Admission{}, false
		}
		a.Item.SKU = sku
	}
	a.UserID, a.PayBy, a.Drawn = user, time.UnixMilli(n).UTC(), drawn
	return a, true
}

// flag is a boolean script argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
