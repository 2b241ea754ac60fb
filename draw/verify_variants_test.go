package draw_test

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
)

// shoes is a correct published draw of n entries over variants eu-42
// (stock 5) and eu-43 (stock 3), each entry for 1 or 2 units: what the API
// publishes, with the admitted set computed by draw.Fitter, as the draw
// computes it.
type shoes struct {
	seed    []byte
	entries []string          // sorted ascending
	ranked  []string          // rank order
	item    map[string]string // entry -> "<sku> <quantity>"
	fits    map[string]bool
	orders  []draw.Order
}

var shoeStock = map[string]int64{"eu-42": 5, "eu-43": 3}

func newShoes(t *testing.T, n int) *shoes {
	t.Helper()
	p := &shoes{seed: draw.NewSeed(), item: map[string]string{}, fits: map[string]bool{}}
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = draw.NewEntry()
		e := hex.EncodeToString(raw[i])
		p.entries = append(p.entries, e)
		p.item[e] = []string{"eu-42", "eu-43"}[i%2] + " " + strconv.Itoa(1+i/2%2)
	}
	slices.Sort(p.entries)
	f := draw.NewFitter(shoeStock)
	for _, r := range draw.Rank(p.seed, raw) {
		e := hex.EncodeToString(r.Entry)
		p.ranked = append(p.ranked, e)
		sku, q := p.itemOf(e)
		if f.Fit(sku, q) {
			p.fits[e] = true
			p.orders = append(p.orders, draw.Order{ID: strconv.Itoa(1_000_000 + r.Rank), Entry: e, Rank: int64(r.Rank), SKU: sku, Quantity: q})
		}
	}
	return p
}

func (p *shoes) itemOf(e string) (string, int) {
	f := strings.Fields(p.item[e])
	q, _ := strconv.Atoi(f[1])
	return f[0], q
}

func (p *shoes) lines() []string {
	out := make([]string, len(p.entries))
	for i, e := range p.entries {
		out[i] = e + " " + p.item[e]
	}
	return out
}

func (p *shoes) admitted(sku string) int64 {
	var n int64
	for _, o := range p.orders {
		if o.SKU == sku {
			n++
		}
	}
	return n
}

func (p *shoes) get() draw.Published {
	commit := draw.Commitment(p.seed)
	return draw.Published{
		SaleID: "42", SaleCommitment: commit, Commitment: commit, Seed: hex.EncodeToString(p.seed),
		DeclaredEntries: int64(len(p.entries)), Admitted: int64(len(p.orders)),
		Entries: draw.EntriesOf(p.lines()...), Stock: 8,
		Variants: []draw.Variant{{SKU: "eu-42", Stock: 5, Admitted: p.admitted("eu-42")}, {SKU: "eu-43", Stock: 3, Admitted: p.admitted("eu-43")}},
		// A restock after the draw added 10 pairs of eu-42.
		SaleVariants: []draw.Variant{{SKU: "eu-42", Stock: 15}, {SKU: "eu-43", Stock: 3}},
		Orders:       slices.Clone(p.orders),
	}
}

func TestVerify_ADrawOfVariantsAndQuantitiesChecksOut(t *testing.T) {
	for range 20 {
		p := newShoes(t, 12)
		rep := draw.Verify(p.get())
		require.True(t, rep.OK(), "%s", rep.String())
		require.Equal(t, int64(len(p.orders)), rep.Admitted)
		require.Equal(t, []draw.VariantReport{
			{SKU: "eu-42", Stock: 5, Entries: 6, Admitted: p.admitted("eu-42")},
			{SKU: "eu-43", Stock: 3, Entries: 6, Admitted: p.admitted("eu-43")},
		}, rep.Variants)
		require.Contains(t, rep.String(), "eu-42: "+strconv.FormatInt(p.admitted("eu-42"), 10)+" of 6 entries for stock 5")
	}
}

