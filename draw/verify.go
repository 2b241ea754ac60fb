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
	// Stock is the sale's stock.total: the draw's stock of its one
	// variant, "default", when neither Variants nor SaleVariants says
	// more (a sale of one variant).
	Stock int64
	// Variants are the draw's "variants": per variant the units it drew
	// (Stock) and the entries it declares admitted (Admitted, -1: not
	// declared). Nil: not published; SaleVariants' totals are taken.
	Variants []Variant
	// SaleVariants are the sale object's variants, each with its
	// stock.total now (nil: not known): a restock after the draw only
	// adds, so a variant's stock at the draw is at most it.
	SaleVariants []Variant
	// Orders are the orders the draw admitted, as listed (GET
	// /api/v1/sales/{id}/draw/orders); nil when the list could not be
	// read (OrdersUnavailable says why): their checks are then skipped.
	Orders            []Order
	OrdersUnavailable string
	// EntriesRoot and Beacon are the draw's "entries_root" and "beacon"
	// (v4; nil: null). SaleBeacon is the round the sale object showed from
	// the lobby's opening (nil: none, or not known), SaleStartsAt its
	// starts_at (zero: not known): the round must be the first at least
	// beacon.DrawDelay after it.
	EntriesRoot string
	CommittedAt *time.Time // the draw's "committed_at" (nil: not published)
	// DevChainOK accepts a round of the development chain (beacon.Dev,
	// seckill dev's), whose key anyone can derive: without it such a
	// draw fails, since its operator could sign any round.
	DevChainOK bool
	// PinnedRound and PinnedRoot are what the verifier saw before the
	// draw, if they kept them (`--round`, `--root`): the round the sale
	// showed when its lobby opened, the root GET /draw showed when it
	// closed. The draw must publish the same (0, "": not pinned), however
	// the sale reads now.
	PinnedRound  uint64
	PinnedRoot   string
	Beacon       *PublishedBeacon
	SaleBeacon   *PublishedBeacon
	SaleStartsAt time.Time
}

// Order is one admitted order as listed. Rank is the rank the list
// states: never trusted, only compared with the recomputed one (0: none
// stated); so are SKU and Quantity, the item the order is of ("" and 0:
// not stated).
type Order struct {
	ID       string
	Entry    string
	Rank     int64
	SKU      string
	Quantity int
}

// Variant is one variant's figures as published.
type Variant struct {
	SKU      string
	Stock    int64
	Admitted int64
}

// maxProblems bounds the problems a check lists; the rest are counted.
const maxProblems = 10

// EntryList is a published entry list, read one line at a time: a
// well-formed line, `<entry hex> <sku> <quantity>`, is kept as its 16
// bytes and its item in 4 (a million entries take 20 MB), a malformed
// line is counted and the first few are named.
type EntryList struct {
	entries    [][EntrySize]byte // the well-formed ones, in published order
	items      []item            // their items, in the same order
	skus       []string          // the skus items name, by index
	skuIndex   map[string]uint16
	lines      int64
	malformed  []string
	nMalformed int64
	unsorted   []string // where an entry is smaller than the one before
	nUnsorted  int64
	// tree is the compact range of every line read, malformed or not,
	// as the leaves of the entries tree: the root of the published list
	// in O(log n) memory, without keeping the lines.
	tree rootRange
}

// NewEntryList returns an empty list with room for n entries (a hint).
func NewEntryList(n int) *EntryList {
	return &EntryList{entries: make([][EntrySize]byte, 0, max(n, 0)), items: make([]item, 0, max(n, 0)), skuIndex: make(map[string]uint16)}
}

// item is an entry's variant (an index in EntryList.skus) and quantity.
type item struct {
	sku      uint16
	quantity uint16
}

// Most distinct skus and the largest quantity a line may name: a sale
// has at most 100 variants, a buyer at most 100 units.
const (
	maxSKUs     = 100
	maxQuantity = 100
)

