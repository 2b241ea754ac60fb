package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// DefaultWaitlistMax bounds a sale's waitlist unless SECKILL_WAITLIST_MAX
// says otherwise.
const DefaultWaitlistMax = 100_000

// Where a buyer stands on a sale's waitlist (docs/API.md "Waitlist").
const (
	waitWaiting  = "WAITING"
	waitAdmitted = "ADMITTED"
	waitExpired  = "EXPIRED"
)

// waitlistEntry is a buyer's place on a sale's waitlist.
type waitlistEntry struct {
	SaleID   string `json:"sale_id"`
	UserID   string `json:"user_id"`
	SKU      string `json:"sku,omitempty"`
	Quantity int    `json:"quantity,omitempty"`
	Status   string `json:"status"`
	Position int64  `json:"position,omitempty"`
	OrderID  string `json:"order_id,omitempty"`
}

var errWaitlistPaused = seckill.Errorf(seckill.CodeUnavailable, "the waitlist is paused; try again shortly")

// joinWaitlist puts the caller on a sold-out sale's waitlist with one
// script: first come, first served, one entry per user, at most
// WaitlistMax entries. A unit still in stock goes to the caller at once
// (201 ADMITTED with the order): units never sit in stock while buyers
// wait, so the caller is first in line.
func (s *Server) joinWaitlist(c *fiber.Ctx) (err error) {
	outcome := seckill.Internal
	defer func() {
		if err != nil {
			outcome = seckill.Outcome(seckill.ErrorCode(err))
		}
		s.metrics.joins.WithLabelValues(string(outcome)).Inc()
	}()
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.saleOf(ctx, c)
	if err != nil {
		return err
	}
	item, err := itemOf(c, &sale)
	if err != nil {
		return err
	}
	terms, _ := seckill.TermsOf(sale, item.SKU) // itemOf checked the sku
	terms.Member = member(c, &sale)
	// The script checks the window against Redis' clock; these checks
	// spare it, and the buyer's proof of work, the obvious cases.
	now := time.Now()
	if now.Before(sale.OpensAt(terms.Member)) {
		return notStarted(c, sale)
	}
	if !now.Before(sale.EndsAt) {
		return errSaleEnded
	}
	// The order id (for a unit still in stock) before the proof, as a
	// claim's: a refusal for a lease this process cannot confirm burns none.
	orderID, err := s.cfg.IDs.Next()
	if err != nil {
		s.logFor(c).Warn("no order id", "saleID", sale.ID, "error", err)
		return errWaitlistPaused
	}
	user := principal(c).UserID
	proof, err := s.takeProof(c, &sale, user, "")
	if err != nil {
		return err
	}
	defer func() { s.giveProofBack(c, proof, err) }()
	joinedAt := time.Now()
	// The buyer's row before Redis (docs/DESIGN.md invariant 10): whoever
	// waits in Redis has a row, pending until keepPlace fills it, so the
	// audit can tell a lost row from a join never answered 201.
	pending := seckill.WaitlistEntry{SaleID: sale.ID, UserID: user, Item: item, JoinedAt: joinedAt}
	if err := s.cfg.Store.PendWaitlistEntry(ctx, pending); err != nil {
		s.logFor(c).Warn("the waitlist join is not recorded", "saleID", sale.ID, "error", err)
		return errWaitlistPaused
	}
	res, err := s.cfg.Redis.Join(ctx, sale.ID, user, item, s.cfg.WaitlistMax, orderID, terms)
	if err != nil {
		// The script may have run (its answer lost): the pending row
		// stays, saying the buyer may wait but was never told so.
		s.logFor(c).Warn("join script failed", "saleID", sale.ID, "error", err)
		return errWaitlistPaused
	}
	if res.Outcome == seckill.Waiting || res.Outcome == seckill.AlreadyWaiting {
		if err := s.keepPlace(ctx, c, pending); err != nil {
			s.logFor(c).Warn("the waitlist place is not saved", "saleID", sale.ID, "error", err)
			return errWaitlistPaused
		}
	} else {
		s.dropPending(ctx, c, sale.ID, user)
	}
	entry := waitlistEntry{SaleID: strconv.FormatInt(sale.ID, 10), UserID: user, SKU: item.SKU, Quantity: item.Quantity}
	switch res.Outcome {
	case seckill.Waiting:
		entry.Status, entry.Position = waitWaiting, res.Position
	case seckill.Admitted:
		s.logFor(c).Info("waitlist join admitted at once", "orderID", res.OrderID, "saleID", sale.ID)
		entry.Status, entry.OrderID = waitAdmitted, strconv.FormatInt(res.OrderID, 10)
		c.Location("/api/v1/orders/" + entry.OrderID)
	case seckill.AlreadyWaiting:
		return &seckill.Error{Code: seckill.CodeAlreadyWaiting, Message: "you are already on this sale's waitlist", Position: res.Position}
	case seckill.AlreadyClaimed:
		return errAlreadyClaimed(res.OrderID)
	case seckill.SaleNotStarted:
		return notStarted(c, sale)
	case seckill.SaleEnded:
		return errSaleEnded
	case seckill.WaitlistFull:
		return seckill.Errorf(seckill.CodeWaitlistFull, "the waitlist holds %s, its most", buyers(s.cfg.WaitlistMax))
	default: // Unavailable: the sale is not loaded in Redis
		return errWaitlistPaused
	}
	outcome = res.Outcome
	return c.Status(fiber.StatusCreated).JSON(entry)
}

