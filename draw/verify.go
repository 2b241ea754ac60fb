package draw

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Published is a draw as the API publishes it (docs/API.md "Fair start"),
// taken as published: nothing in it is trusted. Verify checks it.
type Published struct {
	SaleID string
	// SaleCommitment is the commitment the sale object shows (from the
	// lobby's opening on); "" when not known.
	SaleCommitment string
	// Commitment, Seed, DeclaredEntries and Admitted are the draw's
	// GET /api/v1/sales/{id}/draw: "commitment", "seed", "entries" and
	// "admitted" (K).
	Commitment      string
	Seed            string
	DeclaredEntries int64
	Admitted        int64
	// EndedAtRank is the draw's "ended_at_rank": the sale ended during the
	// draw, which admitted the ranks before it only (0: not declared).
	EndedAtRank int64
	// SaleEndsAt is the sale object's ends_at and ReadAt when it was read
	// (zero: not known): a cut by the end is believed only after it.
	SaleEndsAt, ReadAt time.Time
	// Taken is the sale object's stock.sold + stock.locked: the units
	// orders hold (-1: not known). A sale its end cut in the draw took no
	// claim after it, so these are at most the ranks admitted.
	Taken int64
	// Entries is GET /api/v1/sales/{id}/draw/entries, in its order.
	Entries *EntryList
	// Stock is the sale's stock.total.
	Stock int64
	// Orders are the orders the draw admitted, as listed (GET
	// /api/v1/sales/{id}/draw/orders); nil when the list could not be
	// read (OrdersUnavailable says why): their checks are then skipped.
	Orders            []Order
	OrdersUnavailable string
}

// Order is one admitted order as listed. Rank is the rank the list
// states: never trusted, only compared with the recomputed one (0: none
// stated).
type Order struct {
	ID    string
	Entry string
	Rank  int64
}

// maxProblems bounds the problems a check lists; the rest are counted.
const maxProblems = 10

// EntryList is a published entry list, read one line at a time: a
// well-formed entry is kept as its 16 bytes (a million entries take
// 16 MB), a malformed line is counted and the first few are named.
type EntryList struct {
	entries    [][EntrySize]byte // the well-formed ones, in published order
	lines      int64
	malformed  []string
	nMalformed int64
	unsorted   []string // where an entry is smaller than the one before
	nUnsorted  int64
}

// NewEntryList returns an empty list with room for n entries (a hint).
func NewEntryList(n int) *EntryList {
	return &EntryList{entries: make([][EntrySize]byte, 0, max(n, 0))}
}

// EntriesOf is the list of the given lines.
func EntriesOf(lines ...string) *EntryList {
	l := NewEntryList(len(lines))
	for _, s := range lines {
		l.Add(s)
	}
	return l
}

// ReadEntries reads a published entry list, one entry per line, with
// memory for the entries only: the body is never held whole, and a line
// is decoded in place.
func ReadEntries(r io.Reader, sizeHint int) (*EntryList, error) {
	l := NewEntryList(sizeHint)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the entries after line %d: %w", l.lines, err)
	}
	return l, nil
}

// Add takes the next published line. An entry is well-formed when it is
// exactly what the API publishes: 32 lowercase hex characters.
func (l *EntryList) Add(line string) { l.add([]byte(line)) }

func (l *EntryList) add(line []byte) {
	l.lines++
	line = bytes.TrimSuffix(line, []byte("\r"))
	var e [EntrySize]byte
	if len(line) != 2*EntrySize || !lowerHex(line) {
		l.nMalformed++
		if len(l.malformed) < maxProblems {
			l.malformed = append(l.malformed, fmt.Sprintf("line %d: %q is not %d lowercase hex characters", l.lines, clip(string(line)), 2*EntrySize))
		}
		return
	}
	_, _ = hex.Decode(e[:], line)
	if n := len(l.entries); n > 0 && bytes.Compare(e[:], l.entries[n-1][:]) < 0 {
		l.nUnsorted++
		if len(l.unsorted) < maxProblems {
			l.unsorted = append(l.unsorted, fmt.Sprintf("line %d: %s comes after %s", l.lines, line, hex.EncodeToString(l.entries[n-1][:])))
		}
	}
	l.entries = append(l.entries, e)
}