// parseItem parses `<sku> <quantity>`: a sku of 1..64 of [A-Za-z0-9._-],
// a quantity 1..100 written as the API writes it (no sign, no leading 0).
// It allocates nothing: sku is part of b.
func parseItem(b []byte) (sku []byte, quantity int, ok bool) {
	sp := bytes.IndexByte(b, ' ')
	if sp < 1 || sp > 64 {
		return nil, 0, false
	}
	for _, c := range b[:sp] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return nil, 0, false
		}
	}
	q := b[sp+1:]
	if len(q) == 0 || len(q) > 3 || q[0] == '0' {
		return nil, 0, false
	}
	n := 0
	for _, c := range q {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		n = 10*n + int(c-'0')
	}
	if n > maxQuantity {
		return nil, 0, false
	}
	return b[:sp], n, true
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
	sc.Split(scanLines)
	for sc.Scan() {
		l.add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the entries after line %d: %w", l.lines, err)
	}
	return l, nil
}

// scanLines is bufio.ScanLines without its dropping of a "\r" before the
// "\n": the entries root commits to each line as published, up to its
// newline, so a "\r" is part of the leaf (add trims it to parse).
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Root is the RFC 6962 root of the lines as they were added, each a leaf
// (without its newline, malformed or not): the entries_root the
// published list must have.
func (l *EntryList) Root() [32]byte { return l.tree.root() }

// Add takes the next published line. A line is well-formed when it is
// exactly what the API publishes: `<entry> <sku> <quantity>`, the entry
// 32 lowercase hex characters, the sku 1..64 of [A-Za-z0-9._-], the
// quantity 1..100 in decimal.
func (l *EntryList) Add(line string) { l.add([]byte(line)) }

func (l *EntryList) add(line []byte) {
	l.lines++
	l.tree.append(line)
	line = bytes.TrimSuffix(line, []byte("\r"))
	var e [EntrySize]byte
	bad := func(why string) {
		l.nMalformed++
		if len(l.malformed) < maxProblems {
			l.malformed = append(l.malformed, fmt.Sprintf("line %d: %q %s", l.lines, clip(string(line)), why))
		}
	}
	if len(line) < 2*EntrySize || !lowerHex(line[:2*EntrySize]) || (len(line) > 2*EntrySize && line[2*EntrySize] != ' ') {
		bad(fmt.Sprintf("does not start with an entry of %d lowercase hex characters", 2*EntrySize))
		return
	}
	sku, quantity, ok := parseItem(line[min(len(line), 2*EntrySize+1):])
	if len(line) <= 2*EntrySize+1 || !ok {
		bad("is not `<entry> <sku> <quantity>` (a sku of [A-Za-z0-9._-], a quantity 1..100)")
		return
	}
	idx, known := l.skuIndex[string(sku)] // no allocation
	if !known {
		if len(l.skus) >= maxSKUs {
			bad(fmt.Sprintf("names a variant past the %d a sale may have", maxSKUs))
			return
		}
		idx = uint16(len(l.skus))
		l.skus = append(l.skus, string(sku))
		l.skuIndex[string(sku)] = idx
	}
	line = line[:2*EntrySize]
	_, _ = hex.Decode(e[:], line)
	if n := len(l.entries); n > 0 && bytes.Compare(e[:], l.entries[n-1][:]) < 0 {
		l.nUnsorted++
		if len(l.unsorted) < maxProblems {
			l.unsorted = append(l.unsorted, fmt.Sprintf("line %d: %s comes after %s", l.lines, line, hex.EncodeToString(l.entries[n-1][:])))
		}
	}
	l.entries = append(l.entries, e)
	l.items = append(l.items, item{sku: idx, quantity: uint16(quantity)})
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
	Admitted int64  `json:"admitted"` // K recomputed: the entries that fit, or those ranked before the end's cut
	Stock    int64  `json:"stock"`    // the units drawn, all variants'
	// Variants: per variant, the stock drawn, the entries for it and the
	// number of them admitted (recomputed).
	Variants []VariantReport `json:"variants"`
	// EndedAtRank: the rank where the draw declares the sale's end cut
	// it, when the cut checks out (K is then the entries that fit ranked
	// before it).
	EndedAtRank int64 `json:"ended_at_rank,omitempty"`
	Orders      int   `json:"orders"`
	// Beacon names the randomness the ranks depend on: the beacon's chain
	// and round (a development chain named as such), or the secret seed
	// alone.
	Beacon string  `json:"beacon,omitempty"`
	Checks []Check `json:"checks"`
}

