package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// DemoTokenTTL is how long a demo sign-in token lasts.
const DemoTokenTTL = 24 * time.Hour

// demoSignIn hands out a user token (never an admin one) for the name in
// the body: {"user_id": "alice"}. Only with DevTools.SignIn.
func (s *Server) demoSignIn(c *fiber.Ctx) error {
	var req struct {
		UserID *string `json:"user_id"`
	}
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if req.UserID == nil || !auth.ValidSubject(*req.UserID) {
		return invalid("user_id", "must be 1-255 printable ASCII characters")
	}
	// The token the API itself accepts: signed by its shared secret, with
	// its audience (the dev sign-in is off with an identity provider).
	signer, ok := s.cfg.Auth.(interface {
		Sign(user string, admin bool, ttl time.Duration) (string, error)
	})
	if !ok {
		return fiber.ErrNotFound
	}
	tok, err := signer.Sign(*req.UserID, false, DemoTokenTTL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"token": tok, "user_id": *req.UserID, "expires_at": time.Now().Add(DemoTokenTTL).UTC()})
}

// devCheckout is the dev payment provider taking a payment: it charges the
// order's amount and tells the shop through the payment webhook, over
// HTTP, with a Stripe-style event signed with the webhook secret, exactly
// as a real provider would. Body: {"outcome": "succeeded" | "failed"}.
// The owner (or an admin) may pay; like a real provider it charges an order
// in any state, and the shop refunds what it cannot honour.
func (s *Server) devCheckout(c *fiber.Ctx) error {
	var req struct {
		Outcome *string `json:"outcome"`
	}
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	var typ seckill.PaymentEventType
	switch {
	case req.Outcome == nil:
		return invalid("outcome", "is required")
	case *req.Outcome == "succeeded":
		typ = seckill.PaymentSucceeded
	case *req.Outcome == "failed":
		typ = seckill.PaymentFailed
	default:
		return invalid("outcome", `must be "succeeded" or "failed"`)
	}
	ctx, cancel := s.reqCtx(c)
	o, err := s.visibleOrder(ctx, c)
	cancel()
	if err != nil {
		return err
	}
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	eventID := "evt_dev_" + hex.EncodeToString(nonce)
	now := time.Now()
	body := EventBody(seckill.PaymentEvent{
		EventID: eventID, Type: typ, PaymentIntentID: "pi_dev_" + hex.EncodeToString(nonce),
		AmountCents: o.AmountCents, Currency: o.Currency,
	}, o.ID, now)
	status, err := s.sendDevEvent(c, body)
	if err != nil {
		s.logFor(c).Warn("dev checkout: webhook", "orderID", o.ID, "saleID", o.SaleID, "error", err)
		return seckill.Errorf(seckill.CodeUnavailable, "the shop could not be told about the payment; try again")
	}
	if status != http.StatusOK {
		s.logFor(c).Warn("dev checkout: webhook refused", "orderID", o.ID, "saleID", o.SaleID, "status", status)
		return seckill.Errorf(seckill.CodeUnavailable, "the shop did not accept the payment event (HTTP %d); try again", status)
	}
	s.logFor(c).Info("dev checkout: payment sent", "orderID", o.ID, "saleID", o.SaleID, "eventID", eventID, "type", typ)
	return c.JSON(fiber.Map{"event_id": eventID, "type": typ, "order_id": strconv.FormatInt(o.ID, 10)})
}

// devDeliveryTries bounds how often the dev provider sends one event while
// the webhook answers 503 (the event could not be recorded: the database
// out of reach). Each try waits for the webhook's answer up to twice the
// API's request timeout: the webhook's own work is bounded by one, so its
// answer comes back rather than the provider giving up first.
const devDeliveryTries = 4

// sendDevEvent posts one payment event to the shop's webhook, signed anew
// for each try, and sends the same event again while the webhook answers
// 503, as a real provider retries an event (same id, so it is recorded
// once and delivered once). It returns the last status.
func (s *Server) sendDevEvent(c *fiber.Ctx, body []byte) (int, error) {
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*s.cfg.RequestTimeout)
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.selfURL+"/api/v1/payments/webhook", bytes.NewReader(body))
		if err != nil {
			cancel()
			return 0, err
		}
		hreq.Header.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		hreq.Header.Set("Stripe-Signature", Sign(body, s.cfg.WebhookSecret, time.Now()))
		resp, err := s.http.Do(hreq)
		if err != nil {
			cancel()
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusServiceUnavailable || try == devDeliveryTries {
			return resp.StatusCode, nil
		}
		select {
		case <-c.UserContext().Done():
			return resp.StatusCode, nil
		case <-time.After(time.Duration(try) * 500 * time.Millisecond):
		}
	}
}