// errPlaceGone is keepPlace's answer when the buyer's row is gone since
// the join wrote it.
var errPlaceGone = errors.New("the waitlist row is gone")

// keepPlace fills the buyer's row (pending, written before the join) with
// the place Redis gave them, before they are told (docs/DESIGN.md
// invariant 10), so a line Redis loses is rebuilt with them in it: a buyer
// answered 201 keeps their place. A failure is answered 503 and the
// buyer's retry (ALREADY_WAITING) fills it then; a retry of a place saved
// already keeps the first row. The row carries an order id of its own,
// never the join's (which a sale of several segments may have given
// another buyer's admission): the order the buyer gets if a re-warm
// serves them. A buyer served since the join needs no row (their pending
// one is dropped); one who waits nowhere and holds no claim is answered
// 503, their pending row kept, as is one whose segment Redis lost since
// the join (PlaceOf: ErrNotWarmed). The row is only filled, never written anew:
// when it is gone (a concurrent leave deleted it, or the line served the
// buyer and their order's write did) the answer is 503, and a pending row
// is put back as Redis may still hold the buyer in line, so they show as
// a join never answered 201 and not as a lost place; the retry sorts out
// which.
func (s *Server) keepPlace(ctx context.Context, c *fiber.Ctx, pending seckill.WaitlistEntry) error {
	e, ok, err := s.cfg.Redis.PlaceOf(ctx, pending.SaleID, pending.UserID)
	if err != nil {
		return err
	}
	if !ok {
		// Served since the join (the line admitted them: they hold a
		// claim) needs no row. Otherwise they left meanwhile, or a Redis
		// loss and a re-warm that read their row still pending came
		// between: either way no place is kept, so they are not told 201
		// (hostile review: a 201 with no row, lost to the re-warm).
		claim, err := s.cfg.Redis.ClaimOf(ctx, pending.SaleID, pending.UserID)
		if err != nil {
			return err
		}
		if claim == 0 {
			return errPlaceGone
		}
		s.dropPending(ctx, c, pending.SaleID, pending.UserID)
		return nil
	}
	if e.OrderID, err = s.cfg.IDs.Next(); err != nil {
		return err
	}
	e.JoinedAt = pending.JoinedAt
	kept, err := s.cfg.Store.FillWaitlistEntry(ctx, e)
	if err != nil || kept {
		return err
	}
	if err := s.cfg.Store.PendWaitlistEntry(ctx, pending); err != nil {
		return fmt.Errorf("%w, and no pending row is put back: %w", errPlaceGone, err)
	}
	return errPlaceGone
}

