// The classes of work (package overload): each route says its class in its request's context, so that when
// the database pool is saturated the payment backend's confirm and a buyer's cancel are served first, then
// the buyers' reservations and reads, then the arriving sockets, then what only watches. A request refused
// after its class's wait is answered 503 BUSY with Retry-After, having changed nothing.

package server

import (
	"math"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/overload"
)

// workOf marks the route's requests as work of class c.
func workOf(c overload.Class) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ctx echo.Context) error {
			r := ctx.Request()
			ctx.SetRequest(r.WithContext(overload.With(r.Context(), c)))
			return next(ctx)
		}
	}
}

// retryAfter is what a refused request or socket is told to wait.
func (s *Server) retryAfter() time.Duration {
	if s.RetryAfter <= 0 {
		return time.Second
	}
	return s.RetryAfter
}

// retrySeconds is a wait in Retry-After's whole seconds, rounded up, at least one.
func retrySeconds(d time.Duration) int {
	return max(int(math.Ceil(d.Seconds())), 1)
}
