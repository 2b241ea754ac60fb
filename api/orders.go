package api

import (
	"context"
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/idgen"
	"github.com/seckill/seckill/workflows"
)

var errNoOrder = seckill.Errorf(seckill.CodeOrderNotFound, "no such order")

func (s *Server) getOrder(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	o, err := s.visibleOrder(ctx, c)
	if err != nil {
		return err
	}
	return c.JSON(o.JSON())
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

// findOrder is visibleOrder for an id already parsed.
func (s *Server) findOrder(ctx context.Context, id int64, p Principal) (*seckill.Order, error) {
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
// yet: in the caller's Redis claims (owner), or for an admin in the saga
// Temporal already has. nil when there is none.
func (s *Server) queuedOrder(ctx context.Context, id int64, p Principal) (*seckill.Order, error) {
	sales, err := s.cfg.Scripts.Client().ZRange(ctx, s.cfg.Scripts.ActiveSalesKey(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	for _, sid := range sales {
		saleID, err := strconv.ParseInt(sid, 10, 64)
		if err != nil {
			continue
		}
		held, err := s.cfg.Scripts.ClaimOf(ctx, saleID, p.UserID)
		if err != nil {
			return nil, err
		}
		if held == id {
			return s.queued(ctx, id, saleID, p.UserID)
		}
	}
	if !p.Admin {
		return nil, nil
	}
	desc, err := s.cfg.Temporal.DescribeWorkflowExecution(ctx, seckill.OrderWorkflowID(id), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	attrs := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	var saleIDStr, user string
	if err := converter.GetDefaultDataConverter().FromPayload(attrs[seckill.SaleIDAttr.GetName()], &saleIDStr); err != nil {
		return nil, nil
	}
	if err := converter.GetDefaultDataConverter().FromPayload(attrs[seckill.UserIDAttr.GetName()], &user); err != nil {
		return nil, nil
	}
	saleID, err := strconv.ParseInt(saleIDStr, 10, 64)
	if err != nil {
		return nil, nil
	}
	// The row may have been written meanwhile.
	if o, err := s.cfg.Store.Order(ctx, id); err == nil {
		return o, nil
	}
	return s.queued(ctx, id, saleID, user)
}

func (s *Server) queued(ctx context.Context, id, saleID int64, user string) (*seckill.Order, error) {
	sale, err := s.sales.get(ctx, saleID)
	if err != nil {
		return nil, err
	}
	return &seckill.Order{
		ID: id, SaleID: saleID, UserID: user, Status: seckill.StatusQueued,
		AmountCents: sale.PriceCents, Currency: sale.Currency, CreatedAt: idgen.Time(id),
	}, nil
}

// cancelOrder asks the order's saga to close it (CANCELLED). The owner only.
// An order not yet relayed gets its saga started with the cancel already in
// it (signal-with-start, same ID and options as the relay), so the cancel
// can never be lost nor start a second saga.
func (s *Server) cancelOrder(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	o, err := s.visibleOrder(ctx, c)
	if err != nil {
		return err
	}
	if o.UserID != principal(c).UserID {
		return errNoOrder
	}
	if o.Status.Terminal() {
		return seckill.Errorf(seckill.CodeOrderNotCancellable, "the order is %s", o.Status)
	}
	in := seckill.SagaInput{OrderID: o.ID, SaleID: o.SaleID, UserID: o.UserID, AdmittedAt: o.CreatedAt}
	_, err = s.cfg.Temporal.SignalWithStartWorkflow(ctx, seckill.OrderWorkflowID(o.ID), seckill.CancelSignal, nil,
		workflows.StartOptions(in, s.cfg.TaskQueue), seckill.OrderSagaWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
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
