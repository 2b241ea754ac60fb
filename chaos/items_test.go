package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/audit"
)

func TestSplitUnits_SumsToTheUnitsAndDiffersByOneAtMost(t *testing.T) {
	for _, c := range []struct{ units, variants int }{{300, 1}, {300, 3}, {301, 3}, {7, 4}, {3, 3}} {
		parts := splitUnits(c.units, c.variants)
		require.Len(t, parts, c.variants)
		sum, lo, hi := 0, parts[0], parts[0]
		for _, p := range parts {
			sum += p
			lo, hi = min(lo, p), max(hi, p)
		}
		require.Equal(t, c.units, sum, "splitUnits(%d, %d) = %v", c.units, c.variants, parts)
		require.LessOrEqual(t, hi-lo, 1, "splitUnits(%d, %d) = %v", c.units, c.variants, parts)
	}
}

func TestItemOf_EveryVariantAndQuantityIsDrawnAndNoOther(t *testing.T) {
	const variants, qmax, buyers = 3, 3, 3000
	seen := map[seckill.Item]int{}
	for i := range buyers {
		it := itemOf(1, i, variants, qmax)
		require.Equal(t, it, itemOf(1, i, variants, qmax), "buyer %d's item is the seed's", i)
		seen[it]++
	}
	require.Len(t, seen, variants*qmax, "each of %d variants x %d quantities: %v", variants, qmax, seen)
	for it, n := range seen {
		require.True(t, seckill.ValidSKU(it.SKU), "sku %q", it.SKU)
		require.True(t, it.Quantity >= 1 && it.Quantity <= qmax, "quantity %d", it.Quantity)
		require.Greater(t, n, buyers/(variants*qmax)/2, "item %+v drawn %d times of %d", it, n, buyers)
	}
	differs := false
	for i := range 10 {
		differs = differs || itemOf(1, i, variants, qmax) != itemOf(2, i, variants, qmax)
	}
	require.True(t, differs, "another seed draws other items")
}

func TestItemBody_NoneForAV3RunElseTheItem(t *testing.T) {
	require.Nil(t, options{variants: 1, quantityMax: 1}.itemBody(1, 0), "one variant of quantity 1: a v3 claim, no body")
	var got struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
	}
	require.NoError(t, json.Unmarshal(options{variants: 2, quantityMax: 3}.itemBody(1, 9), &got))
	want := itemOf(1, 9, 2, 3)
	require.Equal(t, want.SKU, got.SKU)
	require.Equal(t, want.Quantity, got.Quantity)
	require.Equal(t, 1, (&shop{o: options{variants: 1, quantityMax: 1}, seed: 1}).quantity(9))
}

func TestSaleVariants_SplitTheUnitsDefaultFirst(t *testing.T) {
	require.Nil(t, options{units: 300, variants: 1}.saleVariants(), "one variant: the top-level stock")
	v := options{units: 301, variants: 3}.saleVariants()
	require.Len(t, v, 3)
	total := 0
	for i, x := range v {
		total += x["stock"].(int)
		require.Equal(t, skus(3)[i], x["sku"])
	}
	require.Equal(t, 301, total)
	require.Equal(t, seckill.DefaultSKU, v[0]["sku"], "the referee reads the default variant's stock key")
}

func TestShop_AdmittedUnitsCountEachOrdersQuantity(t *testing.T) {
	sh := &shop{o: options{variants: 3, quantityMax: 3}, seed: 1, orders: map[string]int{}, units: map[string]int{}}
	var want int64
	for i := range 10 {
		id := string(rune('a' + i))
		sh.orders[id], sh.units[id] = 0, sh.quantity(i)
		want += int64(sh.quantity(i))
	}
	require.Equal(t, want, sh.admittedUnits())
	require.Greater(t, want, int64(10), "10 orders of 1..3 units")
}

// A buyer pays their order's amount: their quantity at the unit price (the
// driver paid one unit's price for every order, so every order of several
// units was a mismatch, refunded, and never PAID).
func TestShop_ABuyerPaysTheirQuantitysAmount(t *testing.T) {
	sh := &shop{o: options{variants: 3, quantityMax: 3}, seed: 1}
	several := false
	for i := range 20 {
		require.Equal(t, int64(unitPriceCents*sh.quantity(i)), sh.amountCents(i))
		several = several || sh.quantity(i) > 1
	}
	require.True(t, several, "some of 20 buyers take several units")
	one := &shop{o: options{}, seed: 1}
	require.Equal(t, int64(unitPriceCents), one.amountCents(7))
}

func TestStrand_CountsUnitsPerVariantAndHeldUnitsAreNotStranded(t *testing.T) {
	variant := func(sku string, available, remaining int64) audit.VariantStock {
		return audit.VariantStock{SKU: sku, Stock: seckill.Stock{Available: available, Remaining: remaining}}
	}
	for _, c := range []struct {
		name  string
		v     []audit.VariantStock
		ls    lines
		ended bool
		want  map[string]int64
	}{
		{"units held for the head are in Redis",
			[]audit.VariantStock{variant("default", 2, 0), variant("v2", 0, 0)},
			lines{waiting: map[string]int64{"default": 1}, held: map[string]int64{"default": 2}, headWants: map[string]int64{"default": 3}}, false, nil},
		{"stock the head waits for more than",
			[]audit.VariantStock{variant("default", 1, 1)},
			lines{waiting: map[string]int64{"default": 1}, held: map[string]int64{}, headWants: map[string]int64{"default": 2}}, false, nil},
		{"stock and held units that cover the head",
			[]audit.VariantStock{variant("default", 3, 1), variant("v2", 4, 4)},
			lines{waiting: map[string]int64{"default": 1}, held: map[string]int64{"default": 2}, headWants: map[string]int64{"default": 3}}, false,
			map[string]int64{"default": 1}},
		{"stock while another variant's buyers wait",
			[]audit.VariantStock{variant("default", 0, 0), variant("v2", 4, 4)},
			lines{waiting: map[string]int64{"default": 2}, held: map[string]int64{}, headWants: map[string]int64{"default": 1}}, false, nil},
		{"the sale ended",
			[]audit.VariantStock{variant("default", 1, 1)},
			lines{waiting: map[string]int64{"default": 1}, held: map[string]int64{}, headWants: map[string]int64{"default": 1}}, true, nil},
		{"drifts of two variants do not cancel",
			[]audit.VariantStock{variant("default", 2, 3), variant("v2", 4, 3)},
			lines{}, false, map[string]int64{"default": -1, "v2": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l line
			l.strand(&audit.Report{Variants: c.v}, c.ls, c.ended)
			var sum int64
			for _, n := range c.want {
				sum += n
			}
			require.Equal(t, sum, l.UnitsStranded)
			if c.want == nil {
				require.Empty(t, l.VariantsStranded)
			} else {
				require.Equal(t, c.want, l.VariantsStranded)
			}
		})
	}
}
