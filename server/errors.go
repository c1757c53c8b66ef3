// Errors as they leave: the HTTP status, stable code and words of every error, in one JSON shape; internal
// errors reach the log in full and the user as "internal error".

package server

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/fairness"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/overload"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/webhook"
)

// apiError is the JSON body of every error: {"error":{"code":"SEAT_TAKEN","message":"..."}}.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Seats names the seats at fault, on SEAT_TAKEN and SEAT_LOCKED.
	Seats []string `json:"seats,omitempty"`
	// Held is, on NOT_ENOUGH_SEATS, how many of the screening's seats are only held by orders being paid
	// for: they come back if those orders lapse or are cancelled (a client waits for a seats message).
	Held *int `json:"held,omitempty"`
}

// classify maps a package error to its HTTP status and stable code. Only server/ knows HTTP.
// A refusal of what the caller sent (a booking.InvalidError, an adminError, a queue.SettingsError) carries
// the words the user reads, and they are sent as they are.
func classify(err error) (int, apiErrorBody) {
	if status, body, ok := classifyOrder(err); ok {
		return status, body
	}
	var taken *booking.TakenError
	var locked *booking.LockedError
	var he *echo.HTTPError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	var badSettings *queue.SettingsError
	var invalid *booking.InvalidError
	var refused *adminError
	var logQuery *logQueryError
	var coded *codedError
	switch {
	case errors.As(err, &coded):
		return coded.status, apiErrorBody{Code: coded.code, Message: coded.message}
	case errors.Is(err, errNoFairness):
		return http.StatusNotFound, apiErrorBody{Code: "NO_ADMISSION_LOG", Message: "this server keeps no admission log"}
	case errors.Is(err, fairness.ErrNoLog):
		return http.StatusNotFound, apiErrorBody{Code: "NO_ADMISSION_LOG", Message: "this screening's admission log has no checkpoint yet"}
	case errors.Is(err, fairness.ErrNotFound):
		return http.StatusNotFound, apiErrorBody{Code: "NOT_IN_LOG", Message: "the admission log does not hold that (yet); the latest checkpoint says how far it goes"}
	case errors.As(err, &logQuery):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: logQuery.Message}
	case errors.Is(err, errUnauthorized):
		return http.StatusUnauthorized, apiErrorBody{Code: "UNAUTHORIZED", Message: "the admin API needs Authorization: Bearer <admin key>"}
	case errors.Is(err, booking.ErrScreeningExists):
		return http.StatusConflict, apiErrorBody{Code: "SCREENING_EXISTS", Message: "a screening with this id exists already"}
	case errors.Is(err, booking.ErrSaleHasOrders):
		return http.StatusConflict, apiErrorBody{Code: "SALE_HAS_ORDERS", Message: "the sale has held or confirmed orders; reset with force to delete them"}
	case errors.Is(err, booking.ErrArchived):
		return http.StatusConflict, apiErrorBody{Code: "ARCHIVED", Message: "the screening is archived; unarchive it first"}
	case errors.As(err, &invalid) && invalid.Kind == booking.ErrBadScreening:
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_SCREENING", Message: invalid.Message}
	case errors.As(err, &refused) && refused.Kind == booking.ErrBadScreening:
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_SCREENING", Message: refused.Message}
	case errors.As(err, &badSettings):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_SCREENING", Message: badSettings.Message}
	case errors.As(err, &refused) && refused.Kind == errBadAdminBody:
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: refused.Message}
	case errors.As(err, &taken):
		return http.StatusConflict, apiErrorBody{Code: "SEAT_TAKEN", Message: "a requested seat is already sold", Seats: taken.Seats}
	case errors.As(err, &locked):
		return http.StatusConflict, apiErrorBody{Code: "SEAT_LOCKED", Message: "a requested seat is being reserved by someone else; pick another or retry", Seats: []string{locked.Seat}}
	case errors.Is(err, booking.ErrLockLost):
		return http.StatusConflict, apiErrorBody{Code: "LOCK_EXPIRED", Message: "your hold on the seats expired before the reservation completed; nothing was booked, try again"}
	case errors.Is(err, booking.ErrIdempotencyMismatch):
		return http.StatusUnprocessableEntity, apiErrorBody{Code: "IDEMPOTENCY_KEY_REUSED", Message: "this Idempotency-Key already reserved other seats"}
	case errors.Is(err, errBadKey):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: "Idempotency-Key must be 1 to 255 visible ASCII characters"}
	case errors.Is(err, booking.ErrSoldOut):
		return http.StatusConflict, apiErrorBody{Code: "SOLD_OUT", Message: "no seat is left"}
	case errors.Is(err, queue.ErrPassSpent):
		return http.StatusGone, apiErrorBody{Code: "PASS_SPENT", Message: "this pass has already reserved"}
	case errors.Is(err, pass.ErrInvalid):
		return http.StatusUnauthorized, apiErrorBody{Code: "INVALID_PASS", Message: "the pass is missing, forged, expired or for another screening"}
	case errors.Is(err, queue.ErrNotActive):
		return http.StatusUnauthorized, apiErrorBody{Code: "INVALID_PASS", Message: "the admission of this pass is over (it expired or was left)"}
	case errors.Is(err, booking.ErrUnknownScreening), errors.Is(err, queue.ErrBadScreening):
		return http.StatusNotFound, apiErrorBody{Code: "UNKNOWN_SCREENING", Message: "no such screening"}
	case errors.Is(err, queue.ErrBadToken):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_TOKEN", Message: "a token is 32 lowercase hex digits"}
	case errors.As(err, &invalid) && invalid.Kind == booking.ErrBadRequest:
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: invalid.Message}
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, apiErrorBody{Code: "BODY_TOO_LARGE", Message: "request body too large"}
	case errors.As(err, &syntax), errors.As(err, &typeErr), errors.Is(err, errBadBody):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: `the body must be {"seats":["A1",...]} or {"count":N}`}
	case errors.Is(err, overload.ErrBusy):
		return http.StatusServiceUnavailable, apiErrorBody{Code: hub.CodeBusy, Message: "the server is busy; nothing was done, retry after the Retry-After seconds"}
	case unavailable(err):
		return http.StatusServiceUnavailable, apiErrorBody{Code: "UNAVAILABLE", Message: "the service cannot reach its store right now; nothing was done, retry shortly"}
	case errors.As(err, &he):
		code := "HTTP_ERROR"
		switch he.Code {
		case http.StatusNotFound:
			code = "NOT_FOUND"
		case http.StatusMethodNotAllowed:
			code = "METHOD_NOT_ALLOWED"
		}
		return he.Code, apiErrorBody{Code: code, Message: http.StatusText(he.Code)}
	}
	return http.StatusInternalServerError, apiErrorBody{Code: "INTERNAL", Message: "internal error"}
}

