package draw_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
)

// published is a correct published draw of n entries and stock units, as
// the API publishes it: entries sorted ascending, orders in ascending
// order_id (assigned in rank order).
type published struct {
	seed    []byte
	entries []string // sorted ascending
	ranked  []string // rank order
	orders  []draw.Order
	stock   int64
}

func newPublished(t *testing.T, n int, stock int64) *published {
	t.Helper()
	seed := draw.NewSeed()
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = draw.NewEntry()
	}
	p := &published{seed: seed, stock: stock}
	for _, e := range raw {
		p.entries = append(p.entries, hex.EncodeToString(e))
	}
	slices.Sort(p.entries)
	for _, r := range draw.Rank(seed, raw) {
		p.ranked = append(p.ranked, hex.EncodeToString(r.Entry))
	}
	k := min(int(stock), n)
	for i := range k {
		p.orders = append(p.orders, draw.Order{ID: strconv.Itoa(1_000_000 + 7*i), Entry: p.ranked[i], Rank: int64(i + 1)})
	}
	return p
}

// defaults makes published lines of entries, each for one unit of the
// one variant "default", as the API lists a sale of one variant.
func defaults(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e + " default 1"
	}
	return out
}

func (p *published) get() draw.Published {
	commit := draw.Commitment(p.seed)
	return draw.Published{
		SaleID: "42", SaleCommitment: commit,
		Commitment: commit, Seed: hex.EncodeToString(p.seed),
		DeclaredEntries: int64(len(p.entries)), Admitted: min(p.stock, int64(len(p.entries))),
		Entries: draw.EntriesOf(defaults(p.entries)...), Stock: p.stock,
		Orders: slices.Clone(p.orders),
	}
}

// requireFails checks that exactly the named checks failed, each with a
// problem containing want (when given).
func requireFails(t *testing.T, rep draw.Report, want map[string]string) {
	t.Helper()
	require.False(t, rep.OK(), "%s", rep.String())
	var names []string
	for name := range want {
		names = append(names, name)
	}
	require.ElementsMatch(t, names, rep.Failed(), "%s", rep.String())
	for _, c := range rep.Checks {
		if w := want[c.Name]; w != "" {
			require.Contains(t, strings.Join(c.Problems, "\n"), w, "%s", rep.String())
		}
	}
	t.Logf("\n%s", rep.String())
}

func TestVerify_GoodDraw(t *testing.T) {
	for _, tc := range []struct{ n, stock int }{{10, 3}, {1, 1}, {3, 10}, {0, 5}, {500, 500}, {500, 37}} {
		t.Run(fmt.Sprintf("%d entries, stock %d", tc.n, tc.stock), func(t *testing.T) {
			p := newPublished(t, tc.n, int64(tc.stock))
			rep := draw.Verify(p.get())
			require.True(t, rep.OK(), "%s", rep.String())
			require.Equal(t, int64(min(tc.n, tc.stock)), rep.Admitted)
			require.Len(t, rep.Checks, 16)
			s := rep.String()
			require.NotContains(t, s, "FAIL")
			require.Contains(t, s, "  ok   "+draw.CheckCommitment+"\n")
			require.Contains(t, s, "the draw checks out")
		})
	}
}

func TestVerify_TamperedSeed(t *testing.T) {
	p := newPublished(t, 10, 3)
	d := p.get()
	d.Seed = hex.EncodeToString(draw.NewSeed()) // another seed: the commitment does not match
	rep := draw.Verify(d)
	// The ranks under the other seed are other ranks, too (with 10 entries
	// and 3 units the same 3 in the same order is a 1 in 720 chance).
	require.Contains(t, rep.Failed(), draw.CheckCommitment, "%s", rep.String())
	require.Contains(t, strings.Join(checkOf(rep, draw.CheckCommitment).Problems, "\n"), "but the commitment published is")

	d = p.get()
	d.Commitment = draw.Commitment(draw.NewSeed()) // the commitment changed since the lobby opened
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckCommitment: "the sale showed commitment"})

	d = p.get()
	d.Seed = "not hex"
	rep = draw.Verify(d)
	require.Contains(t, rep.Failed(), draw.CheckCommitment)
	require.Contains(t, rep.Failed(), draw.CheckTopK)
}

