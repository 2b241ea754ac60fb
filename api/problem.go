package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/requestid"

	"github.com/seckill/seckill"
)

// problem is an RFC 9457 problem document.
type problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail"`
	Code   seckill.Code `json:"code"`
	// OrderID accompanies ALREADY_CLAIMED.
	OrderID string `json:"order_id,omitempty"`
	// Position accompanies ALREADY_WAITING.
	Position int64 `json:"position,omitempty"`
	// Remaining accompanies NOT_ENOUGH_STOCK.
	Remaining *int64 `json:"remaining,omitempty"`
	// Entry accompanies ALREADY_ENTERED.
	Entry string `json:"entry,omitempty"`
}

var codeStatus = map[seckill.Code]int{
	seckill.CodeInvalidRequest:       http.StatusBadRequest,
	seckill.CodeBodyTooLarge:         http.StatusRequestEntityTooLarge,
	seckill.CodeUnauthenticated:      http.StatusUnauthorized,
	seckill.CodeForbidden:            http.StatusForbidden,
	seckill.CodeNotFound:             http.StatusNotFound,
	seckill.CodeSaleNotFound:         http.StatusNotFound,
	seckill.CodeSoldOut:              http.StatusConflict,
	seckill.CodeAlreadyEntered:       http.StatusConflict,
	seckill.CodeNotEnoughStock:       http.StatusConflict,
	seckill.CodeIdempotencyKeyReused: http.StatusUnprocessableEntity,
	seckill.CodeVariantNotFound:      http.StatusNotFound,
	seckill.CodeAlreadyClaimed:       http.StatusConflict,
	seckill.CodeSaleNotStarted:       http.StatusConflict,
	seckill.CodeSaleEnded:            http.StatusConflict,
	seckill.CodeRateLimited:          http.StatusTooManyRequests,
	seckill.CodeUnavailable:          http.StatusServiceUnavailable,
	seckill.CodeOrderNotFound:        http.StatusNotFound,
	seckill.CodeOrderNotCancellable:  http.StatusConflict,
	seckill.CodeInvalidSignature:     http.StatusBadRequest,
	seckill.CodeMalformedEvent:       http.StatusBadRequest,
	seckill.CodeOrderNotPayable:      http.StatusConflict,
	seckill.CodeAlreadyWaiting:       http.StatusConflict,
	seckill.CodeWaitlistFull:         http.StatusConflict,
	seckill.CodeNotWaiting:           http.StatusNotFound,
	seckill.CodeLobbyNotOpen:         http.StatusConflict,
	seckill.CodeLobbyClosed:          http.StatusConflict,
	seckill.CodeNoLobby:              http.StatusConflict,
	seckill.CodeNotInLobby:           http.StatusNotFound,
	seckill.CodeDrawInProgress:       http.StatusConflict,
	seckill.CodeProofRequired:        http.StatusForbidden,
	seckill.CodeInternal:             http.StatusInternalServerError,
}

// Status returns the HTTP status of code.
func Status(code seckill.Code) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorHandler maps every error a handler returns to problem+json. Domain
// errors keep their message; seckill.ErrUnavailable is a 503 UNAVAILABLE
// with Retry-After; anything else is a 500. The cause of either is
// logged, never shown.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var (
			dErr *seckill.Error
			fErr *fiber.Error
		)
		if errors.As(err, &fErr) && fErr.Code == http.StatusRequestTimeout {
			// No whole request arrived within ReadTimeout, most often a
			// connection a client opened and never used. A bare 408 is what
			// HTTP clients read as "the server closed an idle connection"
			// (Go's transport drops it silently, others retry), where a
			// problem answer could be taken for the answer to a request
			// sent at that moment.
			c.Context().SetConnectionClose()
			return c.SendStatus(http.StatusRequestTimeout)
		}
		switch {
		case errors.As(err, &dErr):
		case errors.As(err, &fErr):
			dErr = fromFiber(fErr)
		case errors.Is(err, seckill.ErrUnavailable):
			// The database (or another dependency) cannot be reached now:
			// nothing is wrong with the request, and the same request
			// later may succeed. A provider retries its webhook, a buyer's
			// client the read.
			log.Warn("dependency unavailable", "method", c.Method(), "path", c.Path(),
				"requestID", c.Locals(requestid.ConfigDefault.ContextKey), "error", err)
			dErr = seckill.Errorf(seckill.CodeUnavailable, "a dependency cannot be reached now; try again shortly")
		default:
			log.Error("request failed", "method", c.Method(), "path", c.Path(),
				"requestID", c.Locals(requestid.ConfigDefault.ContextKey), "error", err)
			dErr = seckill.Errorf(seckill.CodeInternal, "internal error")
		}
		status := Status(dErr.Code)
		p := problem{
			Type:   "urn:seckill:problem:" + string(dErr.Code),
			Title:  http.StatusText(status),
			Status: status,
			Detail: dErr.Message,
			Code:   dErr.Code,
		}
		if dErr.OrderID != 0 {
			p.OrderID = strconv.FormatInt(dErr.OrderID, 10)
		}
		p.Position, p.Remaining, p.Entry = dErr.Position, dErr.Remaining, dErr.Entry
		switch status {
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			if c.GetRespHeader(fiber.HeaderRetryAfter) == "" {
				c.Set(fiber.HeaderRetryAfter, "1")
			}
		case http.StatusUnauthorized:
			c.Set(fiber.HeaderWWWAuthenticate, wwwAuthenticate)
		}
		c.Status(status)
		if err := c.JSON(p); err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, "application/problem+json")
		return nil
	}
}

func fromFiber(e *fiber.Error) *seckill.Error {
	switch e.Code {
	case http.StatusRequestEntityTooLarge:
		return seckill.Errorf(seckill.CodeBodyTooLarge, "request body is larger than %d KiB", MaxBody>>10)
	case http.StatusNotFound:
		return seckill.Errorf(seckill.CodeNotFound, "no such resource")
	case http.StatusMethodNotAllowed:
		return seckill.Errorf(seckill.CodeNotFound, "no such resource for this method")
	case http.StatusBadRequest:
		return seckill.Errorf(seckill.CodeInvalidRequest, "%s", e.Message)
	case http.StatusServiceUnavailable:
		return seckill.Errorf(seckill.CodeUnavailable, "service unavailable")
	}
	if e.Code >= 500 {
		return seckill.Errorf(seckill.CodeInternal, "internal error")
	}
	return seckill.Errorf(seckill.CodeInvalidRequest, "%s", e.Message)
}