// VariantReport is one variant of a Report.
type VariantReport struct {
	SKU      string `json:"sku"`
	Stock    int64  `json:"stock"`
	Entries  int64  `json:"entries"`
	Admitted int64  `json:"admitted"`
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
	vs := make([]string, len(r.Variants))
	for i, v := range r.Variants {
		vs[i] = fmt.Sprintf("%s: %d of %d entries for stock %d", v.SKU, v.Admitted, v.Entries, v.Stock)
	}
	fmt.Fprintf(&b, "draw of sale %s: %d entries, stock %d, so%s %d admitted (%s); %d orders listed\n",
		r.SaleID, r.Entries, r.Stock, cut, r.Admitted, strings.Join(vs, "; "), r.Orders)
	if r.Beacon != "" {
		fmt.Fprintf(&b, "  %s\n", r.Beacon)
	}
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
	CheckWellFormed = "every line is well-formed (`<entry: 32 lowercase hex> <sku> <quantity>`)"
	CheckDistinct   = "the entries are distinct"
	CheckSorted     = "the entries are published sorted ascending"
	CheckCount      = "the number of entries is the one declared"
	CheckStock      = "each variant's stock at the draw is published, at most its stock now (a restock only adds), and every entry is for one of them"
	CheckEnded      = "a cut by the sale's end falls at an entry the draw admits, after the sale's ends_at, and nobody got the units it refused"
	CheckAdmitted   = "the number admitted, in all and per variant, is that of the entries that fit (in rank order, while their variant still has their quantity), or of those before the end's cut"
	CheckInDraw     = "every admitted order's entry is an entry of the draw"
	CheckTopK       = "every admitted order's entry is one the draw admits"
	CheckEachRank   = "each entry the draw admits has exactly one order (none twice, none skipped)"
	// CheckIDs replaced "admitted in rank order (ascending order_id)":
	// order ids are minted on several hosts' clocks, so their order says
	// nothing a verifier can hold the draw to; each admitted entry
	// holding one order (CheckEachRank) is what the draw promised.
	CheckIDs    = "every listed order has an order id of its own (a positive integer, listed once)"
	CheckStated = "the ranks the order list states are the recomputed ones"
	CheckItems  = "every admitted order is for its entry's variant and quantity"
)

// fit is an entry the draw admits, recomputed: its key, its rank among
// all entries and its item.
type fit struct {
	keyed
	rank int64
	item item
}

// Verify recomputes the draw from its seed, its entries and each
// variant's stock, as anyone can, and checks every published piece
// against it; each check is reported separately, in the order of the
// Check names. An entry is admitted when, in rank order, its variant
// still has its quantity (Fitter): per variant, the longest run of its
// entries in rank order whose quantities add up to at most its stock.
// Memory beyond the entries is O(units) (each variant's best-ranked
// entries, at most its stock of them), not O(entries).
func Verify(p Published) Report {
	if p.Entries == nil {
		p.Entries = NewEntryList(0)
	}
	l := p.Entries
	stock, stockCheck := drawStock(p)
	secret, commitment := checkSeed(p)
	seed, beacon, note := beaconChecks(p, secret)
	var fits []fit // in rank order
	if seed != nil {
		fits = fitting(seed, l, stock)
	}
	ended := checkEnded(p, fits, seed != nil)
	cut := ended.OK && p.EndedAtRank > 0
	k := fits
	if cut {
		k = fits[:countBefore(fits, p.EndedAtRank)]
	}
	rep := Report{SaleID: p.SaleID, Entries: l.lines, Admitted: int64(len(k)), Orders: len(p.Orders), Beacon: note}
	if cut {
		rep.EndedAtRank = p.EndedAtRank
	}
	perSKU := make(map[string]*VariantReport)
	for _, v := range stock.order {
		rep.Stock += stock.units[v]
		rep.Variants = append(rep.Variants, VariantReport{SKU: v, Stock: stock.units[v]})
	}
	for i := range rep.Variants {
		perSKU[rep.Variants[i].SKU] = &rep.Variants[i]
	}
	for _, it := range l.items {
		if v := perSKU[l.skus[it.sku]]; v != nil {
			v.Entries++
		}
	}
	for _, f := range k {
		perSKU[l.skus[f.item.sku]].Admitted++
	}
	rep.Checks = append(rep.Checks, commitment)
	rep.Checks = append(rep.Checks, beacon...)
	rep.Checks = append(rep.Checks, checkEntries(p)...)
	rep.Checks = append(rep.Checks, stockCheck, ended, checkAdmitted(p, rep, cut))
	rep.Checks = append(rep.Checks, checkOrders(p, seed, k)...)
	return rep
}

