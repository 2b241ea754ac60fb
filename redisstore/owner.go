package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// An installation (one database, the processes that use it) owns its key
// prefix: the key <prefix>:installation names it. Two installations
// sharing a prefix would take each other's outbox entries and "reconcile"
// each other's orders, so one that finds the prefix owned by another
// refuses to start.

// PrefixTakenError is a prefix that another installation owns.
type PrefixTakenError struct {
	Prefix string
	Owner  string // who owns it, as it described itself, or what was found
}

func (e *PrefixTakenError) Error() string {
	return fmt.Sprintf("the Redis key prefix %q belongs to another seckill installation (%s): set SECKILL_REDIS_PREFIX to a prefix of this installation's own "+
		"(or, if that installation is gone for good, delete its keys: redis-cli --scan --pattern '%s:*' | xargs redis-cli unlink)", e.Prefix, e.Owner, e.Prefix)
}

func (s *Store) ownerKey() string { return s.prefix + ":installation" }

// ClaimPrefix makes installation id (described by about, e.g. its
// database) the owner of s's prefix, or checks that it is. A prefix that
// names no owner yet but holds sales that knownSale does not know (keys of
// an installation from before owners were recorded) is taken too.
func (s *Store) ClaimPrefix(ctx context.Context, id, about string, knownSale func(context.Context, int64) (bool, error)) error {
	owner, err := s.prefixOwner(ctx)
	if err != nil {
		return err
	}
	if owner == "" {
		if err := s.foreignSales(ctx, knownSale); err != nil {
			return err
		}
		var set bool
		err := s.durably(ctx, s.ownerKey(), func(c redis.Cmdable) (bool, error) {
			var err error
			set, err = c.SetNX(ctx, s.ownerKey(), id+" "+about, 0).Result()
			return set, err
		})
		if err != nil {
			return fmt.Errorf("record the owner of Redis prefix %q: %w", s.prefix, err)
		}
		if set {
			return nil
		}
		if owner, err = s.prefixOwner(ctx); err != nil { // another took it first
			return err
		}
	}
	return s.ownedBy(owner, id)
}

// ownedBy checks that owner, as <prefix>:installation records it ("<id>
// <about>"), is installation id.
func (s *Store) ownedBy(owner, id string) error {
	ownerID, ownerAbout, _ := strings.Cut(owner, " ")
	if ownerID != id {
		return &PrefixTakenError{Prefix: s.prefix, Owner: "installation " + ownerID + ", " + ownerAbout}
	}
	return nil
}

func (s *Store) prefixOwner(ctx context.Context) (string, error) {
	v, err := s.rdb.Get(ctx, s.ownerKey()).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the owner of Redis prefix %q: %w", s.prefix, err)
	}
	return v, nil
}

// foreignSales fails when the prefix lists a sale knownSale does not know.
func (s *Store) foreignSales(ctx context.Context, knownSale func(context.Context, int64) (bool, error)) error {
	ids, err := s.rdb.ZRange(ctx, s.ActiveSalesKey(), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("list the sales under Redis prefix %q: %w", s.prefix, err)
	}
	for _, v := range ids {
		saleID, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		known, err := knownSale(ctx, saleID)
		if err != nil {
			return err
		}
		if !known {
			return &PrefixTakenError{Prefix: s.prefix, Owner: fmt.Sprintf("unrecorded; it holds sale %d, which this installation's database does not have", saleID)}
		}
	}
	return nil
}

// CheckPrefix reports whether installation id owns s's prefix, without
// taking it: for tools that only read (the audit). A prefix nobody owns
// yet is an error too: no installation has run on it, so the tool is
// most likely looking in the wrong place.
func (s *Store) CheckPrefix(ctx context.Context, id string) error {
	owner, err := s.prefixOwner(ctx)
	if err != nil {
		return err
	}
	if owner == "" {
		return fmt.Errorf("no seckill installation has run on the Redis key prefix %q: check SECKILL_REDIS_PREFIX and REDIS_URL (they must be the ones the API and the worker use)", s.prefix)
	}
	return s.ownedBy(owner, id)
}