func TestVerify_EntryChanged(t *testing.T) {
	p := newPublished(t, 10, 3)
	seed := p.seed

	t.Run("a winner's entry replaced", func(t *testing.T) {
		// The rank-2 entry is replaced by another that keeps the list
		// sorted: its order's entry is no longer published.
		d := p.get()
		i := slices.Index(p.entries, p.ranked[1])
		repl := between(t, p.entries, i, func([]byte) bool { return true })
		lines := slices.Clone(p.entries)
		lines[i] = repl
		d.Entries = draw.EntriesOf(defaults(lines)...)
		rep := draw.Verify(d)
		require.Contains(t, rep.Failed(), draw.CheckInDraw, "%s", rep.String())
		require.Contains(t, rep.Failed(), draw.CheckTopK)
		require.Contains(t, strings.Join(checkOf(rep, draw.CheckInDraw).Problems, "\n"), p.ranked[1]+" is not in the published entries")
		t.Logf("\n%s", rep.String())
	})

	t.Run("a loser's entry replaced by one ranking first", func(t *testing.T) {
		// A losing entry is replaced (keeping the list sorted) by one that
		// ranks 1 under the seed: the admitted orders are no longer ranks
		// 1..K.
		d := p.get()
		i := slices.Index(p.entries, p.ranked[9])
		first := draw.Key(seed, mustEntry(t, p.ranked[0]))
		repl := between(t, p.entries, i, func(e []byte) bool {
			k := draw.Key(seed, e)
			return bytes.Compare(k[:], first[:]) < 0
		})
		lines := slices.Clone(p.entries)
		lines[i] = repl
		d.Entries = draw.EntriesOf(defaults(lines)...)
		rep := draw.Verify(d)
		requireFails(t, rep, map[string]string{
			draw.CheckTopK:     "has rank 4, not one of the K = 3",
			draw.CheckEachRank: "rank 1 (entry " + repl + ") has no order",
			draw.CheckStated:   "listed with rank 3, recomputed 4",
		})
	})

	t.Run("an entry replaced out of order", func(t *testing.T) {
		d := p.get()
		lines := slices.Clone(p.entries)
		lines[4] = "ff" + lines[4][2:]
		if lines[4] == lines[9] {
			lines[4] = "fe" + lines[4][2:]
		}
		d.Entries = draw.EntriesOf(defaults(lines)...)
		rep := draw.Verify(d)
		require.Contains(t, rep.Failed(), draw.CheckSorted, "%s", rep.String())
		require.Contains(t, strings.Join(checkOf(rep, draw.CheckSorted).Problems, "\n"), "line 6: "+lines[5]+" comes after "+lines[4])
	})

	t.Run("an entry malformed", func(t *testing.T) {
		for _, bad := range []string{strings.ToUpper(p.entries[3]), p.entries[3][:31], p.entries[3] + "0", "", "zz" + p.entries[3][2:]} {
			d := p.get()
			lines := slices.Clone(p.entries)
			lines[3] = bad
			d.Entries = draw.EntriesOf(defaults(lines)...)
			rep := draw.Verify(d)
			require.Contains(t, rep.Failed(), draw.CheckWellFormed, "%s", rep.String())
			require.Contains(t, strings.Join(checkOf(rep, draw.CheckWellFormed).Problems, "\n"), "line 4: ")
		}
	})
}