// stocks are the units drawn per sku, with the skus in the sale's order.
type stocks struct {
	units map[string]int64
	order []string
}

// drawStock is each variant's stock at the draw: the draw's published
// variants; else the sale's (a restock after the draw would show), else
// the sale's stock as one variant "default". It is checked against the
// sale's variants now and the skus the entries name.
func drawStock(p Published) (stocks, Check) {
	var pc problems
	s := stocks{units: make(map[string]int64)}
	from := p.Variants
	switch {
	case len(from) == 0 && len(p.SaleVariants) > 0:
		from = p.SaleVariants
		pc.add("the draw does not publish its variants' stock: the sale's stock now is taken for it")
	case len(from) == 0:
		from = []Variant{{SKU: "default", Stock: p.Stock}}
	}
	for _, v := range from {
		if _, dup := s.units[v.SKU]; dup {
			pc.add("variant %q is published twice", v.SKU)
			continue
		}
		if v.Stock < 0 {
			pc.add("variant %q: a stock of %d", v.SKU, v.Stock)
		}
		s.units[v.SKU] = max(v.Stock, 0)
		s.order = append(s.order, v.SKU)
	}
	if len(p.Variants) > 0 && len(p.SaleVariants) > 0 {
		now := make(map[string]int64, len(p.SaleVariants))
		for _, v := range p.SaleVariants {
			now[v.SKU] = v.Stock
		}
		for _, v := range p.Variants {
			switch n, ok := now[v.SKU]; {
			case !ok:
				pc.add("the draw gave variant %q, which the sale does not have", v.SKU)
			case v.Stock > n:
				pc.add("the draw gave %d units of variant %q, but the sale has %d in all now (a restock only adds)", v.Stock, v.SKU, n)
			}
		}
		for sku := range now {
			if _, ok := s.units[sku]; !ok {
				pc.add("the draw does not publish the sale's variant %q", sku)
			}
		}
	}
	l := p.Entries
	counts := make([]int64, len(l.skus))
	for _, it := range l.items {
		counts[it.sku]++
	}
	for i, sku := range l.skus {
		if _, ok := s.units[sku]; !ok {
			pc.add("%d entries are for variant %q, which the draw does not have", counts[i], sku)
		}
	}
	return s, pc.check(CheckStock)
}