// classifyOrder maps the box office's errors to their status and code.
func classifyOrder(err error) (int, apiErrorBody, bool) {
	switch {
	case errors.Is(err, booking.ErrBadOrderCode):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_ORDER_CODE", Message: "an order code is 26 letters and digits"}, true
	case errors.Is(err, booking.ErrOrderNotFound):
		return http.StatusNotFound, apiErrorBody{Code: "ORDER_NOT_FOUND", Message: "no such order"}, true
	case errors.Is(err, booking.ErrHoldExpired):
		return http.StatusConflict, apiErrorBody{Code: "HOLD_EXPIRED", Message: "the hold on these seats expired before payment; they may have been sold again"}, true
	case errors.Is(err, booking.ErrOrderCancelled):
		return http.StatusConflict, apiErrorBody{Code: "ORDER_CANCELLED", Message: "this order was cancelled"}, true
	case errors.Is(err, booking.ErrOrderConfirmed):
		return http.StatusConflict, apiErrorBody{Code: "ORDER_CONFIRMED", Message: "this order is paid; ask the box office to cancel it"}, true
	case errors.Is(err, booking.ErrNotEnoughSeats):
		body := apiErrorBody{Code: "NOT_ENOUGH_SEATS", Message: "not that many seats are free together; ask for fewer or pick them"}
		if ne := new(booking.NotEnoughError); errors.As(err, &ne) {
			body.Held = &ne.Held
		}
		return http.StatusConflict, body, true
	case errors.Is(err, errBadConfirmKey):
		return http.StatusUnauthorized, apiErrorBody{Code: "BAD_CONFIRM_KEY", Message: "confirming needs Authorization: Bearer <confirm key>"}, true
	case errors.Is(err, errNoCheckout):
		return http.StatusUnprocessableEntity, apiErrorBody{Code: "NO_CHECKOUT", Message: "hold checkout needs somewhere for buyers to pay, " +
			"and this server has neither booking.checkout_url nor booking.demo_checkout: set one (and restart), or keep the screening instant"}, true
	case errors.Is(err, errBadStatus):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: "status is one of held, confirmed, cancelled, expired"}, true
	case errors.Is(err, webhook.ErrBadState):
		return http.StatusBadRequest, apiErrorBody{Code: "BAD_REQUEST", Message: "state is one of pending, delivered, failed"}, true
	}
	return 0, apiErrorBody{}, false
}

// unavailable reports whether err means Redis or the database could not be reached (refused, reset, closed
// by the other end: io.EOF from a pooled connection, timed out, shutting down), so the request fails closed
// with 503 and a retry may succeed, rather than a 500. (An empty request body's io.EOF is classified before
// this, as a bad body.)
func unavailable(err error) bool {
	var opErr *net.OpError
	var sqlState interface{ SQLState() string }
	switch {
	case errors.As(err, &opErr), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &sqlState):
		// PostgreSQL's classes 08 (connection exception) and 57 (operator intervention: shutting down).
		class := sqlState.SQLState()
		return strings.HasPrefix(class, "08") || strings.HasPrefix(class, "57")
	}
	return false
}

var (
	errBadBody = errors.New("bad body")
	errBadKey  = errors.New("bad idempotency key")
)

// errorHandler is echo's HTTPErrorHandler: every error leaves as the JSON body above; internal errors reach
// the log in full and the user as "internal error".
func errorHandler(log *slog.Logger, retryAfter time.Duration) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, body := classify(err)
		if body.Code == hub.CodeBusy {
			// Refused by its class's wait (overload): expected under a surge, counted in /metrics, not logged.
			c.Response().Header().Set("Retry-After", strconv.Itoa(retrySeconds(retryAfter)))
		} else if status >= 500 {
			log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "screening", truncateID(c.Param("id")),
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err)
		}
		_ = c.JSON(status, apiError{Error: body})
	}
}
