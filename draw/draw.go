// Package draw is the lobby's draw (docs/API.md "Fair start"): a seed
// committed by its SHA-256 when the lobby opens, and ranks that anyone can
// recompute from the revealed seed and the published entries. An entry's
// rank is its place when all entries are sorted by SHA-256(seed ‖ entry),
// ascending; the order in which entries arrived plays no part.
//
// It is pure computation: the workflow that runs the draw, the API that
// publishes it and `seckill draw verify` all rank with these functions.
package draw

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// SeedSize and EntrySize are the byte lengths of a seed and of an entry
// (an entry's hex form is 32 characters).
const (
	SeedSize  = 32
	EntrySize = 16
)

// NewSeed returns a fresh random seed.
func NewSeed() []byte { return random(SeedSize) }

// NewEntry returns a fresh random entry token.
func NewEntry() []byte { return random(EntrySize) }

func random(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return b
}

// Commitment is the hex SHA-256 of seed: published when the lobby opens,
// it binds the draw to a seed chosen before any entry was seen.
func Commitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// Key is SHA-256(seed ‖ entry): entries are ranked by it, ascending.
func Key(seed, entry []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(seed)
	h.Write(entry)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// Ranked is an entry with its rank (1 is first).
type Ranked struct {
	Entry []byte
	Rank  int
	// Fits: the draw admits it (Fitter), set by the caller that knows
	// the entry's variant and quantity; Rank leaves it false.
	Fits bool
}

// Rank ranks entries under seed: the result is in rank order, ranks
// 1..len(entries). Entries must be distinct, each EntrySize bytes (as
// ParseEntry and NewEntry make them). A result's Entry is the caller's
// slice, not a copy.
func Rank(seed []byte, entries [][]byte) []Ranked {
	order := RankOrder(seed, len(entries), func(i int) []byte { return entries[i] })
	out := make([]Ranked, len(order))
	for r, i := range order {
		out[r] = Ranked{Entry: entries[i], Rank: r + 1}
	}
	return out
}

// RankOrder is Rank for callers that hold many entries in their own form (the
// draw's million lines): entry(i) is the i-th of n entries, and
// RankOrder(...)[r] is the index of the entry ranked r+1. It holds 36 bytes
// an entry while it sorts, and returns 4.
func RankOrder(seed []byte, n int, entry func(i int) []byte) []uint32 {
	ks := make([]indexed, n)
	for i := range ks {
		ks[i] = indexed{key: Key(seed, entry(i)), at: uint32(i)}
	}
	slices.SortFunc(ks, func(a, b indexed) int {
		if c := bytes.Compare(a.key[:], b.key[:]); c != 0 {
			return c // order's first step, without fetching the entries
		}
		return order(a.key, b.key, entry(int(a.at)), entry(int(b.at)))
	})
	out := make([]uint32, n)
	for r := range ks {
		out[r] = ks[r].at
	}
	return out
}

// indexed is an entry's key and the entry's index: what RankOrder sorts.
type indexed struct {
	key [sha256.Size]byte
	at  uint32
}

// keyed is an entry with its key: what the rank order compares.
type keyed struct {
	key   [sha256.Size]byte
	entry [EntrySize]byte
}

func keyOf(seed []byte, e [EntrySize]byte) keyed { return keyed{Key(seed, e[:]), e} }

// compare and order are the rank order, its one definition (Rank, RankOrder
// and Verify all use it): by key, then (never in practice) by entry.
func compare(a, b keyed) int { return order(a.key, b.key, a.entry[:], b.entry[:]) }

func order(ka, kb [sha256.Size]byte, a, b []byte) int {
	if c := bytes.Compare(ka[:], kb[:]); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}

// ParseEntry parses an entry's hex form.
func ParseEntry(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != EntrySize {
		return nil, fmt.Errorf("entry %q is not %d hex characters", s, 2*EntrySize)
	}
	return b, nil
}

// ParseSeed parses a seed's hex form.
func ParseSeed(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != SeedSize {
		return nil, fmt.Errorf("seed %q is not %d hex characters", s, 2*SeedSize)
	}
	return b, nil
}

// Fitter decides, entry by entry in rank order, which entries the draw
// admits (docs/API.md "Fair start"): an entry fits when its variant still
// has its quantity, the variant's stock at the draw less the quantities
// of the better-ranked entries of that variant admitted before it. An
// entry that does not fit waits in its variant's line, and the units left
// are held for it there (docs/API.md "Waitlist": held for the line's
// head, not remaining), so no later entry of that variant fits: each
// variant admits the longest run of its entries, in rank order, whose
// quantities add up to at most its stock. A better rank is never worse
// off than a later one of the same variant, and the admitted set is one
// running sum per variant, which anyone can recompute.
type Fitter struct {
	left    map[string]int64
	blocked map[string]bool
}

// NewFitter returns a Fitter for the given stock per sku; a sku it is not
// given has no units.
func NewFitter(stock map[string]int64) *Fitter {
	left := make(map[string]int64, len(stock))
	for sku, n := range stock {
		left[sku] = n
	}
	return &Fitter{left: left, blocked: make(map[string]bool)}
}

// Fit reports whether the next entry in rank order, asking for quantity
// units of sku, is admitted, and takes its units if so.
func (f *Fitter) Fit(sku string, quantity int) bool {
	if f.blocked[sku] || quantity < 1 || int64(quantity) > f.left[sku] {
		f.blocked[sku] = true
		return false
	}
	f.left[sku] -= int64(quantity)
	return true
}