// fitting is the entries the draw admits, in rank order: per variant, a
// heap keeps its best-ranked entries, at most its stock of them (each
// asks for at least one unit, so no later one can fit), then they are
// taken in rank order while the variant still has their quantity; their
// ranks among all entries are counted in a second pass.
func fitting(seed []byte, l *EntryList, stock stocks) []fit {
	heaps := make([]*maxHeap, len(l.skus))
	bound := make([]int, len(l.skus))
	for i, sku := range l.skus {
		bound[i] = int(min(stock.units[sku], int64(len(l.entries))))
		h := make(maxHeap, 0)
		heaps[i] = &h
	}
	byRank := func(a, b fit) int { return compare(a.keyed, b.keyed) }
	for i, e := range l.entries {
		it := l.items[i]
		h, k := heaps[it.sku], bound[it.sku]
		if k == 0 {
			continue
		}
		f := fit{keyed: keyOf(seed, e), item: it}
		if h.Len() < k {
			heap.Push(h, f)
		} else if byRank(f, (*h)[0]) < 0 {
			(*h)[0] = f
			heap.Fix(h, 0)
		}
	}
	var fits []fit
	for i, h := range heaps {
		best := []fit(*h)
		slices.SortFunc(best, byRank)
		left := stock.units[l.skus[i]]
		for _, f := range best {
			if int64(f.item.quantity) > left {
				break
			}
			left -= int64(f.item.quantity)
			fits = append(fits, f)
		}
	}
	slices.SortFunc(fits, byRank)
	// rank = 1 + the entries ranked before it: each entry counts for
	// every fit after it.
	before := make([]int64, len(fits)+1)
	for _, e := range l.entries {
		kd := keyOf(seed, e)
		i, _ := slices.BinarySearchFunc(fits, kd, func(f fit, k keyed) int { return compare(f.keyed, k) })
		if i < len(fits) && fits[i].entry == e {
			i++ // itself
		}
		before[i]++
	}
	var n int64
	for i := range fits {
		n += before[i]
		fits[i].rank = n + 1
	}
	return fits
}

