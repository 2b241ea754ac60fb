package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// A sale's stock in segments (docs/API.md "stock_segments", docs/DESIGN.md
// "Where a released unit goes"). Segment 0 holds the keys of a sale of one
// segment, under the hash tag {s<id>}; segment p > 0 has the same keys under a
// tag of its own, {s<id>.<p>}, chosen so that no two segments of a sale share
// a Cluster hash slot. Every segment is a complete small sale: stock,
// claims, admissions, outbox, waitlist. A buyer belongs to one segment
// (segmentOf), so one script still sees every claim of theirs. Units move
// between segments by a protocol of single-segment scripts (moves.go), recorded
// while in flight and counted once (readHoldings), so the sum of the
// segments never grows.

// segments remembers, per sale, how many segments it has (fixed when the sale
// is created) and the hash tags of its segments.
type segments struct {
	mu    sync.Mutex
	count map[int64]int
	tags  map[int64][]string
	skus  map[int64][]string // the sale's variants, in its order
}

func newSegments() *segments {
	return &segments{count: map[int64]int{}, tags: map[int64][]string{}, skus: map[int64][]string{}}
}

// tag is the hash tag (without braces) of segment p of saleID. A tag whose
// slot an earlier segment holds gets a suffix (~1, ~2, ...) until it has a
// slot of its own, so the tags are the same in every process.
func (ps *segments) tag(saleID int64, p int) string {
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

// SegmentKeys returns the keys of segment p of sale saleID.
func (s *Store) SegmentKeys(saleID int64, p int) Keys {
	tag := s.prefix + ":{" + s.segments.tag(saleID, p) + "}:"
	return Keys{Stock: tag + "stock", Claims: tag + "claims", Meta: tag + "meta", Outbox: tag + "outbox", Admitted: tag + "admitted",
		Wait: tag + "wait", Waited: tag + "waited", Lines: tag + "lines", Moves: tag + "moves", Moved: tag + "moved", Released: tag + "released",
		Units: tag + "units", Held: tag + "held"}
}

// Segments returns how many segments sale saleID's stock has: remembered (from
// KnowSegments, warm-up, or an earlier read), or read from segment 0's meta,
// which warm-up writes. Only a count warm-up wrote is remembered: a sale
// Redis does not hold, or one warmed before sales had segments, reads as 1
// and is asked again next time.
func (s *Store) Segments(ctx context.Context, saleID int64) (int, error) {
	s.segments.mu.Lock()
	n, ok := s.segments.count[saleID]
	s.segments.mu.Unlock()
	if ok {
		return n, nil
	}
	v, err := s.rdb.HGet(ctx, s.SaleKeys(saleID).Meta, "parts").Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read segments of sale %d: %w", saleID, err)
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("sale %d: malformed segments %q", saleID, v)
	}
	s.rememberSegments(saleID, n)
	return n, nil
}

// KnowSegments tells s that sale saleID's stock has n segments (the sale's
// stock_segments, from the database), so it never has to read Redis for
// it: callers that hold the sale say so before acting on it.
func (s *Store) KnowSegments(saleID int64, n int) { s.rememberSegments(saleID, n) }

func (s *Store) rememberSegments(saleID int64, n int) {
	s.segments.mu.Lock()
	s.segments.count[saleID] = max(n, 1)
	s.segments.mu.Unlock()
}

// SKUs returns the skus of sale saleID's variants, in the sale's order:
// remembered (KnowSKUs, warm-up, an earlier read) or read from segment 0's
// meta, which warm-up writes. A sale Redis does not hold, or one warmed
// before variants, reads as the one variant "default" and is asked again
// next time.
func (s *Store) SKUs(ctx context.Context, saleID int64) ([]string, error) {
	s.segments.mu.Lock()
	skus, ok := s.segments.skus[saleID]
	s.segments.mu.Unlock()
	if ok {
		return skus, nil
	}
	v, err := s.rdb.HGet(ctx, s.SaleKeys(saleID).Meta, "skus").Result()
	if errors.Is(err, redis.Nil) || v == "" {
		return []string{seckill.DefaultSKU}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read variants of sale %d: %w", saleID, err)
	}
	skus = strings.Split(v, ",")
	for _, sku := range skus {
		if !seckill.ValidSKU(sku) {
			return nil, fmt.Errorf("sale %d: malformed variants %q", saleID, v)
		}
	}
	s.KnowSKUs(saleID, skus)
	return skus, nil
}

// KnowSKUs tells s the skus of sale saleID's variants (from the database),
// as KnowSegments does its segments.
func (s *Store) KnowSKUs(saleID int64, skus []string) {
	if len(skus) == 0 {
		return
	}
	s.segments.mu.Lock()
	s.segments.skus[saleID] = slices.Clone(skus)
	s.segments.mu.Unlock()
}

// shapeOf is sale saleID's segments and variants.
func (s *Store) shapeOf(ctx context.Context, saleID int64) (shape, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil {
		return shape{}, err
	}
	skus, err := s.SKUs(ctx, saleID)
	return shape{n: n, skus: skus}, err
}

// segmentOf is the segment buyer userID belongs to on a sale of n segments.
func segmentOf(userID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(userID))
	return int(h.Sum32() % uint32(n))
}

// userKeys are the keys of the segment userID belongs to on saleID, and
// the number of segments.
func (s *Store) userKeys(ctx context.Context, saleID int64, userID string) (Keys, int, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil {
		return Keys{}, 0, err
	}
	return s.SegmentKeys(saleID, segmentOf(userID, n)), n, nil
}

// allKeys are the keys of every segment of saleID.
func (s *Store) allKeys(ctx context.Context, saleID int64) ([]Keys, error) {
	n, err := s.Segments(ctx, saleID)
	if err != nil {
		return nil, err
	}
	ks := make([]Keys, n)
	for p := range ks {
		ks[p] = s.SegmentKeys(saleID, p)
	}
	return ks, nil
}

// Adopt brings sale saleID, if Redis holds it as a sale warmed before
// variants (v3), to the v4 layout (adopt.lua, each segment once): one
// variant, "default", whose claims hold a unit each. It reports how many
// segments it adopted now; 0 for a sale warmed since, or not loaded.
// Safe to repeat and to run beside claims: the script reads and writes in
// one step.
func (s *Store) Adopt(ctx context.Context, saleID int64) (int, error) {
	keys, err := s.allKeys(ctx, saleID)
	if err != nil {
		return 0, err
	}
	adopted := 0
	for _, k := range keys {
		var n int
		err := s.durably(ctx, k.Stock, func(c redis.Cmdable) (bool, error) {
			var err error
			if n, err = adoptScript.Run(ctx, c, []string{k.Meta, k.Claims, k.Units}).Int(); err != nil {
				return false, fmt.Errorf("adopt script: %w", err)
			}
			return n == 1, nil
		})
		if err != nil {
			return adopted, fmt.Errorf("adopt sale %d: %w", saleID, err)
		}
		adopted += n
	}
	return adopted, nil
}
