package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A sale's stock in parts (docs/API.md "stock_segments", docs/DESIGN.md
// "Where a released unit goes"). Part 0 holds the keys of a sale of one
// part, under the hash tag {s<id>}; part p > 0 has the same keys under a
// tag of its own, {s<id>.<p>}, chosen so that no two parts of a sale share
// a Cluster hash slot. Every part is a complete small sale: stock,
// claims, admissions, outbox, waitlist. A buyer belongs to one part
// (partOf), so one script still sees every claim of theirs. Units move
// between parts by a protocol of single-part scripts (moves.go), recorded
// while in flight and counted once (readHoldings), so the sum of the
// parts never grows.

// parts remembers, per sale, how many parts it has (fixed when the sale
// is created) and the hash tags of its parts.
type parts struct {
	mu    sync.Mutex
	count map[int64]int
	tags  map[int64][]string
}

func newParts() *parts { return &parts{count: map[int64]int{}, tags: map[int64][]string{}} }

// tag is the hash tag (without braces) of part p of saleID. A tag whose
// slot an earlier part holds gets a suffix (~1, ~2, ...) until it has a
// slot of its own, so the tags are the same in every process.
func (ps *parts) tag(saleID int64, p int) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	tags := ps.tags[saleID]
	for len(tags) <= p {
		q := len(tags)
		base := "s" + strconv.FormatInt(saleID, 10)
		if q > 0 {
			base += "." + strconv.Itoa(q)
		}
		t := base
		for try := 1; q > 0 && takenSlot(tags, slot(t)); try++ {
			t = base + "~" + strconv.Itoa(try)
		}
		tags = append(tags, t)
	}
	ps.tags[saleID] = tags
	return tags[p]
}

func takenSlot(tags []string, sl uint16) bool {
	for _, t := range tags {
		if slot(t) == sl {
			return true
		}
	}
	return false
}

// slot is the Redis Cluster hash slot of a hash tag: CRC16 (XMODEM) mod
// 16384, as the Cluster specification defines it.
func slot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// PartKeys returns the keys of part p of sale saleID.
func (s *Store) PartKeys(saleID int64, p int) Keys {
	tag := s.prefix + ":{" + s.parts.tag(saleID, p) + "}:"
	return Keys{Stock: tag + "stock", Claims: tag + "claims", Meta: tag + "meta", Outbox: tag + "outbox", Admitted: tag + "admitted",
		Wait: tag + "wait", Waited: tag + "waited", Moves: tag + "moves", Moved: tag + "moved", Released: tag + "released"}
}

// Parts returns how many parts sale saleID's stock has: remembered (from
// KnowParts, warm-up, or an earlier read), or read from part 0's meta,
// which warm-up writes. Only a count warm-up wrote is remembered: a sale
// Redis does not hold, or one warmed before sales had parts, reads as 1
// and is asked again next time.
func (s *Store) Parts(ctx context.Context, saleID int64) (int, error) {
	s.parts.mu.Lock()
	n, ok := s.parts.count[saleID]
	s.parts.mu.Unlock()
	if ok {
		return n, nil
	}
	v, err := s.rdb.HGet(ctx, s.SaleKeys(saleID).Meta, "parts").Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read parts of sale %d: %w", saleID, err)
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("sale %d: malformed parts %q", saleID, v)
	}
	s.rememberParts(saleID, n)
	return n, nil
}

// KnowParts tells s that sale saleID's stock has n parts (the sale's
// stock_segments, from the database), so it never has to read Redis for
// it: callers that hold the sale say so before acting on it.
func (s *Store) KnowParts(saleID int64, n int) { s.rememberParts(saleID, n) }

func (s *Store) rememberParts(saleID int64, n int) {
	s.parts.mu.Lock()
	s.parts.count[saleID] = max(n, 1)
	s.parts.mu.Unlock()
}

// partOf is the part buyer userID belongs to on a sale of n parts.
func partOf(userID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(userID))
	return int(h.Sum32() % uint32(n))
}

// userKeys are the keys of the part userID belongs to on saleID, and
// the number of parts.
func (s *Store) userKeys(ctx context.Context, saleID int64, userID string) (Keys, int, error) {
	n, err := s.Parts(ctx, saleID)
	if err != nil {
		return Keys{}, 0, err
	}
	return s.PartKeys(saleID, partOf(userID, n)), n, nil
}

// allKeys are the keys of every part of saleID.
func (s *Store) allKeys(ctx context.Context, saleID int64) ([]Keys, error) {
	n, err := s.Parts(ctx, saleID)
	if err != nil {
		return nil, err
	}
	ks := make([]Keys, n)
	for p := range ks {
		ks[p] = s.PartKeys(saleID, p)
	}
	return ks, nil
}
