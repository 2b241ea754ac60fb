package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/tracing"
)

// stripeEvent is the part of a Stripe event seckill reads.
type stripeEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Data    *struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

type paymentIntent struct {
	ID       string            `json:"id"`
	Amount   int64             `json:"amount"`
	Currency string            `json:"currency"`
	Metadata map[string]string `json:"metadata"`
}

// EventBody is the Stripe-style webhook body of ev for orderID, as a
// payment provider sends it: what ParseEvent reads back. The dev provider
// (`seckill pay`), the chaos suite and the benchmark send these, signed
// with Sign.
func EventBody(ev seckill.PaymentEvent, orderID int64, created time.Time) []byte {
	b, _ := json.Marshal(map[string]any{ // plain strings and numbers: cannot fail
		"id": ev.EventID, "object": "event", "type": string(ev.Type), "created": created.Unix(),
		"data": map[string]any{"object": map[string]any{
			"id": ev.PaymentIntentID, "object": "payment_intent", "amount": ev.AmountCents, "currency": ev.Currency,
			"metadata": map[string]string{"order_id": strconv.FormatInt(orderID, 10)},
		}},
	})
	return b
}

// ParseEvent parses a webhook body into the payment event it carries. It
// fails for a body that is not a Stripe event (MALFORMED_EVENT). For a
// handled type, orderID is the metadata's order_id (0 when missing or not
// an id: the event is kept for operators).
func ParseEvent(body []byte) (ev seckill.PaymentEvent, orderID int64, err error) {
	var se stripeEvent
	if err := json.Unmarshal(body, &se); err != nil {
		return ev, 0, errors.New("body is not a JSON event")
	}
	if se.ID == "" || len(se.ID) > 255 || se.Type == "" || len(se.Type) > 255 || se.Data == nil ||
		len(bytes.TrimSpace(se.Data.Object)) == 0 || bytes.TrimSpace(se.Data.Object)[0] != '{' {
		return ev, 0, errors.New("event needs id, type and data.object")
	}
	ev.EventID, ev.Type = se.ID, seckill.PaymentEventType(se.Type)
	if ev.Type != seckill.PaymentSucceeded && ev.Type != seckill.PaymentFailed {
		return ev, 0, nil
	}
	var pi paymentIntent
	if err := json.Unmarshal(se.Data.Object, &pi); err != nil {
		return ev, 0, errors.New("data.object is not a payment intent")
	}
	ev.PaymentIntentID, ev.AmountCents, ev.Currency = pi.ID, pi.Amount, strings.ToLower(pi.Currency)
	if id, ok := parseID(pi.Metadata["order_id"]); ok {
		orderID = id
	}
	return ev, orderID, nil
}

// webhook records a signed provider event and delivers it to the order's
// saga.
//
// Delivery is a Signal, not an Update: the server accepts a signal durably
// even while no worker runs, so the provider's 200 does not depend on
// worker health, and the saga (the single writer of the order) decides
// what the payment does, recording the outcome on the event row. The event
// row is written first, unique by event id; delivered_at makes a redelivery
// after a failed signal try again, and the saga ignores event ids it has
// seen, so concurrent duplicates change the order once.
func (s *Server) webhook(c *fiber.Ctx) (err error) {
	outcome := seckill.OutcomeReceived
	defer func() {
		// The label is the event's outcome, or the error code the
		// provider was answered with (INVALID_SIGNATURE, UNAVAILABLE...).
		label := string(outcome)
		if err != nil {
			label = string(seckill.ErrorCode(err))
		}
		s.metrics.webhooks.WithLabelValues(label).Inc()
	}()

	body := c.Body()
	if err := VerifySignature(c.Get("Stripe-Signature"), body, s.cfg.WebhookSecret, time.Now()); err != nil {
		return seckill.Errorf(seckill.CodeInvalidSignature, "%s", err)
	}
	ev, orderID, err := ParseEvent(body)
	if err != nil {
		return seckill.Errorf(seckill.CodeMalformedEvent, "%s", err)
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	var order *seckill.Order // read once, for the trace link and the log line
	if s.cfg.Tracing && orderID != 0 {
		order = s.linkOrderTrace(ctx, orderID)
	}

	handled := ev.Type == seckill.PaymentSucceeded || ev.Type == seckill.PaymentFailed
	initial := seckill.OutcomeReceived
	switch {
	case !handled:
		initial = seckill.OutcomeIgnored
	case orderID == 0:
		initial = seckill.OutcomeUnknownOrder
	}
	stored, inserted, err := s.cfg.Store.RecordPaymentEvent(ctx, seckill.PaymentRecord{
		ID: ev.EventID, Type: string(ev.Type), OrderID: orderID, PaymentIntentID: ev.PaymentIntentID,
		AmountCents: ev.AmountCents, Currency: ev.Currency, Payload: body, Outcome: initial,
	})
	if err != nil {
		return err
	}
	outcome = stored.Outcome
	if !inserted && stored.DeliveredAt != nil || stored.Outcome != seckill.OutcomeReceived {
		return c.JSON(fiber.Map{"received": true, "outcome": stored.Outcome})
	}
	ev.ReceivedAt = stored.ReceivedAt.UTC()
	outcome, err = s.cfg.Delivery.Deliver(ctx, ev, orderID)
	if err != nil {
		// Recorded, not delivered (delivered_at stays empty): the answer
		// is the 200 docs/API.md promises once an event is recorded, and
		// reconciliation delivers it (payment_undelivered), as does a
		// redelivery by the provider. Not yet deliverable (a claim
		// admitted moments ago, a saga being restarted) is no failure.
		switch {
		case errors.Is(err, seckill.ErrPaymentNotYet):
		case errors.Is(err, seckill.ErrTemporal):
			s.metrics.signalErrors.Inc()
			fallthrough
		default:
			s.logFor(c).Warn("deliver payment event; recorded, reconciliation delivers it",
				"eventID", ev.EventID, "orderID", orderID, "error", err)
		}
		outcome = seckill.OutcomeReceived
		return c.JSON(fiber.Map{"received": true, "outcome": outcome})
	}
	log := s.logFor(c)
	if order == nil {
		order, _ = s.cfg.Store.Order(ctx, orderID)
	}
	if order != nil {
		log = log.With("saleID", order.SaleID, "userID", order.UserID)
	}
	log.Info("payment event delivered", "eventID", ev.EventID, "type", ev.Type, "orderID", orderID, "outcome", outcome)
	return c.JSON(fiber.Map{"received": true, "outcome": outcome})
}

// linkOrderTrace links the webhook's span to its order's trace (docs/API.md
// "Tracing"): the payment is its own request, the order's saga another
// trace, and an operator following either finds the other. Best effort;
// it returns the order it read (nil when none).
func (s *Server) linkOrderTrace(ctx context.Context, orderID int64) *seckill.Order {
	o, err := s.cfg.Store.Order(ctx, orderID)
	if err != nil {
		return nil
	}
	if o.TraceParent == "" {
		return o
	}
	sc := trace.SpanContextFromContext(tracing.WithTraceParent(context.Background(), o.TraceParent))
	if sc.IsValid() {
		trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: sc,
			Attributes: []attribute.KeyValue{attribute.Int64("seckill.order_id", orderID)}})
	}
	return o
}