func TestVerify_EntryDroppedOrDuplicated(t *testing.T) {
	p := newPublished(t, 10, 3)

	t.Run("a loser dropped", func(t *testing.T) {
		d := p.get()
		i := slices.Index(p.entries, p.ranked[7])
		d.Entries = draw.EntriesOf(defaults(slices.Delete(slices.Clone(p.entries), i, i+1))...)
		requireFails(t, draw.Verify(d), map[string]string{draw.CheckCount: "declares 10 entries, but 9 were published"})
	})
	t.Run("a winner dropped", func(t *testing.T) {
		d := p.get()
		i := slices.Index(p.entries, p.ranked[0])
		d.Entries = draw.EntriesOf(defaults(slices.Delete(slices.Clone(p.entries), i, i+1))...)
		rep := draw.Verify(d)
		require.Subset(t, rep.Failed(), []string{draw.CheckCount, draw.CheckInDraw, draw.CheckEachRank}, "%s", rep.String())
	})
	// A loser that is not the greatest entry.
	i := slices.IndexFunc(p.entries, func(e string) bool { return !slices.Contains(p.ranked[:3], e) })
	t.Run("an entry duplicated", func(t *testing.T) {
		d := p.get()
		lines := slices.Insert(slices.Clone(p.entries), i, p.entries[i])
		d.Entries = draw.EntriesOf(defaults(lines)...)
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckDistinct: p.entries[i] + " is published 2 times",
			draw.CheckCount:    "declares 10 entries, but 11 were published",
		})
	})
	t.Run("an entry duplicated out of order", func(t *testing.T) {
		d := p.get()
		lines := append(slices.Clone(p.entries), p.entries[i])
		d.Entries = draw.EntriesOf(defaults(lines)...)
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckDistinct: p.entries[i] + " is published 2 times",
			draw.CheckSorted:   "line 11: " + p.entries[i] + " comes after " + p.entries[9],
			draw.CheckCount:    "",
		})
	})
	t.Run("an entry added and declared", func(t *testing.T) {
		// An entry slipped in after the fact (declared, sorted) that ranks
		// among the admitted: the orders no longer match ranks 1..K.
		d := p.get()
		first := draw.Key(p.seed, mustEntry(t, p.ranked[0]))
		var add string
		for {
			e := draw.NewEntry()
			if k := draw.Key(p.seed, e); bytes.Compare(k[:], first[:]) < 0 {
				add = hex.EncodeToString(e)
				break
			}
		}
		lines := append(slices.Clone(p.entries), add)
		slices.Sort(lines)
		d.Entries = draw.EntriesOf(defaults(lines)...)
		d.DeclaredEntries++
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckTopK:     "not one of the K = 3",
			draw.CheckEachRank: "rank 1 (entry " + add + ") has no order",
			draw.CheckStated:   "",
		})
	})
}

