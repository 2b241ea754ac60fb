package api

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"go.opentelemetry.io/otel/trace"
)

// HeaderRequestID carries the request id: taken from the client when it
// sends one, made up otherwise, and always answered.
const HeaderRequestID = fiber.HeaderXRequestID

// logFor is the logger for one request: every line carries its requestID,
// and the caller's userID once authenticated. Handlers add orderID and
// saleID, so one claim's lines can be followed from the HTTP request
// through its saga (whose lines carry the same orderID, saleID and userID).
func (s *Server) logFor(c *fiber.Ctx) *slog.Logger {
	l := s.cfg.Log
	if id, ok := c.Locals(requestid.ConfigDefault.ContextKey).(string); ok {
		l = l.With("requestID", id)
	}
	if p := principal(c); p.UserID != "" {
		l = l.With("userID", p.UserID)
	}
	if sc := trace.SpanContextFromContext(c.UserContext()); sc.IsValid() {
		// The request's span (tracing on): its lines join its trace.
		l = l.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
	}
	return l
}