// countBefore is the number of fits ranked before rank r.
func countBefore(fits []fit, r int64) int {
	n, _ := slices.BinarySearchFunc(fits, r, func(f fit, r int64) int { return cmpInt(f.rank, r) })
	return n
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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
// ran): the rank of an entry the draw admits, declared for a sale whose
// ends_at had passed when it was read, whose orders hold no more units
// than the entries before the cut asked for (the refused units went to
// nobody). So a cut cannot favour anyone: every entry from it on is
// refused alike, and no claim after the draw got their units.
func checkEnded(p Published, fits []fit, ranked bool) Check {
	var pe problems
	r := p.EndedAtRank
	if r == 0 {
		return pe.check(CheckEnded)
	}
	n := countBefore(fits, r)
	switch {
	case !ranked:
		pe.add("the draw declares the sale's end cut it at rank %d, but there are no ranks without a valid seed", r)
	case n == len(fits) || fits[n].rank != r:
		pe.add("the draw declares the sale's end cut it at rank %d, which is not the rank of an entry the draw admits", r)
	case !p.SaleEndsAt.IsZero() && !p.ReadAt.IsZero() && p.ReadAt.Before(p.SaleEndsAt):
		pe.add("the draw declares the sale's end cut it at rank %d, but the sale ends at %s, after it was read (%s)",
			r, p.SaleEndsAt.UTC().Format(time.RFC3339), p.ReadAt.UTC().Format(time.RFC3339))
	default:
		var units int64
		for _, f := range fits[:n] {
			units += int64(f.item.quantity)
		}
		if p.Taken > units {
			// The units the cut refused went to someone: to claims after
			// the draw, which a sale that had ended could not take.
			pe.add("the draw declares the sale's end cut it at rank %d, but orders hold %d units (sold + locked), more than the %d the entries before it asked for",
				r, p.Taken, units)
		}
	}
	return pe.check(CheckEnded)
}

// checkAdmitted checks the numbers admitted the draw declares, in all and
// per variant, against the recomputed ones (cut: those before the end's
// cut).
func checkAdmitted(p Published, rep Report, cut bool) Check {
	var pk problems
	if p.Admitted != rep.Admitted {
		if cut {
			pk.add("the draw declares %d admitted, but the entries that fit before the end's cut at rank %d are %d", p.Admitted, p.EndedAtRank, rep.Admitted)
		} else {
			pk.add("the draw declares %d admitted, but the entries that fit their variant's stock are %d", p.Admitted, rep.Admitted)
		}
	}
	got := make(map[string]int64, len(rep.Variants))
	for _, v := range rep.Variants {
		got[v.SKU] = v.Admitted
	}
	for _, v := range p.Variants {
		if v.Admitted >= 0 && v.Admitted != got[v.SKU] {
			pk.add("the draw declares %d admitted for variant %q, but the entries that fit are %d", v.Admitted, v.SKU, got[v.SKU])
		}
	}
	return pk.check(CheckAdmitted)
}

// orderChecks are the checks of the listed orders, in the report's order.
var orderChecks = []string{CheckInDraw, CheckTopK, CheckEachRank, CheckIDs, CheckStated, CheckItems}

// checkOrders holds the listed orders to the recomputed admitted entries
// k: each an entry of the draw, one the draw admits, one per admitted
// entry, with an id of its own, at the rank the list states, of its
// entry's item. Skipped when the list was not read.
func checkOrders(p Published, seed []byte, k []fit) []Check {
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
	l := p.Entries
	entries := l.entries
	index := make(map[[EntrySize]byte]int, len(k))
	for i, f := range k {
		index[f.entry] = i
	}
	var inDraw, inK, each, ids, stated, items problems
	counts := make([][]string, len(k)) // the order ids of each admitted entry
	seen := make(map[int64]bool, len(p.Orders))
	var slowRanks int // ranks of entries not admitted, computed by a pass over all entries
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
			inK.add("order %s: no entry", o.ID)
			continue
		}
		ea := [EntrySize]byte(e)
		if i, ok := index[ea]; ok {
			f := k[i]
			counts[i] = append(counts[i], o.ID)
			if o.Rank != 0 && o.Rank != f.rank {
				stated.add("order %s: listed with rank %d, recomputed %d", o.ID, o.Rank, f.rank)
			}
			sku, q := l.skus[f.item.sku], int(f.item.quantity)
			if (o.SKU != "" && o.SKU != sku) || (o.Quantity != 0 && o.Quantity != q) {
				items.add("order %s: %d of %q, but its entry %s asks for %d of %q", o.ID, o.Quantity, o.SKU, o.Entry, q, sku)
			}
			continue
		}
		// Not admitted: find whether it is an entry at all, and its rank
		// (one pass over the entries each, for the first few).
		found, r := false, int64(0)
		if slowRanks < maxProblems {
			slowRanks++
			found, r = rankOf(seed, entries, ea)
		} else {
			found = contains(entries, ea, l.nUnsorted == 0)
		}
		switch {
		case !found:
			inDraw.add("order %s: entry %s is not in the published entries", o.ID, o.Entry)
			inK.add("order %s: entry %s has no rank (not an entry)", o.ID, o.Entry)
		case r > 0:
			inK.add("order %s: entry %s has rank %d, not one of the K = %d the draw admits", o.ID, o.Entry, r, len(k))
		default:
			inK.add("order %s: entry %s is not one of the K = %d the draw admits", o.ID, o.Entry, len(k))
		}
		if o.Rank != 0 && r > 0 && o.Rank != r {
			stated.add("order %s: listed with rank %d, recomputed %d", o.ID, o.Rank, r)
		}
	}
	for i, ids := range counts {
		switch len(ids) {
		case 1:
		case 0:
			each.add("rank %d (entry %s) has no order", k[i].rank, hex.EncodeToString(k[i].entry[:]))
		default:
			each.add("rank %d (entry %s) has %d orders: %s", k[i].rank, hex.EncodeToString(k[i].entry[:]), len(ids), strings.Join(ids, ", "))
		}
	}
	if len(p.Orders) != len(k) {
		each.add("%d orders are listed, but K is %d", len(p.Orders), len(k))
	}
	return []Check{inDraw.check(CheckInDraw), inK.check(CheckTopK), each.check(CheckEachRank), ids.check(CheckIDs), stated.check(CheckStated), items.check(CheckItems)}
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

// rankOf reports whether e is in entries and, if so, its rank: one
// plus the number of entries ranked before it.
func rankOf(seed []byte, entries [][EntrySize]byte, e [EntrySize]byte) (bool, int64) {
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
type maxHeap []fit

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return compare(h[j].keyed, h[i].keyed) < 0 }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(fit)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