func TestVerify_TamperedOrders(t *testing.T) {
	p := newPublished(t, 10, 3)

	t.Run("ids in any order", func(t *testing.T) {
		// Order ids are minted on several hosts' clocks: rank 1 holding the
		// later id says nothing against the draw, which holds ranks 1..K
		// to one order each.
		d := p.get()
		d.Orders[0].ID, d.Orders[1].ID = d.Orders[1].ID, d.Orders[0].ID
		rep := draw.Verify(d)
		require.True(t, rep.OK(), "%s", rep.String())
	})
	t.Run("an order listed twice", func(t *testing.T) {
		d := p.get()
		d.Orders[1].ID = d.Orders[0].ID
		requireFails(t, draw.Verify(d), map[string]string{draw.CheckIDs: "order " + d.Orders[0].ID + " is listed twice"})
	})
	t.Run("rank K+1 admitted instead of K", func(t *testing.T) {
		d := p.get()
		d.Orders[2].Entry = p.ranked[3]
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckTopK:     "entry " + p.ranked[3] + " has rank 4, not one of the K = 3",
			draw.CheckEachRank: "rank 3 (entry " + p.ranked[2] + ") has no order",
			draw.CheckStated:   "listed with rank 3, recomputed 4",
		})
	})
	t.Run("an entrant admitted twice", func(t *testing.T) {
		d := p.get()
		d.Orders[2].Entry, d.Orders[2].Rank = d.Orders[1].Entry, 2
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckEachRank: "rank 2 (entry " + p.ranked[1] + ") has 2 orders: " + d.Orders[1].ID + ", " + d.Orders[2].ID,
		})
	})
	t.Run("an extra order", func(t *testing.T) {
		d := p.get()
		d.Orders = append(d.Orders, draw.Order{ID: "9000000", Entry: p.ranked[3], Rank: 4})
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckTopK:     "has rank 4, not one of the K = 3",
			draw.CheckEachRank: "4 orders are listed, but K is 3",
		})
	})
	t.Run("an order missing", func(t *testing.T) {
		d := p.get()
		d.Orders = d.Orders[:2]
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckEachRank: "rank 3 (entry " + p.ranked[2] + ") has no order",
		})
	})
	t.Run("an order for a stranger", func(t *testing.T) {
		d := p.get()
		d.Orders[1].Entry = hex.EncodeToString(draw.NewEntry())
		requireFails(t, draw.Verify(d), map[string]string{
			draw.CheckInDraw:   "is not in the published entries",
			draw.CheckTopK:     "has no rank (not an entry)",
			draw.CheckEachRank: "rank 2 (entry " + p.ranked[1] + ") has no order",
		})
	})
	t.Run("a stated rank wrong", func(t *testing.T) {
		// Ranks are recomputed, never trusted: a wrong stated rank is only
		// a publication error of its own.
		d := p.get()
		d.Orders[0].Rank = 3
		requireFails(t, draw.Verify(d), map[string]string{draw.CheckStated: "listed with rank 3, recomputed 1"})
	})
	t.Run("a bad order id", func(t *testing.T) {
		d := p.get()
		d.Orders[1].ID = "abc"
		requireFails(t, draw.Verify(d), map[string]string{draw.CheckIDs: `order "abc": not an order id`})
	})
	t.Run("orders unavailable", func(t *testing.T) {
		d := p.get()
		d.Orders, d.OrdersUnavailable = nil, "401 UNAUTHENTICATED"
		rep := draw.Verify(d)
		require.True(t, rep.OK(), "%s", rep.String())
		require.Contains(t, rep.String(), "  skip "+draw.CheckEachRank+"\n         - the order list was not read: 401 UNAUTHENTICATED\n")
	})
}

func TestVerify_TamperedCounts(t *testing.T) {
	p := newPublished(t, 10, 3)
	d := p.get()
	d.DeclaredEntries = 11
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckCount: "declares 11 entries, but 10 were published"})

	d = p.get()
	d.Admitted = 4
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckAdmitted: "declares 4 admitted, but the entries that fit their variant's stock are 3"})

	// Stock larger than it was: K = min(stock, N) grows, rank 4 has no order.
	d = p.get()
	d.Stock = 4
	requireFails(t, draw.Verify(d), map[string]string{
		draw.CheckAdmitted: "declares 3 admitted, but the entries that fit their variant's stock are 4",
		draw.CheckEachRank: "rank 4 (entry " + p.ranked[3] + ") has no order",
	})

	// Fewer entries than stock: K is N.
	p = newPublished(t, 3, 10)
	d = p.get()
	d.Admitted = 10
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckAdmitted: "the entries that fit their variant's stock are 3"})
}

// cutAt is p's draw as published when the sale's end cut it at rank r:
// the ranks before r admitted (their orders listed), the rest refused.
func (p *published) cutAt(r int64) draw.Published {
	d := p.get()
	d.EndedAtRank, d.Admitted, d.Orders = r, r-1, d.Orders[:r-1]
	d.SaleEndsAt = time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	d.ReadAt = d.SaleEndsAt.Add(time.Minute)
	return d
}

func TestVerify_ADrawTheSalesEndCutChecksOutUpToTheCut(t *testing.T) {
	p := newPublished(t, 10, 5)
	for _, r := range []int64{1, 3, 5} {
		rep := draw.Verify(p.cutAt(r))
		require.True(t, rep.OK(), "%s", rep.String())
		require.Equal(t, r-1, rep.Admitted)
		require.Contains(t, rep.String(), fmt.Sprintf("up to the sale's end, declared at rank %d, %d admitted", r, r-1))
	}
}

