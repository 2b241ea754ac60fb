package redisstore

import (
	"context"
	"fmt"
	"strconv"
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
	openScript     = redis.NewScript(lua.Open)
	adoptScript    = redis.NewScript(lua.Adopt)
	leaveScript    = redis.NewScript(lua.Leave)
	nowScript      = redis.NewScript(lua.Now)
	takeScript     = redis.NewScript(lua.Take)
	giveScript     = redis.NewScript(lua.Give)
	forgetScript   = redis.NewScript(lua.Forget)
	aimScript      = redis.NewScript(lua.Aim)
	restoreScript  = redis.NewScript(lua.Restore)
	unlockScript   = redis.NewScript(lua.Unlock)
	useProofScript = redis.NewScript(lua.UseProof)
	restockScript  = redis.NewScript(lua.Restock)
)

// RelayGroup is the consumer group of the outbox relay on every sale stream.
const RelayGroup = "relay"

// KeyRetention is how long a sale's keys outlive its end: longer than the
// longest payment timeout, so every order of the sale settles first.
const KeyRetention = 7 * 24 * time.Hour

// Keys are the Redis keys of one segment of a sale, for one of its
// variants (SegmentKeys gives the variant "default"'s; Variant another's).
// Stock, Wait, Moves and Moved are the variant's own; the rest are the
// segment's, shared by its variants: a buyer's claim is one per sale,
// whatever its variant.
type Keys struct {
	// Stock is the variant's units left in this segment.
	Stock, Claims, Meta, Outbox string
	// Admitted maps each admitted order id to
	// "<pay_by ms>[d][/<quantity>/<sku>]:<user>" (parseAdmission).
	Admitted string
	// Wait is the variant's waitlist: user -> join sequence, first come
	// first. Waited maps a user the waitlist gave a unit to the order.
	// Lines maps each waiting user to the Wait key of the one line they
	// are in.
	Wait, Waited, Lines string
	// Moves holds the records of the variant's units taken from this
	// segment and not yet forgotten (move id -> move.lua's record); Moved
	// the ids of the variant's moves given to this segment (so a repeat
	// gives nothing).
	Moves, Moved string
	// Released holds the ids of the orders released (release.lua), so a
	// claim is never written back for one (restore.lua).
	Released string
	// Units maps each sku to the units the segment's claims hold.
	Units string
	// Held is the variant's units held for the head of its line, who
	// waits for more units than have come back (give_units in admit.lua).
	Held string
}

// Variant returns k for variant sku: the segment's keys with the
// variant's own Stock, Wait, Held, Moves and Moved ("stock:<sku>", ...; the
// variant "default" keeps the names a sale had before variants, so a sale
// warmed before them reads on).
func (k Keys) Variant(sku string) Keys {
	tag := k.tag()
	suffix := ""
	if sku != seckill.DefaultSKU && sku != "" {
		suffix = ":" + sku
	}
	k.Stock, k.Wait, k.Moves, k.Moved = tag+"stock"+suffix, tag+"wait"+suffix, tag+"moves"+suffix, tag+"moved"+suffix
	k.Held = tag + "held" + suffix
	return k
}

// SaleKeys returns the keys of sale id's segment 0: all of them for a sale of
// one segment.
func (s *Store) SaleKeys(saleID int64) Keys { return s.SegmentKeys(saleID, 0) }

// unitKeys are the first keys of every script that gives a unit to a
// buyer (release, join, handover, give), in their KEYS order.
func (k Keys) unitKeys() []string {
	return []string{k.Stock, k.Claims, k.Meta, k.Outbox, k.Admitted, k.Wait, k.Waited}
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

// Preload loads every script into the script cache, so the first claims of
// a burst do not pay for an EVAL fallback.
func (s *Store) Preload(ctx context.Context) error {
	for _, sc := range []*redis.Script{claimScript, releaseScript, joinScript, handOverScript, warmScript, rewarmScript, takeScript, giveScript, forgetScript, aimScript, restoreScript, unlockScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load script: %w", err)
		}
	}
	return nil
}