// A variant's entries are admitted in rank order while it still has
// their quantity; after the first that does not fit, none of that
// variant is, even one asking for fewer units (draw.Fitter).
func TestVerify_AnEntryAfterOneThatDidNotFitIsNotAdmitted(t *testing.T) {
	seed := draw.NewSeed()
	raw := [][]byte{draw.NewEntry(), draw.NewEntry(), draw.NewEntry()}
	ranked := draw.Rank(seed, raw)
	e := func(rank int) string { return hex.EncodeToString(ranked[rank-1].Entry) }
	// Stock 2: rank 1 takes 1, rank 2 asks for 2 (1 left), rank 3 for 1.
	item := map[string]string{e(1): "default 1", e(2): "default 2", e(3): "default 1"}
	var lines []string
	for _, r := range raw {
		lines = append(lines, hex.EncodeToString(r))
	}
	slices.Sort(lines)
	for i := range lines {
		lines[i] += " " + item[lines[i]]
	}
	commit := draw.Commitment(seed)
	good := draw.Published{SaleID: "1", Commitment: commit, Seed: hex.EncodeToString(seed), DeclaredEntries: 3, Admitted: 1,
		Entries: draw.EntriesOf(lines...), Variants: []draw.Variant{{SKU: "default", Stock: 2, Admitted: 1}},
		Orders: []draw.Order{{ID: "1", Entry: e(1), Rank: 1, SKU: "default", Quantity: 1}}}
	rep := draw.Verify(good)
	require.True(t, rep.OK(), "%s", rep.String())

	// A draw that admitted rank 3 past rank 2 does not check out.
	d := good
	d.Admitted, d.Variants = 2, []draw.Variant{{SKU: "default", Stock: 2, Admitted: 2}}
	d.Orders = append(slices.Clone(good.Orders), draw.Order{ID: "3", Entry: e(3), Rank: 3, SKU: "default", Quantity: 1})
	requireFails(t, draw.Verify(d), map[string]string{
		draw.CheckAdmitted: "declares 2 admitted, but the entries that fit their variant's stock are 1",
		draw.CheckTopK:     "entry " + e(3) + " has rank 3, not one of the K = 1 the draw admits",
		draw.CheckEachRank: "2 orders are listed, but K is 1",
	})
}

func TestVerify_AnEntrysVariantOrQuantityChanged(t *testing.T) {
	p := newShoes(t, 12)
	// The best-ranked entry admitted for eu-43.
	var winner string
	for _, e := range p.ranked {
		if sku, _ := p.itemOf(e); sku == "eu-43" && p.fits[e] {
			winner = e
			break
		}
	}
	require.NotEmpty(t, winner)
	sku, q := p.itemOf(winner)
	for name, changed := range map[string]string{
		"its quantity":    fmt.Sprintf("%s %d", sku, 3-q),
		"its variant":     fmt.Sprintf("eu-42 %d", q),
		"both":            fmt.Sprintf("eu-42 %d", 3-q),
		"an unknown size": fmt.Sprintf("eu-44 %d", q),
	} {
		t.Run(name, func(t *testing.T) {
			was := p.item[winner]
			p.item[winner] = changed
			d := p.get()
			p.item[winner] = was
			rep := draw.Verify(d)
			require.False(t, rep.OK(), "%s", rep.String())
			t.Logf("\n%s", rep.String())
			// Whatever else moves, the order no longer matches its entry,
			// or the entry is no longer admitted.
			failed := rep.Failed()
			require.True(t, slices.Contains(failed, draw.CheckItems) || slices.Contains(failed, draw.CheckTopK), "%v", failed)
		})
	}
}