// dropPending deletes the buyer's pending row once Redis answered their
// join with no place (admitted at once, refused): nothing is in flight
// any more. A row with a place stays. A failure only leaves a pending row
// behind, which nothing reads as a place (docs/OPERATIONS.md), so the
// answer stands.
func (s *Server) dropPending(ctx context.Context, c *fiber.Ctx, saleID int64, user string) {
	if err := s.cfg.Store.DropPendingWaitlistEntry(ctx, saleID, user); err != nil {
		s.logFor(c).Warn("the pending waitlist row is not deleted", "saleID", saleID, "error", err)
	}
}

// buyers says n buyers in words: "1 buyer", "2 buyers".
func buyers(n int) string {
	if n == 1 {
		return "1 buyer"
	}
	return strconv.Itoa(n) + " buyers"
}

// waitlistMe says where the caller stands: WAITING with a position,
// ADMITTED with the order a unit became, EXPIRED once the sale ended while
// they waited; 404 NOT_WAITING when they never joined or left.
func (s *Server) waitlistMe(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.saleOf(ctx, c)
	if err != nil {
		return err
	}
	user := principal(c).UserID
	st, err := s.cfg.Redis.WaitStateOf(ctx, sale.ID, user)
	if err != nil {
		return errWaitlistPaused
	}
	entry := waitlistEntry{SaleID: strconv.FormatInt(sale.ID, 10), UserID: user}
	switch {
	case st.OrderID != 0:
		entry.Status, entry.OrderID = waitAdmitted, strconv.FormatInt(st.OrderID, 10)
	case st.Waiting && !time.Now().Before(sale.EndsAt):
		entry.Status = waitExpired
	case st.Waiting:
		entry.Status, entry.Position = waitWaiting, st.Position
	default:
		return seckill.Errorf(seckill.CodeNotWaiting, "you are not on this sale's waitlist")
	}
	return c.JSON(entry)
}

// leaveWaitlist takes the caller off the waitlist for good (joining again
// starts at the back). Their order, if the waitlist gave them one, stays.
func (s *Server) leaveWaitlist(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.saleOf(ctx, c)
	if err != nil {
		return err
	}
	user := principal(c).UserID
	// Leaving is final: a line rebuilt after a Redis loss must not bring
	// them back, so the database takes the place back first (the row turns
	// pending: nobody's place), then Redis takes them out of line, then the
	// row goes unless a join of theirs filled it with a later place. A failure of either of the first two is a 503, and the
	// retry does all three; a pending row left behind is nobody's place
	// (docs/OPERATIONS.md), so the answer stands.
	if err := s.cfg.Store.WithdrawWaitlistEntry(ctx, sale.ID, user); err != nil {
		s.logFor(c).Warn("the waitlist place is not taken back", "saleID", sale.ID, "error", err)
		return errWaitlistPaused
	}
	// The place Redis takes out; a join of the buyer's seated after it
	// (a later place) keeps its row.
	var place int64
	if e, ok, err := s.cfg.Redis.PlaceOf(ctx, sale.ID, user); err == nil && ok {
		place = e.Place
	}
	if _, err := s.cfg.Redis.Leave(ctx, sale.ID, user); err != nil {
		// Its keys not loaded: after the sale's end nobody waits any
		// more (and its keys expire); before it, a re-warm may be putting
		// the buyer back from rows read before the place was taken back,
		// so they must try again once it has (redisstore.ErrNotWarmed).
		if !errors.Is(err, seckill.ErrUnavailable) || time.Now().Before(sale.EndsAt) {
			return errWaitlistPaused
		}
	}
	if err := s.cfg.Store.DeleteLeftWaitlistEntry(ctx, sale.ID, user, place); err != nil {
		s.logFor(c).Warn("the pending waitlist row is not deleted", "saleID", sale.ID, "error", err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// saleOf is the sale the path's :id names, or SALE_NOT_FOUND.
func (s *Server) saleOf(ctx context.Context, c *fiber.Ctx) (seckill.Sale, error) {
	id, ok := parseID(c.Params("id"))
	if !ok {
		return seckill.Sale{}, errNoSale
	}
	sale, err := s.sales.get(ctx, id)
	if isNotFound(err) {
		return seckill.Sale{}, errNoSale
	}
	return sale, err
}
