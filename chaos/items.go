package main

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/seckill/seckill"
)

// unitPriceCents is the price of a unit of every chaos sale's variants.
const unitPriceCents = 990

// skus are the run's variants, in the sale's order: "default" first, so a
// run of one variant is a v3 sale and the referee's stock key (the
// "default" variant's) is the first variant's in every run.
func skus(variants int) []string {
	out := []string{seckill.DefaultSKU}
	for i := 2; i <= variants; i++ {
		out = append(out, "v"+strconv.Itoa(i))
	}
	return out
}

// splitUnits splits units over variants: an equal share each, the first
// variants one more while a remainder lasts.
func splitUnits(units, variants int) []int {
	out := make([]int, variants)
	for i := range out {
		out[i] = units / variants
		if i < units%variants {
			out[i]++
		}
	}
	return out
}

// itemOf is what buyer i of a run of seed claims (and, answered SOLD_OUT,
// waits for): a variant of the sale and a quantity 1..quantityMax, both
// drawn from the seed, so every run of a seed asks the same.
func itemOf(seed uint64, i, variants, quantityMax int) seckill.Item {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%d/item", seed, i)
	x := h.Sum64()
	return seckill.Item{
		SKU:      skus(variants)[x%uint64(variants)],
		Quantity: 1 + int(x/uint64(variants)%uint64(quantityMax)),
	}
}

// itemBody is the claim's (and the waitlist join's) JSON body for buyer
// i: none on a run of one variant and quantity 1 (a v3 claim, as before
// variants), else {"sku", "quantity"}.
func (o options) itemBody(seed uint64, i int) []byte {
	if o.variants <= 1 && o.quantityMax <= 1 {
		return nil
	}
	it := itemOf(seed, i, o.variants, o.quantityMax)
	return fmt.Appendf(nil, `{"sku":%q,"quantity":%d}`, it.SKU, it.Quantity)
}

// saleVariants is the "variants" field of the run's sale, or nil for a
// sale of one variant (the top-level price and stock, a v3 body).
func (o options) saleVariants() []map[string]any {
	if o.variants <= 1 {
		return nil
	}
	var out []map[string]any
	for i, units := range splitUnits(o.units, o.variants) {
		sku := skus(o.variants)[i]
		out = append(out, map[string]any{"sku": sku, "name": "chaos " + sku, "price_cents": unitPriceCents, "stock": units})
	}
	return out
}
