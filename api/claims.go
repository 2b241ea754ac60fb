package api

import (
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// HeaderIdempotencyKey makes a claim safe to retry: the same user sending
// the same key for the same sale gets the first answer again for 24 h.
const HeaderIdempotencyKey = "Idempotency-Key"

// ValidIdempotencyKey reports whether key is 1-255 printable ASCII
// characters, the space included (0x20-0x7E): what an HTTP header value
// carries as text, and the character set of the IETF draft's
// Idempotency-Key (a Structured Field string). docs/API.md's "1-255
// chars" means these; a byte outside them is refused, 400.
func ValidIdempotencyKey(key string) bool {
	if len(key) < 1 || len(key) > 255 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

var (
	errSoldOut   = seckill.Errorf(seckill.CodeSoldOut, "sold out")
	errSaleEnded = seckill.Errorf(seckill.CodeSaleEnded, "the sale has ended")
)

// notStarted is the answer to a claim or join the sale does not take yet:
// SALE_NOT_STARTED before starts_at; DRAW_IN_PROGRESS from then until the
// draw of a sale with a lobby is done (Redis holds its claims back until
// then), with a Retry-After.
func notStarted(c *fiber.Ctx, sale seckill.Sale) error {
	if sale.LobbyOpensAt != nil && !time.Now().Before(sale.StartsAt) {
		c.Set(fiber.HeaderRetryAfter, "2")
		return seckill.Errorf(seckill.CodeDrawInProgress, "the sale's draw is running; claims open when it is done")
	}
	return seckill.Errorf(seckill.CodeSaleNotStarted, "the sale starts at %s", sale.StartsAt.Format(time.RFC3339))
}

func errAlreadyClaimed(orderID int64) error {
	return &seckill.Error{Code: seckill.CodeAlreadyClaimed, Message: "you already have an active order for this sale", OrderID: orderID}
}

// errNotEnoughStock is NOT_ENOUGH_STOCK with the variant's units left.
func errNotEnoughStock(remaining int64) error {
	return &seckill.Error{Code: seckill.CodeNotEnoughStock, Message: "fewer units of this variant are left than the quantity asked", Remaining: &remaining}
}

// claimResponse is the 202: the order, what the buyer owes and until when.
// The order can be paid from this answer on.
type claimResponse struct {
	OrderID     string              `json:"order_id"`
	SaleID      string              `json:"sale_id"`
	SKU         string              `json:"sku"`
	Quantity    int                 `json:"quantity"`
	Status      seckill.OrderStatus `json:"status"`
	AmountCents int64               `json:"amount_cents"`
	Currency    string              `json:"currency"`
	PayBy       time.Time           `json:"pay_by"`
}

// claim admits or refuses one buyer with a single Lua script. It never
// waits on Temporal: the outbox relay starts the saga.
//
// A Redis error is ambiguous (the script may have run): the buyer gets 503
// and, on retry, ALREADY_CLAIMED with the order if it did. Nothing is rolled
// back on a guess; only the buyer's proof of work is given back, so that
// retry can show it (it finds the claim if the script ran, or is decided
// for the first time).
func (s *Server) claim(c *fiber.Ctx) (err error) {
	start := time.Now()
	outcome := seckill.Internal
	var saleID int64 // set once the sale is known to exist
	defer func() {
		s.metrics.claims.WithLabelValues(string(outcome)).Inc()
		s.metrics.claimSeconds.Observe(time.Since(start).Seconds())
		if saleID != 0 {
			s.funnel.add(saleID, outcome)
		}
	}()

	id, ok := parseID(c.Params("id"))
	if !ok {
		outcome = seckill.SaleNotFound
		return errNoSale
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.sales.get(ctx, id)
	if isNotFound(err) {
		outcome = seckill.SaleNotFound
		return errNoSale
	}
	if err != nil {
		return err
	}
	saleID = id
	item, err := itemOf(c, &sale)
	if err != nil {
		outcome = seckill.InvalidRequest
		return err
	}
	terms, _ := seckill.TermsOf(sale, item.SKU) // itemOf checked the sku
	terms.Member = member(c, &sale)
	idemKey := c.Get(HeaderIdempotencyKey)
	if idemKey != "" && !ValidIdempotencyKey(idemKey) {
		outcome = seckill.InvalidRequest
		return seckill.Errorf(seckill.CodeInvalidRequest, "%s: must be 1-255 printable ASCII characters (space included)", HeaderIdempotencyKey)
	}
	// The script checks the window against Redis' clock; this check and the
	// sold-out flag only spare Redis the obvious cases. With an
	// Idempotency-Key every answer comes from the script, which records it.
	//
	// The flag answers SOLD_OUT without asking who is claiming, so a buyer
	// who already holds an order gets SOLD_OUT rather than ALREADY_CLAIMED
	// while it is up; their order is unaffected (GET /orders/{id}). It
	// comes after the start check: the presale's members may sell a sale
	// out before it starts for everyone else.
	if idemKey == "" {
		if start.Before(sale.OpensAt(terms.Member)) {
			outcome = seckill.SaleNotStarted
			return notStarted(c, sale)
		}
		if len(sale.Variants) == 1 && s.soldOut.soldOut(saleID, start) {
			outcome = seckill.SoldOut
			return errSoldOut
		}
		if !start.Before(sale.EndsAt) {
			outcome = seckill.SaleEnded
			return errSaleEnded
		}
	}

	// The order id before the proof: a node whose lease this process
	// cannot confirm (it was paused) refuses at no cost to the buyer.
	orderID, err := s.cfg.IDs.Next()
	if err != nil {
		s.logFor(c).Warn("no order id", "saleID", saleID, "error", err)
		outcome = seckill.Unavailable
		return seckill.Errorf(seckill.CodeUnavailable, "claims are paused; try again shortly")
	}
	user := principal(c).UserID
	// After the refusals that cost nothing, so they burn no proof; an
	// answer that asks to try again gives it back.
	proof, err := s.takeProof(c, &sale, user, idemKey)
	if err != nil {
		outcome = seckill.Outcome(seckill.ErrorCode(err))
		return err
	}
	defer func() { s.giveProofBack(c, proof, err) }()
	res, err := s.cfg.Redis.Claim(ctx, saleID, user, orderID, idemKey, terms, item)
	if err != nil {
		s.logFor(c).Warn("claim script failed", "saleID", saleID, "error", err)
		outcome = seckill.Unavailable
		return seckill.Errorf(seckill.CodeUnavailable, "claims are paused; try again shortly")
	}
	outcome = res.Outcome
	if res.Replayed {
		// The first answer was counted; a repeat is not a second decision.
		outcome = seckill.Replayed
		c.Set("Idempotent-Replayed", "true")
	}
	switch res.Outcome {
	case seckill.Admitted:
		s.logFor(c).Info("claim admitted", "orderID", res.OrderID, "saleID", saleID, "replayed", res.Replayed)
		id := strconv.FormatInt(res.OrderID, 10)
		c.Location("/api/v1/orders/" + id)
		return c.Status(fiber.StatusAccepted).JSON(claimResponse{
			OrderID: id, SaleID: strconv.FormatInt(saleID, 10), SKU: item.SKU, Quantity: item.Quantity, Status: seckill.StatusQueued,
			AmountCents: terms.Amount(item.Quantity), Currency: sale.Currency, PayBy: res.PayBy,
		})
	case seckill.SoldOut:
		// The flag answers for the whole sale: only a sale of one variant
		// is sold out when one variant is. Units still moving between
		// parts may yet come (Tentative).
		if !res.Tentative && len(sale.Variants) == 1 {
			s.soldOut.set(saleID, start)
			s.funnel.markSoldOut(saleID, start)
		}
		return errSoldOut
	case seckill.NotEnoughStock:
		return errNotEnoughStock(res.Remaining)
	case seckill.KeyReused:
		return seckill.Errorf(seckill.CodeIdempotencyKeyReused, "this Idempotency-Key was used with another body; nothing was decided")
	case seckill.AlreadyClaimed:
		return errAlreadyClaimed(res.OrderID)
	case seckill.SaleNotStarted:
		return notStarted(c, sale)
	case seckill.SaleEnded:
		return errSaleEnded
	case seckill.RateLimited:
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(int64(math.Ceil(res.RetryAfter.Seconds())), 10))
		return seckill.Errorf(seckill.CodeRateLimited, "too many claims; try again in %s", res.RetryAfter.Round(time.Second))
	default: // seckill.Unavailable: fail closed until the stock is loaded again
		s.logFor(c).Warn("claim for a sale that is not warmed", "saleID", saleID)
		return seckill.Errorf(seckill.CodeUnavailable, "the sale's stock is being loaded; try again shortly")
	}
}
