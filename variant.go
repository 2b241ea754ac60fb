package seckill

import (
	"regexp"
	"strconv"
)

// Variants, the limit per buyer and quantities (docs/API.md v4 "Sales",
// "Claims"): a sale sells one product in 1..MaxVariants variants, each
// with its own stock and price; a buyer's one active order holds 1..
// LimitPerBuyer units of one variant.

// Limits of variants and quantities, from docs/API.md.
const (
	// DefaultSKU is the one variant of a sale created without variants
	// (a v3 body), and of every sale created before v4.
	DefaultSKU = "default"
	// MaxVariants bounds a sale's variants.
	MaxVariants = 100
	// MaxSKULength bounds a sku (of [A-Za-z0-9._-]).
	MaxSKULength = 64
	// MaxVariantNameLength bounds a variant's name.
	MaxVariantNameLength = 200
	// MaxLimitPerBuyer bounds limit_per_buyer: the most units one buyer's
	// active order may hold.
	MaxLimitPerBuyer = 100
	// DefaultLimitPerBuyer is limit_per_buyer when a sale does not say.
	DefaultLimitPerBuyer = 1
)

var skuPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidSKU reports whether sku is a well-formed sku: 1..64 of
// [A-Za-z0-9._-]. It is safe in a Redis key and in a URL path segment.
func ValidSKU(sku string) bool { return skuPattern.MatchString(sku) }

// NewVariant is one variant of a NewSale.
type NewVariant struct {
	SKU        string
	Name       string
	PriceCents int64
	Stock      int64
}

// Variant is one variant of a Sale, with its own stock split.
type Variant struct {
	SKU        string
	Name       string
	PriceCents int64
	Stock      Stock
}

// VariantJSON is the wire form of a Variant.
type VariantJSON struct {
	SKU        string `json:"sku"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Stock      Stock  `json:"stock"`
}

// Item is what one claim, waitlist join or lobby entry asks for:
// Quantity units of the variant SKU.
type Item struct {
	SKU      string
	Quantity int
}

// DefaultItem is what a claim of a v3 body asks for: one unit of the
// default variant.
var DefaultItem = Item{SKU: DefaultSKU, Quantity: 1}

// OrDefault returns it with the defaults of orders written before v4 (and
// of workflow inputs recorded before it): sku "default", quantity 1.
func (it Item) OrDefault() Item {
	if it.SKU == "" {
		it.SKU = DefaultSKU
	}
	if it.Quantity <= 0 {
		it.Quantity = 1
	}
	return it
}

// String is "<quantity> x <sku>", for logs.
func (it Item) String() string { return strconv.Itoa(it.Quantity) + " x " + it.SKU }

// Variant returns the sale's variant sku.
func (s *Sale) Variant(sku string) (*Variant, bool) {
	for i := range s.Variants {
		if s.Variants[i].SKU == sku {
			return &s.Variants[i], true
		}
	}
	return nil, false
}

// SKUs lists the sale's variants' skus, in the sale's order.
func (s *Sale) SKUs() []string {
	out := make([]string, len(s.Variants))
	for i, v := range s.Variants {
		out[i] = v.SKU
	}
	return out
}

// SumVariants sets the sale's Stock to the sum of its variants' and its
// PriceCents to the lowest variant price (docs/API.md: the top-level
// figures of a sale of several variants).
func (s *Sale) SumVariants() {
	if len(s.Variants) == 0 {
		return
	}
	var st Stock
	low := s.Variants[0].PriceCents
	for _, v := range s.Variants {
		st.Total += v.Stock.Total
		st.Remaining += v.Stock.Remaining
		st.Available += v.Stock.Available
		st.Locked += v.Stock.Locked
		st.Sold += v.Stock.Sold
		low = min(low, v.PriceCents)
	}
	s.Stock, s.PriceCents = st, low
}

// Limit is the sale's limit per buyer (1 for sales made before v4).
func (s *Sale) Limit() int { return max(s.LimitPerBuyer, 1) }
