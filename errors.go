package seckill

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code of the public contract.
type Code string

// Error codes of docs/API.md. Internal is never shown with its cause.
const (
	CodeInvalidRequest       Code = "INVALID_REQUEST"
	CodeBodyTooLarge         Code = "BODY_TOO_LARGE"
	CodeUnauthenticated      Code = "UNAUTHENTICATED"
	CodeForbidden            Code = "FORBIDDEN"
	CodeNotFound             Code = "NOT_FOUND"
	CodeSaleNotFound         Code = "SALE_NOT_FOUND"
	CodeSoldOut              Code = "SOLD_OUT"
	CodeAlreadyClaimed       Code = "ALREADY_CLAIMED"
	CodeSaleNotStarted       Code = "SALE_NOT_STARTED"
	CodeSaleEnded            Code = "SALE_ENDED"
	CodeRateLimited          Code = "RATE_LIMITED"
	CodeUnavailable          Code = "UNAVAILABLE"
	CodeOrderNotFound        Code = "ORDER_NOT_FOUND"
	CodeOrderNotCancellable  Code = "ORDER_NOT_CANCELLABLE"
	CodeInvalidSignature     Code = "INVALID_SIGNATURE"
	CodeMalformedEvent       Code = "MALFORMED_EVENT"
	CodeOrderNotPayable      Code = "ORDER_NOT_PAYABLE"
	CodeAlreadyWaiting       Code = "ALREADY_WAITING"
	CodeWaitlistFull         Code = "WAITLIST_FULL"
	CodeNotWaiting           Code = "NOT_WAITING"
	CodeLobbyNotOpen         Code = "LOBBY_NOT_OPEN"
	CodeLobbyClosed          Code = "LOBBY_CLOSED"
	CodeNoLobby              Code = "NO_LOBBY"
	CodeNotInLobby           Code = "NOT_IN_LOBBY"
	CodeDrawInProgress       Code = "DRAW_IN_PROGRESS"
	CodeProofRequired        Code = "PROOF_REQUIRED"
	CodeNotEnoughStock       Code = "NOT_ENOUGH_STOCK"
	CodeIdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED"
	CodeVariantNotFound      Code = "VARIANT_NOT_FOUND"
	CodeAlreadyEntered       Code = "ALREADY_ENTERED"
	CodeInternal             Code = "INTERNAL"
)

// Error is a domain error: a code the API maps to an HTTP status and a
// message safe to show to the client.
type Error struct {
	Code    Code
	Message string
	// OrderID accompanies ALREADY_CLAIMED: the user's active order.
	OrderID int64
	// Position accompanies ALREADY_WAITING: the user's place in line.
	Position int64
	// Remaining accompanies NOT_ENOUGH_STOCK: the variant's units left.
	Remaining *int64
	// Entry accompanies ALREADY_ENTERED: the buyer's lobby entry (hex).
	Entry string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain,
// CodeUnavailable for an ErrUnavailable, or CodeInternal for any other
// non-nil error.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, ErrUnavailable) {
		return CodeUnavailable
	}
	return CodeInternal
}

// Errors the adapters return and their consumers test for with errors.Is.
var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrOrderDecided: the order's saga has finished; the order is PAID
	// or CLOSED.
	ErrOrderDecided = errors.New("the order's saga has finished")
	// ErrPaymentNotYet: the order's saga cannot take a payment now (not
	// started yet, or lost and about to be restarted by reconciliation):
	// the event stays recorded and undelivered, and is delivered later.
	ErrPaymentNotYet = errors.New("the order's saga is not running yet")
	// ErrTemporal: a call to Temporal failed (a payment's signal to its
	// saga, a refund's start): nothing happened, and it is tried again.
	// Wrapped alongside the call's own error, which keeps its message.
	ErrTemporal = errors.New("temporal")
	// ErrUnavailable: a dependency cannot be reached now (PostgreSQL
	// refused or dropped the connection, is shutting down, or no
	// connection came free before the deadline): the call did not
	// complete, and is to be tried again later. Wrapped alongside the
	// cause, which keeps its message. The API answers it 503 UNAVAILABLE
	// with Retry-After.
	ErrUnavailable = errors.New("a dependency cannot be reached now; try again")
)

// Application error types of activities. A business refusal is returned as
// a non-retryable temporal ApplicationError with one of these types.
const (
	ErrTypeSoldOut      = "SoldOut"
	ErrTypeSaleNotFound = "SaleNotFound"
	// ErrTypeOrderClosed: the order is CLOSED and cannot be paid (a
	// confirm that meets it is told so, not retried).
	ErrTypeOrderClosed = "OrderClosed"
	// ErrTypeOrderPaid: the order is PAID and cannot be closed.
	ErrTypeOrderPaid = "OrderPaid"
	// ErrTypePaidInTime: the order cannot be closed: a payment that
	// counts was recorded for it (the error's details carry it as a
	// PaymentEvent), and the order is to be paid with it.
	ErrTypePaidInTime = "PaidInTime"
	// ErrTypeShopEventHeld: an earlier event of the order is kept
	// undelivered, so this one may not go first; it is kept behind it.
	ErrTypeShopEventHeld = "ShopEventHeld"
)
