package api

import (
	"bytes"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// itemRequest is the body of a claim, a waitlist join and a lobby entry
// (docs/API.md "Claims"): optional for a sale of one variant.
type itemRequest struct {
	SKU      *string `json:"sku"`
	Quantity *int64  `json:"quantity"`
}

// itemOf reads what the request asks of sale: the variant (required when
// the sale has several) and the quantity (1..limit_per_buyer, default 1).
// A sku the sale does not have, or a quantity out of range, is
// INVALID_REQUEST naming the field.
func itemOf(c *fiber.Ctx, sale *seckill.Sale) (seckill.Item, error) {
	var r itemRequest
	if body := bytes.TrimSpace(c.Body()); len(body) > 0 {
		if err := decodeJSON(body, &r); err != nil {
			return seckill.Item{}, err
		}
	}
	it := seckill.Item{Quantity: 1}
	switch {
	case r.SKU != nil:
		if _, ok := sale.Variant(*r.SKU); !ok {
			return seckill.Item{}, invalid("sku", "the sale has no variant %q", *r.SKU)
		}
		it.SKU = *r.SKU
	case len(sale.Variants) == 1:
		it.SKU = sale.Variants[0].SKU
	default:
		return seckill.Item{}, invalid("sku", "is required: the sale has %d variants", len(sale.Variants))
	}
	if r.Quantity != nil {
		if *r.Quantity < 1 || *r.Quantity > int64(sale.Limit()) {
			return seckill.Item{}, invalid("quantity", "must be between 1 and the sale's limit per buyer, %d", sale.Limit())
		}
		it.Quantity = int(*r.Quantity)
	}
	return it, nil
}