// Len is the number of well-formed entries.
func (l *EntryList) Len() int { return len(l.entries) }

// Lines is the number of lines read.
func (l *EntryList) Lines() int64 { return l.lines }

func lowerHex(s []byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Check is one check of a draw's verification.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Skipped: the check could not be made (Problems say why); it does
	// not fail the report.
	Skipped  bool     `json:"skipped,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// Report is the verification of one published draw.
type Report struct {
	SaleID   string `json:"sale_id"`
	Entries  int64  `json:"entries"`  // lines published
	Admitted int64  `json:"admitted"` // K recomputed: min(stock, entries), or the ranks before the end's cut
	Stock    int64  `json:"stock"`
	// EndedAtRank: the rank where the draw declares the sale's end cut
	// it, when the cut checks out (K is then the ranks before it).
	EndedAtRank int64   `json:"ended_at_rank,omitempty"`
	Orders      int     `json:"orders"`
	Checks      []Check `json:"checks"`
}

// OK reports whether no check failed (skipped ones do not fail).
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK && !c.Skipped {
			return false
		}
	}
	return true
}

// Failed lists the names of the checks that failed.
func (r *Report) Failed() []string {
	var names []string
	for _, c := range r.Checks {
		if !c.OK && !c.Skipped {
			names = append(names, c.Name)
		}
	}
	return names
}

// String renders the report for people, as `seckill audit` does.
func (r *Report) String() string {
	var b strings.Builder
	cut := ""
	if r.EndedAtRank > 0 {
		cut = fmt.Sprintf(" up to the sale's end, declared at rank %d,", r.EndedAtRank)
	}
	fmt.Fprintf(&b, "draw of sale %s: %d entries, stock %d, so%s %d admitted (ranks 1..%d); %d orders listed\n",
		r.SaleID, r.Entries, r.Stock, cut, r.Admitted, r.Admitted, r.Orders)
	for _, c := range r.Checks {
		mark := "ok  "
		switch {
		case c.Skipped:
			mark = "skip"
		case !c.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %s\n", mark, c.Name)
		for _, p := range c.Problems {
			fmt.Fprintf(&b, "         - %s\n", p)
		}
	}
	if r.OK() {
		fmt.Fprintf(&b, "the draw checks out: anyone can recompute these ranks from the seed and the entries\n")
	} else {
		fmt.Fprintf(&b, "the draw does NOT check out: %d of %d checks failed\n", len(r.Failed()), len(r.Checks))
	}
	return b.String()
}

// problems collects a check's problems, naming the first maxProblems.
type problems struct {
	list []string
	n    int64
}

func (p *problems) add(format string, args ...any) {
	p.n++
	if len(p.list) < maxProblems {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problems) check(name string) Check {
	list := p.list
	if p.n > int64(len(list)) {
		list = append(list, fmt.Sprintf("... and %d more", p.n-int64(len(list))))
	}
	return Check{Name: name, OK: p.n == 0, Problems: list}
}

// Check names, in the report's order.
const (
	CheckCommitment = "the seed's SHA-256 is the commitment published when the lobby opened"
	CheckWellFormed = "every entry is well-formed (32 lowercase hex characters)"
	CheckDistinct   = "the entries are distinct"
	CheckSorted     = "the entries are published sorted ascending"
	CheckCount      = "the number of entries is the one declared"
	CheckEnded      = "a cut by the sale's end falls within 1..min(stock, entries), after the sale's ends_at, and nobody got the units it refused"
	CheckAdmitted   = "the number admitted is min(stock, entries), or the ranks before the end's cut"
	CheckInDraw     = "every admitted order's entry is an entry of the draw"
	CheckTopK       = "every admitted order's entry ranks within 1..K"
	CheckEachRank   = "each rank 1..K has exactly one order (none twice, none skipped)"
	// CheckIDs replaced "admitted in rank order (ascending order_id)":
	// order ids are minted on several hosts' clocks, so their order says
	// nothing a verifier can hold the draw to; the ranks 1..K each
	// holding one order (CheckEachRank) is what the draw promised.
	CheckIDs    = "every listed order has an order id of its own (a positive integer, listed once)"
	CheckStated = "the ranks the order list states are the recomputed ones"
)

// Verify recomputes the draw from its seed and entries, as anyone can,
// and checks every published piece against it; each check is reported
// separately, in the order of the Check names. Memory beyond the entries
// is O(K) (the admitted ones' keys), not O(entries).
func Verify(p Published) Report {
	if p.Entries == nil {
		p.Entries = NewEntryList(0)
	}
	k := min(max(p.Stock, 0), int64(len(p.Entries.entries)))
	ended := checkEnded(p, k)
	cut := ended.OK && p.EndedAtRank > 0
	if cut {
		k = p.EndedAtRank - 1
	}
	rep := Report{SaleID: p.SaleID, Entries: p.Entries.lines, Admitted: k, Stock: p.Stock, Orders: len(p.Orders)}
	if cut {
		rep.EndedAtRank = p.EndedAtRank
	}
	seed, commitment := checkSeed(p)
	rep.Checks = append(rep.Checks, commitment)
	rep.Checks = append(rep.Checks, checkEntries(p)...)
	rep.Checks = append(rep.Checks, ended, checkAdmitted(p, k, cut))
	rep.Checks = append(rep.Checks, checkOrders(p, seed, k)...)
	return rep
}

// checkSeed checks the revealed seed against the commitment the draw and
// the sale published; it returns the seed (nil when it cannot be read).
func checkSeed(p Published) ([]byte, Check) {
	var pc problems
	seed, err := ParseSeed(p.Seed)
	if err != nil {
		pc.add("%v", err)
	} else if got := Commitment(seed); got != strings.ToLower(p.Commitment) {
		pc.add("SHA-256(seed) is %s, but the commitment published is %q", got, p.Commitment)
	}
	if p.SaleCommitment != "" && !strings.EqualFold(p.SaleCommitment, p.Commitment) {
		pc.add("the sale showed commitment %s, but the draw publishes %s", p.SaleCommitment, p.Commitment)
	}
	return seed, pc.check(CheckCommitment)
}

// checkEntries checks the published entry list: well-formed, distinct,
// sorted, and as many as the draw declares.
func checkEntries(p Published) []Check {
	l := p.Entries
	var pn problems
	if p.DeclaredEntries != l.lines {
		pn.add("the draw declares %d entries, but %d were published", p.DeclaredEntries, l.lines)
	}
	return []Check{
		(&problems{list: l.malformed, n: l.nMalformed}).check(CheckWellFormed),
		distinct(l.entries, l.nUnsorted == 0).check(CheckDistinct),
		(&problems{list: l.unsorted, n: l.nUnsorted}).check(CheckSorted),
		pn.check(CheckCount),
	}
}

// checkEnded checks a cut the draw declares (the sale ended while it
// ran): a rank within 1..full (min(stock, entries)), declared for a sale
// whose ends_at had passed when it was read, whose orders hold no more
// units than the ranks before the cut (the refused units went to nobody).
// So a cut cannot favour anyone: every rank from it on is refused alike,
// and no claim after the draw got their units.
func checkEnded(p Published, full int64) Check {
	var pe problems
	switch r := p.EndedAtRank; {
	case r == 0:
	case r < 0 || r > full:
		pe.add("the draw declares the sale's end cut it at rank %d, outside 1..%d", r, full)
	case !p.SaleEndsAt.IsZero() && !p.ReadAt.IsZero() && p.ReadAt.Before(p.SaleEndsAt):
		pe.add("the draw declares the sale's end cut it at rank %d, but the sale ends at %s, after it was read (%s)",
			r, p.SaleEndsAt.UTC().Format(time.RFC3339), p.ReadAt.UTC().Format(time.RFC3339))
	case p.Taken > r-1:
		// The units the cut refused went to someone: to claims after the
		// draw, which a sale that had ended could not take.
		pe.add("the draw declares the sale's end cut it at rank %d, but orders hold %d units (sold + locked), more than the %d ranks before it",
			r, p.Taken, r-1)
	}
	return pe.check(CheckEnded)
}

// checkAdmitted checks the number admitted the draw declares against K
// (cut: K is the ranks before the end's cut).
func checkAdmitted(p Published, k int64, cut bool) Check {
	var pk problems
	if p.Admitted != k {
		if cut {
			pk.add("the draw declares %d admitted, but the ranks before the end's cut at rank %d are %d", p.Admitted, p.EndedAtRank, k)
		} else {
			pk.add("the draw declares %d admitted, but min(stock %d, entries %d) is %d", p.Admitted, p.Stock, len(p.Entries.entries), k)
		}
	}
	return pk.check(CheckAdmitted)
}

// orderChecks are the checks of the listed orders, in the report's order.
var orderChecks = []string{CheckInDraw, CheckTopK, CheckEachRank, CheckIDs, CheckStated}

// checkOrders holds the listed orders to the recomputed ranks 1..K: each
// an entry of the draw, within 1..K, one per rank, with an id of its own,
// at the rank the list states. Skipped when the list was not read.
func checkOrders(p Published, seed []byte, k int64) []Check {
	var checks []Check
	switch {
	case p.Orders == nil && p.OrdersUnavailable != "":
		for _, name := range orderChecks {
			checks = append(checks, Check{Name: name, Skipped: true, Problems: []string{"the order list was not read: " + p.OrdersUnavailable}})
		}
		return checks
	case seed == nil:
		for _, name := range orderChecks {
			checks = append(checks, Check{Name: name, Problems: []string{"no ranks without a valid seed"}})
		}
		return checks
	}
	entries := p.Entries.entries
	winners := topK(seed, entries, int(k)) // rank i+1 is winners[i]
	rankOf := make(map[[EntrySize]byte]int64, len(winners))
	for i, w := range winners {
		rankOf[w.entry] = int64(i + 1)
	}
	var inDraw, inTopK, eachRank, ids, stated problems
	counts := make([][]string, k) // the order ids of each rank
	seen := make(map[int64]bool, len(p.Orders))
	var slowRanks int // ranks past K computed by a pass over all entries
	for _, o := range p.Orders {
		switch id, err := strconv.ParseInt(o.ID, 10, 64); {
		case err != nil || id <= 0:
			ids.add("order %q: not an order id", o.ID)
		case seen[id]:
			ids.add("order %s is listed twice", o.ID)
		default:
			seen[id] = true
		}
		e, err := ParseEntry(o.Entry)
		if err != nil {
			inDraw.add("order %s: %v", o.ID, err)
			inTopK.add("order %s: no entry", o.ID)
			continue
		}
		ea := [EntrySize]byte(e)
		if rank := rankOf[ea]; rank != 0 {
			counts[rank-1] = append(counts[rank-1], o.ID)
			if o.Rank != 0 && o.Rank != rank {
				stated.add("order %s: listed with rank %d, recomputed %d", o.ID, o.Rank, rank)
			}
			continue
		}
		// Not a winner: find whether it is an entry at all, and its rank
		// (one pass over the entries each, for the first few).
		found, r := false, int64(0)
		if slowRanks < maxProblems {
			slowRanks++
			found, r = rankPastK(seed, entries, ea)
		} else {
			found = contains(entries, ea, p.Entries.nUnsorted == 0)
		}
		switch {
		case !found:
			inDraw.add("order %s: entry %s is not in the published entries", o.ID, o.Entry)
			inTopK.add("order %s: entry %s has no rank (not an entry)", o.ID, o.Entry)
		case r > 0:
			inTopK.add("order %s: entry %s has rank %d, past K = %d", o.ID, o.Entry, r, k)
		default:
			inTopK.add("order %s: entry %s ranks past K = %d", o.ID, o.Entry, k)
		}
		if o.Rank != 0 && r > 0 && o.Rank != r {
			stated.add("order %s: listed with rank %d, recomputed %d", o.ID, o.Rank, r)
		}
	}
	for i, ids := range counts {
		switch len(ids) {
		case 1:
		case 0:
			eachRank.add("rank %d (entry %s) has no order", i+1, hex.EncodeToString(winners[i].entry[:]))
		default:
			eachRank.add("rank %d (entry %s) has %d orders: %s", i+1, hex.EncodeToString(winners[i].entry[:]), len(ids), strings.Join(ids, ", "))
		}
	}
	if int64(len(p.Orders)) != k {
		eachRank.add("%d orders are listed, but K is %d", len(p.Orders), k)
	}
	return []Check{inDraw.check(CheckInDraw), inTopK.check(CheckTopK), eachRank.check(CheckEachRank), ids.check(CheckIDs), stated.check(CheckStated)}
}

// distinct finds the repeated entries: along the list when it is sorted,
// else in a sorted copy.
func distinct(entries [][EntrySize]byte, sorted bool) *problems {
	var p problems
	list := entries
	if !sorted {
		list = slices.Clone(entries)
		slices.SortFunc(list, func(a, b [EntrySize]byte) int { return bytes.Compare(a[:], b[:]) })
	}
	for i := 1; i < len(list); i++ {
		if list[i] == list[i-1] && (i == 1 || list[i-1] != list[i-2]) {
			n := 2
			for i+n-1 < len(list) && list[i+n-1] == list[i] {
				n++
			}
			p.add("%s is published %d times", hex.EncodeToString(list[i][:]), n)
		}
	}
	return &p
}

// contains reports whether e is in entries (a binary search when they
// are sorted).
func contains(entries [][EntrySize]byte, e [EntrySize]byte, sorted bool) bool {
	if sorted {
		_, ok := slices.BinarySearchFunc(entries, e, func(a, b [EntrySize]byte) int { return bytes.Compare(a[:], b[:]) })
		return ok
	}
	return slices.Contains(entries, e)
}

// rankPastK reports whether e is in entries and, if so, its rank: one
// plus the number of entries ranked before it.
func rankPastK(seed []byte, entries [][EntrySize]byte, e [EntrySize]byte) (bool, int64) {
	found := false
	key := keyOf(seed, e)
	var before int64
	for _, x := range entries {
		if x == e {
			found = true
			continue
		}
		if compare(keyOf(seed, x), key) < 0 {
			before++
		}
	}
	if !found {
		return false, 0
	}
	return true, before + 1
}

// maxHeap keeps the k smallest keys seen, the largest on top.
type maxHeap []keyed

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return compare(h[j], h[i]) < 0 }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(keyed)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// topK is the first k of Rank(seed, entries), in rank order, with memory
// for k keys only.
func topK(seed []byte, entries [][EntrySize]byte, k int) []keyed {
	if k <= 0 {
		return nil
	}
	h := make(maxHeap, 0, min(k, len(entries)))
	for _, e := range entries {
		kd := keyOf(seed, e)
		if h.Len() < k {
			heap.Push(&h, kd)
		} else if compare(kd, h[0]) < 0 {
			h[0] = kd
			heap.Fix(&h, 0)
		}
	}
	out := []keyed(h)
	sortKeyed(out)
	return out
}
