package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// restock adds units to one variant of a sale (docs/API.md "Restocking"),
// once per Idempotency-Key, and answers the sale as GET /sales/{id} shows
// it. The database is the authority: its half records the key and the
// units in one transaction, and the Redis half (the waitlist first, then
// the stock) is marked done there only once it is. A retry with the same
// key runs a Redis half that is not done again (it is idempotent per
// restock), and adds nothing in the database; reconciliation does the
// same for a restock nobody retries.
//
// An answer that is not a 200 after the database half (Redis did not
// answer, or has not loaded the sale) says so: the units are recorded, and
// a retry with the same key, or reconciliation, places them.
func (s *Server) restock(c *fiber.Ctx) error {
	id, ok := parseID(c.Params("id"))
	if !ok {
		return errNoSale
	}
	sku := c.Params("sku")
	key := c.Get(HeaderIdempotencyKey)
	if key == "" {
		return invalid(HeaderIdempotencyKey, "is required: the same key sent again answers the first answer and adds nothing")
	}
	if !ValidIdempotencyKey(key) {
		return invalid(HeaderIdempotencyKey, "must be 1-255 printable ASCII characters (space included)")
	}
	var req seckill.RestockJSON
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if req.Add == nil {
		return invalid("add", "is required: the units to add")
	}
	add := *req.Add
	if add < 1 || add > seckill.MaxRestock {
		return invalid("add", "must be between 1 and %d", seckill.MaxRestock)
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.cfg.Store.Sale(ctx, id)
	if isNotFound(err) {
		return errNoSale
	}
	if err != nil {
		return err
	}
	if _, ok := sale.Variant(sku); !ok {
		return seckill.Errorf(seckill.CodeVariantNotFound, "the sale has no variant %q", sku)
	}
	now := time.Now()
	if sale.LobbyOpensAt != nil && sale.Drawn == nil && now.Before(sale.EndsAt) {
		// The draw gives the units there are when the lobby closes; units
		// added before it is done would change what it was to give.
		return seckill.Errorf(seckill.CodeDrawInProgress, "the sale's draw is not done yet: restock it once it is")
	}
	rec, first, err := s.cfg.Store.Restock(ctx, id, sku, add, key, now)
	if isNotFound(err) {
		return errNoSale
	}
	if err != nil {
		return err
	}
	if !first {
		if rec.SKU != sku || rec.Added != add {
			return seckill.Errorf(seckill.CodeIdempotencyKeyReused, "this Idempotency-Key was used for another restock (%d units of %q); nothing was added", rec.Added, rec.SKU)
		}
		c.Set("Idempotent-Replayed", "true")
	}
	if !rec.Applied {
		if err := s.applyRestock(ctx, c, sale, rec); err != nil {
			return err
		}
	}
	return s.answerSale(ctx, c, id)
}

// applyRestock runs the Redis half of rec, a restock of sale, and marks it
// done in the database once Redis holds all its units.
func (s *Server) applyRestock(ctx context.Context, c *fiber.Ctx, sale *seckill.Sale, rec seckill.Restock) error {
	log := s.logFor(c).With("saleID", sale.ID, "sku", rec.SKU, "restockID", rec.ID)
	s.cfg.Redis.KnowSegments(sale.ID, sale.StockSegments)
	terms, _ := seckill.TermsOf(*sale, rec.SKU) // the caller found the variant
	res, err := s.cfg.Redis.Restock(ctx, rec, terms, s.cfg.IDs.Next)
	for _, a := range res.HandedTo {
		log.Info("restocked unit handed to the waitlist", "orderID", a.OrderID, "userID", a.UserID, "payBy", a.PayBy)
	}
	if res.Applied() {
		if markErr := s.cfg.Store.MarkRestockApplied(ctx, sale.ID, rec.ID); markErr != nil {
			// Redis holds the units; a retry finds them placed and marks it.
			return markErr
		}
		// This process at once; the others when the restock channel's
		// message reaches them (the script sends it when units go to the
		// stock).
		s.soldOut.clear(sale.ID)
		if err != nil {
			// Every unit is placed; a move to another segment did not land
			// yet: it is counted in flight, and reconciliation lands it.
			log.Warn("restock placed, a move left in flight", "error", err)
		}
		log.Info("sale restocked", "added", rec.Added, "handedToWaitlist", len(res.HandedTo))
		return nil
	}
	if err != nil {
		log.Warn("restock's Redis half failed", "error", err)
		return seckill.Errorf(seckill.CodeUnavailable, "the restock is recorded, but its units could not all be placed yet: send it again with the same Idempotency-Key (reconciliation places them otherwise)")
	}
	// seckill.RestockNotWarmed
	log.Warn("restock of a sale whose stock is not loaded in Redis; placed after its re-warm")
	return seckill.Errorf(seckill.CodeUnavailable, "the restock is recorded; the sale's stock is being loaded into Redis and its units are placed once it is: send it again with the same Idempotency-Key to see them")
}

// answerSale answers the sale as GET /sales/{id} does.
func (s *Server) answerSale(ctx context.Context, c *fiber.Ctx, id int64) error {
	sale, err := s.cfg.Store.Sale(ctx, id)
	if err != nil {
		return err
	}
	s.fillRemaining(ctx, []*seckill.Sale{sale})
	j := sale.JSON(time.Now())
	if j.State == seckill.StateSoldOut {
		j.Waitlist = s.waitlistOf(ctx, sale.ID)
	}
	return c.JSON(j)
}