func TestVerify_TheVariantsStockIsHeldToTheSales(t *testing.T) {
	p := newShoes(t, 12)

	d := p.get()
	d.Variants[1].Stock = 4 // more than the sale has of eu-43, which was never restocked
	rep := draw.Verify(d)
	require.Contains(t, rep.Failed(), draw.CheckStock, "%s", rep.String())
	require.Contains(t, strings.Join(checkOf(rep, draw.CheckStock).Problems, "\n"), `the draw gave 4 units of variant "eu-43", but the sale has 3 in all now`)

	d = p.get()
	d.Variants = d.Variants[:1]
	rep = draw.Verify(d)
	require.Contains(t, rep.Failed(), draw.CheckStock, "%s", rep.String())
	require.Contains(t, strings.Join(checkOf(rep, draw.CheckStock).Problems, "\n"), `6 entries are for variant "eu-43", which the draw does not have`)

	d = p.get()
	d.Variants[0].Admitted++
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckAdmitted: `for variant "eu-42", but the entries that fit are`})

	// Without the draw's figures the sale's stock now is taken, and said.
	d = p.get()
	d.Variants = nil
	rep = draw.Verify(d)
	require.Contains(t, rep.Failed(), draw.CheckStock)
	require.Contains(t, strings.Join(checkOf(rep, draw.CheckStock).Problems, "\n"), "the sale's stock now is taken for it")
}

func TestVerify_AnOrderForAnotherItemThanItsEntry(t *testing.T) {
	p := newShoes(t, 12)
	d := p.get()
	d.Orders[0].Quantity = 3 - d.Orders[0].Quantity
	requireFails(t, draw.Verify(d), map[string]string{draw.CheckItems: "order " + d.Orders[0].ID + ": "})
}

// The sale's end cuts a draw of variants at an entry that fits: the
// admitted ones are those that fit ranked before it.
func TestVerify_ACutByTheEndFallsAtAnEntryThatFits(t *testing.T) {
	p := newShoes(t, 12)
	require.GreaterOrEqual(t, len(p.orders), 3)
	cut := p.get()
	cut.EndedAtRank, cut.Admitted, cut.Orders = p.orders[2].Rank, 2, cut.Orders[:2]
	cut.Variants = []draw.Variant{{SKU: "eu-42", Stock: 5, Admitted: -1}, {SKU: "eu-43", Stock: 3, Admitted: -1}}
	cut.SaleEndsAt = time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	cut.ReadAt = cut.SaleEndsAt.Add(time.Minute)
	rep := draw.Verify(cut)
	require.True(t, rep.OK(), "%s", rep.String())
	require.Equal(t, int64(2), rep.Admitted)

	// A rank that does not fit is no place for the cut.
	for _, e := range p.ranked {
		if !p.fits[e] {
			d := cut
			d.EndedAtRank = int64(slices.Index(p.ranked, e) + 1)
			rep := draw.Verify(d)
			require.Contains(t, rep.Failed(), draw.CheckEnded, "%s", rep.String())
			require.Contains(t, strings.Join(checkOf(rep, draw.CheckEnded).Problems, "\n"), "which is not the rank of an entry the draw admits")
			break
		}
	}
}

// A line is `<entry> <sku> <quantity>` exactly.
func TestVerify_MalformedItemsAreNamed(t *testing.T) {
	e := hex.EncodeToString(draw.NewEntry())
	for _, bad := range []string{e, e + " ", e + " eu-42", e + " eu-42 0", e + " eu-42 01", e + " eu-42 101", e + " eu 42 1", e + " eu-42 -1", e + "  eu-42 1", e + " eu-42 1 "} {
		l := draw.EntriesOf(bad)
		require.Zero(t, l.Len(), "%q", bad)
		rep := draw.Verify(draw.Published{Entries: l, DeclaredEntries: 1, Seed: hex.EncodeToString(make([]byte, 32)), Commitment: draw.Commitment(make([]byte, 32))})
		require.Contains(t, rep.Failed(), draw.CheckWellFormed, "%q", bad)
	}
	l := draw.EntriesOf(e+" eu-42 100", e[:31]+"0 A.b_c-9 1")
	require.Equal(t, 2, l.Len())
}