func TestVerify_ACutByTheEndIsHeldToTheRanksAndTheSalesEnd(t *testing.T) {
	p := newPublished(t, 10, 5)

	// An order past the cut: the draw admitted a rank it says the end refused.
	d := p.cutAt(3)
	d.Orders = slices.Clone(p.orders[:3])
	requireFails(t, draw.Verify(d), map[string]string{
		draw.CheckTopK:     "rank 3, not one of the K = 2",
		draw.CheckEachRank: "3 orders are listed, but K is 2",
	})

	// A rank missing before the cut.
	d = p.cutAt(3)
	d.Orders = d.Orders[1:]
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckEachRank: "rank 1 (entry " + p.ranked[0] + ") has no order"})

	// Declared admitted other than the ranks before the cut.
	d = p.cutAt(3)
	d.Admitted = 5
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckAdmitted: "declares 5 admitted, but the entries that fit before the end's cut at rank 3 are 2"})

	// A cut past min(stock, entries) refuses nobody the units owed: not a cut.
	d = p.cutAt(3)
	d.EndedAtRank = 6
	requireFails(t, draw.Verify(d), map[string]string{
		draw.CheckEnded:    "at rank 6, which is not the rank of an entry the draw admits",
		draw.CheckAdmitted: "the entries that fit their variant's stock are 5",
		draw.CheckEachRank: "rank 3 (entry " + p.ranked[2] + ") has no order",
	})

	// A cut declared for a sale that has not ended.
	// The units the cut refused went to orders after the draw: a cut
	// that let claims take them is no cut by the sale's end.
	d = p.cutAt(3)
	d.Taken = 2
	rep := draw.Verify(d)
	require.True(t, rep.OK(), "the two ranks before the cut hold their units: %s", rep.String())
	d.Taken = 4
	requireFails(t, draw.Verify(d), map[string]string{
		draw.CheckEnded:    "orders hold 4 units (sold + locked), more than the 2 the entries before it asked for",
		draw.CheckAdmitted: "declares 2 admitted, but the entries that fit their variant's stock are 5",
		draw.CheckEachRank: "rank 3 (entry " + p.ranked[2] + ") has no order",
	})

	// A cut declared for a sale that has not ended: K is min(stock,
	// entries), and the ranks past the cut were owed their units.
	d = p.cutAt(3)
	d.ReadAt = d.SaleEndsAt.Add(-time.Minute)
	rep = draw.Verify(d)
	requireFails(t, rep, map[string]string{
		draw.CheckEnded:    "but the sale ends at 2026-11-22T11:00:00Z, after it was read (2026-11-22T10:59:00Z)",
		draw.CheckAdmitted: "declares 2 admitted, but the entries that fit their variant's stock are 5",
		draw.CheckEachRank: "rank 3 (entry " + p.ranked[2] + ") has no order",
	})
	require.Contains(t, rep.String(), "so 5 admitted (", "an unproven cut is not counted as one")
}

// TestVerify_ManyProblemsAreCounted: a check names ten problems and counts
// the rest.
func TestVerify_ManyProblemsAreCounted(t *testing.T) {
	p := newPublished(t, 50, 50)
	d := p.get()
	lines := slices.Clone(p.entries)
	slices.Reverse(lines)
	d.Entries = draw.EntriesOf(defaults(lines)...)
	rep := draw.Verify(d)
	c := checkOf(rep, draw.CheckSorted)
	require.False(t, c.OK)
	require.Len(t, c.Problems, 11)
	require.Equal(t, "... and 39 more", c.Problems[10])
	// Everything else holds: the ranks do not depend on the list's order.
	require.Equal(t, []string{draw.CheckSorted}, rep.Failed(), "%s", rep.String())
}

