package api

import (
	"context"
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/idgen"
)

var errNoOrder = seckill.Errorf(seckill.CodeOrderNotFound, "no such order")

func (s *Server) getOrder(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	o, err := s.visibleOrder(ctx, c)
	if err != nil {
		return err
	}
	return c.JSON(view(o, principal(c)))
}

// view is o's wire form for p: with the payment's client secret for its
// owner only (docs/API.md).
func view(o *seckill.Order, p auth.Principal) seckill.OrderJSON {
	if o.UserID == p.UserID {
		return o.OwnerView()
	}
	return o.JSON()
}

// listOrders answers the caller's orders of one sale, newest first
// (?sale_id=, required; an admin may add &user_id=), the one Redis has
// admitted but whose saga has not written it yet included, as QUEUED: a
// buyer who reloads the page finds their order at once.
func (s *Server) listOrders(c *fiber.Ctx) error {
	saleID, ok := parseID(c.Query("sale_id"))
	if !ok {
		return invalid("sale_id", "is required: a sale id")
	}
	p := principal(c)
	user := p.UserID
	if other := c.Query("user_id"); other != "" {
		if !p.Admin {
			return invalid("user_id", "only an admin may list another user's orders")
		}
		user = other
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	orders, err := s.cfg.Store.OrdersOf(ctx, saleID, user)
	if err != nil {
		return err
	}
	out := make([]seckill.OrderJSON, 0, len(orders)+1)
	held, err := s.cfg.Redis.ClaimOf(ctx, saleID, user)
	if err != nil {
		return err
	}
	listed := held == 0
	for _, o := range orders {
		listed = listed || o.ID == held
	}
	if !listed {
		// Admitted, its row not written yet: the newest of all.
		o, err := s.queuedOrder(ctx, held, auth.Principal{UserID: user})
		if err != nil {
			return err
		}
		if o != nil && o.SaleID == saleID {
			out = append(out, view(o, p))
		}
	}
	for _, o := range orders {
		out = append(out, view(o, p))
	}
	return c.JSON(out)
}

// visibleOrder finds the order of the path for the caller: its owner or an
// admin. Anyone else gets ORDER_NOT_FOUND, as if it did not exist, so ids
// cannot be probed.
func (s *Server) visibleOrder(ctx context.Context, c *fiber.Ctx) (*seckill.Order, error) {
	id, ok := parseID(c.Params("id"))
	if !ok {
		return nil, errNoOrder
	}
	return s.findOrder(ctx, id, principal(c))
}

// ownOrder is the order of the path if the caller owns it (an admin
// acts on nobody's behalf): ORDER_NOT_FOUND otherwise.
func (s *Server) ownOrder(ctx context.Context, c *fiber.Ctx) (*seckill.Order, error) {
	o, err := s.visibleOrder(ctx, c)
	if err != nil {
		return nil, err
	}
	if o.UserID != principal(c).UserID {
		return nil, errNoOrder
	}
	return o, nil
}

// findOrder is visibleOrder for an id already parsed.
func (s *Server) findOrder(ctx context.Context, id int64, p auth.Principal) (*seckill.Order, error) {
	o, err := s.cfg.Store.Order(ctx, id)
	if isNotFound(err) {
		o, err = s.queuedOrder(ctx, id, p)
	}
	if err != nil {
		return nil, err
	}
	if o == nil || (o.UserID != p.UserID && !p.Admin) {
		return nil, errNoOrder
	}
	return o, nil
}

// queuedOrder finds an admitted order whose saga has not written its row
// yet, in the admissions Redis keeps per sale, and answers it QUEUED with
// the pay_by fixed at admission. A claim admitted before admissions were
// kept (an older release), or whose admission Redis lost, is found by its
// owner in the sale's claims. nil when there is none.
func (s *Server) queuedOrder(ctx context.Context, id int64, p auth.Principal) (*seckill.Order, error) {
	sales, err := s.cfg.Redis.ActiveSales(ctx)
	if err != nil {
		return nil, err
	}
	adm, ok, err := s.cfg.Redis.Admission(ctx, id, sales)
	if err != nil {
		return nil, err
	}
	if !ok {
		for _, saleID := range sales {
			held, err := s.cfg.Redis.ClaimOf(ctx, saleID, p.UserID)
			if err != nil {
				return nil, err
			}
			if held == id {
				adm, ok = seckill.Admission{OrderID: id, SaleID: saleID, UserID: p.UserID}, true
				break
			}
		}
	}
	if !ok {
		return nil, nil
	}
	// The row may have been written meanwhile.
	if o, err := s.cfg.Store.Order(ctx, id); err == nil {
		return o, nil
	}
	sale, err := s.sales.get(ctx, adm.SaleID)
	if err != nil {
		return nil, err
	}
	item := adm.Item.OrDefault()
	terms, _ := seckill.TermsOf(sale, item.SKU)
	o := &seckill.Order{
		ID: id, SaleID: adm.SaleID, UserID: adm.UserID, Item: item, Status: seckill.StatusQueued,
		AmountCents: terms.Amount(item.Quantity), Currency: sale.Currency, CreatedAt: idgen.Time(id), Drawn: adm.Drawn,
	}
	// Without the admission's pay_by (a claim found by its owner) it is
	// what the saga's row will hold (store.StartOrder), from the
	// admission's time, the order id's. The contract's QUEUED order always
	// has a pay_by.
	payBy := adm.PayBy
	if payBy.IsZero() {
		payBy = sale.PayBy(idgen.Time(id))
	}
	o.PayBy = &payBy
	// The buyer may have asked for the payment object already.
	if o.Payment, err = s.cfg.Store.PaymentIntentOf(ctx, id); err != nil {
		return nil, err
	}
	return o, nil
}

// createPayment makes the order's payment object at the provider (a
// Stripe PaymentIntent) and answers the order with it, client secret
// included: the owner only, while the order is QUEUED or
// AWAITING_PAYMENT. Idempotent: the provider is asked with one key derived
// from the order id (the saga uses the same), and the first object
// recorded stays.
func (s *Server) createPayment(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	o, err := s.ownOrder(ctx, c)
	if err != nil {
		return err
	}
	if s.cfg.Payments == nil {
		return seckill.Errorf(seckill.CodeNotFound, "this shop takes payments with the dev provider (SECKILL_PAYMENT_PROVIDER=dev): pay on its checkout, no payment object is needed")
	}
	if o.Status.Terminal() {
		return seckill.Errorf(seckill.CodeOrderNotPayable, "the order is %s", o.Status)
	}
	if o.Payment == nil {
		in, err := s.cfg.Payments.CreateIntent(ctx, seckill.IntentRequest{OrderID: o.ID, AmountCents: o.AmountCents, Currency: o.Currency})
		if err != nil {
			s.logFor(c).Warn("create payment intent", "orderID", o.ID, "error", err)
			return seckill.Errorf(seckill.CodeUnavailable, "the payment provider did not answer; try again shortly")
		}
		saved, err := s.cfg.Store.SavePaymentIntent(ctx, o.ID, in)
		if err != nil {
			return err
		}
		o.Payment = &saved
		s.logFor(c).Info("payment intent created", "orderID", o.ID, "provider", saved.Provider, "paymentIntentID", saved.ID)
	}
	return c.JSON(o.OwnerView())
}

// cancelOrder asks the order's saga to close it (CANCELLED). The owner only.
// An order not yet relayed gets its saga started with the cancel already in
// it (signal-with-start, same ID and options as the relay), so the cancel
// can never be lost nor start a second saga; the saga gets the input the
// relay would have given it, the draw's mark included, so the order row
// says whether the draw admitted it.
func (s *Server) cancelOrder(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	o, err := s.ownOrder(ctx, c)
	if err != nil {
		return err
	}
	if o.Status.Terminal() {
		return seckill.Errorf(seckill.CodeOrderNotCancellable, "the order is %s", o.Status)
	}
	in := seckill.SagaInput{OrderID: o.ID, SaleID: o.SaleID, UserID: o.UserID, AdmittedAt: o.CreatedAt,
		AmountCents: o.AmountCents, Currency: o.Currency, Drawn: o.Drawn, Item: o.Item}
	if o.PayBy != nil {
		in.PayBy = *o.PayBy
	}
	err = s.cfg.Sagas.Cancel(ctx, in)
	if errors.Is(err, seckill.ErrOrderDecided) {
		// The saga has finished meanwhile: it is paid or closed now.
		return seckill.Errorf(seckill.CodeOrderNotCancellable, "the order is already decided")
	}
	if err != nil {
		s.logFor(c).Warn("signal cancel", "orderID", o.ID, "saleID", o.SaleID, "error", err)
		return seckill.Errorf(seckill.CodeUnavailable, "the order could not be cancelled now; try again shortly")
	}
	s.logFor(c).Info("order cancel requested", "orderID", o.ID, "saleID", o.SaleID)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_id": strconv.FormatInt(o.ID, 10), "status": o.Status})
}
