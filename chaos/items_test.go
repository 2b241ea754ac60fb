package main

import (
	"encoding/json"
	"testing"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/audit"
)

func TestSplitUnits_SumsToTheUnitsAndDiffersByOneAtMost(t *testing.T) {
	for _, c := range []struct{ units, variants int }{{300, 1}, {300, 3}, {301, 3}, {7, 4}, {3, 3}} {
		parts := splitUnits(c.units, c.variants)
		sum, lo, hi := 0, parts[0], parts[0]
		for _, p := range parts {
			sum += p
			lo, hi = min(lo, p), max(hi, p)
		}
		if len(parts) != c.variants || sum != c.units || hi-lo > 1 {
			t.Errorf("splitUnits(%d, %d) = %v", c.units, c.variants, parts)
		}
	}
}

func TestItemOf_EveryVariantAndQuantityIsDrawnAndNoOther(t *testing.T) {
	const variants, qmax = 3, 3
	seen := map[seckill.Item]int{}
	for i := range 3000 {
		it := itemOf(1, i, variants, qmax)
		if it != itemOf(1, i, variants, qmax) {
			t.Fatalf("buyer %d's item is not the seed's", i)
		}
		seen[it]++
	}
	if len(seen) != variants*qmax {
		t.Fatalf("items drawn: %v, want each of %d variants x %d quantities", seen, variants, qmax)
	}
	for it, n := range seen {
		if !seckill.ValidSKU(it.SKU) || it.Quantity < 1 || it.Quantity > qmax || n < 3000/(variants*qmax)/2 {
			t.Errorf("item %+v drawn %d times of 3000", it, n)
		}
	}
	if itemOf(1, 5, variants, qmax) == itemOf(2, 5, variants, qmax) && itemOf(1, 6, variants, qmax) == itemOf(2, 6, variants, qmax) &&
		itemOf(1, 7, variants, qmax) == itemOf(2, 7, variants, qmax) {
		t.Errorf("another seed draws the same items")
	}
}

func TestItemBody_NoneForAV3RunElseTheItem(t *testing.T) {
	if b := (options{variants: 1, quantityMax: 1}).itemBody(1, 0); b != nil {
		t.Errorf("one variant of quantity 1: body %s, want none (a v3 claim)", b)
	}
	o := options{variants: 2, quantityMax: 3}
	var got struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
	}
	if err := json.Unmarshal(o.itemBody(1, 9), &got); err != nil {
		t.Fatal(err)
	}
	if want := itemOf(1, 9, 2, 3); got.SKU != want.SKU || got.Quantity != want.Quantity {
		t.Errorf("body %+v, want %+v", got, want)
	}
	sh := &shop{o: options{variants: 1, quantityMax: 1}, seed: 1}
	if q := sh.quantity(9); q != 1 {
		t.Errorf("quantity of a v3 run's buyer: %d", q)
	}
}

func TestSaleVariants_SplitTheUnits(t *testing.T) {
	if v := (options{units: 300, variants: 1}).saleVariants(); v != nil {
		t.Errorf("one variant: %v, want the top-level stock", v)
	}
	v := (options{units: 301, variants: 3}).saleVariants()
	total := 0
	for i, x := range v {
		total += x["stock"].(int)
		if x["sku"] != skus(3)[i] {
			t.Errorf("variant %d is %v", i, x["sku"])
		}
	}
	if len(v) != 3 || total != 301 || v[0]["sku"] != seckill.DefaultSKU {
		t.Errorf("variants %v", v)
	}
}

func TestShop_AdmittedUnitsCountEachOrdersQuantity(t *testing.T) {
	sh := &shop{o: options{variants: 3, quantityMax: 3}, seed: 1, orders: map[string]int{}, units: map[string]int{}, waitlist: map[string]int{}}
	var want int64
	for i := range 10 {
		id := string(rune('a' + i))
		sh.orders[id], sh.units[id] = 0, sh.quantity(i)
		want += int64(sh.quantity(i))
	}
	if got := sh.admittedUnits(); got != want || got <= 10 {
		t.Errorf("admitted units %d, want %d (over 10 orders of 1..3)", got, want)
	}
}

func TestStrand_CountsUnitsPerVariantHeldUnitsAreNotStranded(t *testing.T) {
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
			if len(l.VariantsStranded) != len(c.want) || l.UnitsStranded != sum {
				t.Fatalf("stranded %d %v, want %d %v", l.UnitsStranded, l.VariantsStranded, sum, c.want)
			}
			for sku, n := range c.want {
				if l.VariantsStranded[sku] != n {
					t.Fatalf("stranded %v, want %v", l.VariantsStranded, c.want)
				}
			}
		})
	}
}