// TestVerify_TopKMatchesRank: the verifier's own selection of ranks 1..K
// (a bounded heap) agrees with Rank, through the admitted orders it
// accepts.
func TestVerify_TopKMatchesRank(t *testing.T) {
	for _, n := range []int{1, 2, 5, 64, 1000} {
		for _, stock := range []int64{1, 2, 7, 63, 1000, 5000} {
			p := newPublished(t, n, stock)
			rep := draw.Verify(p.get())
			require.True(t, rep.OK(), "n %d stock %d\n%s", n, stock, rep.String())
		}
	}
}

// TestReadEntries_Streams: a million entries are read line by line into
// 16 bytes each and 4 for the item.
func TestReadEntries_Streams(t *testing.T) {
	const n = 1_000_000
	r := &entryStream{n: n}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, err := draw.ReadEntries(r, n)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	// The entries' 16 MB, their items' 4 MB and the line buffer: nothing
	// per line.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("reading %d entries allocated %.1f MB", n, float64(alloc)/(1<<20))
	require.Less(t, alloc, uint64(21<<20))
	require.Equal(t, n, l.Len())
	require.Equal(t, int64(n), l.Lines())
	rep := draw.Verify(draw.Published{
		SaleID: "1", Seed: hex.EncodeToString(make([]byte, 32)), Commitment: draw.Commitment(make([]byte, 32)),
		DeclaredEntries: n, Admitted: 0, Entries: l, Stock: 0, Orders: []draw.Order{},
	})
	require.True(t, rep.OK(), "%s", rep.String())

	l, err = draw.ReadEntries(strings.NewReader("00000000000000000000000000000001 default 1\r\n00000000000000000000000000000002 eu-42 2\n"), 0)
	require.NoError(t, err)
	require.Equal(t, 2, l.Len())
}

// entryStream serves n sorted entries (0, 1, 2, ...), one unit of
// "default" each, one per line, from
// one reused buffer.
type entryStream struct {
	n, i int
	buf  []byte // the unread part of a batch of lines
	back [64 << 10]byte
}

func (s *entryStream) Read(p []byte) (int, error) {
	if len(s.buf) == 0 {
		s.buf = s.back[:0]
		for len(s.buf)+43 <= len(s.back) && s.i < s.n {
			var e [16]byte
			binary.BigEndian.PutUint64(e[8:], uint64(s.i))
			s.buf = hex.AppendEncode(s.buf, e[:])
			s.buf = append(s.buf, " default 1\n"...)
			s.i++
		}
		if len(s.buf) == 0 {
			return 0, io.EOF
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

func checkOf(rep draw.Report, name string) draw.Check {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	panic("no check " + name)
}

func mustEntry(t *testing.T, s string) []byte {
	t.Helper()
	e, err := draw.ParseEntry(s)
	require.NoError(t, err)
	return e
}

// between finds an entry strictly between sorted[i-1] and sorted[i+1]
// (so the list stays sorted with it at i), other than sorted[i], for
// which ok holds: random bytes under the shared prefix.
func between(t *testing.T, sorted []string, i int, ok func([]byte) bool) string {
	t.Helper()
	lo := make([]byte, 16)
	if i > 0 {
		lo = mustEntry(t, sorted[i-1])
	}
	hi := bytes.Repeat([]byte{0xff}, 16)
	if i+1 < len(sorted) {
		hi = mustEntry(t, sorted[i+1])
	}
	for range 1_000_000 {
		e := draw.NewEntry()
		// A first byte within [lo, hi]'s, so that narrow gaps are found.
		e[0] = lo[0] + byte(int(e[0])%(int(hi[0])-int(lo[0])+1))
		s := hex.EncodeToString(e)
		if bytes.Compare(e, lo) > 0 && bytes.Compare(e, hi) < 0 && s != sorted[i] && ok(e) {
			return s
		}
	}
	t.Fatalf("no entry between %x and %x", lo, hi)
	return ""
}
