// Every route the public handler serves, in one place: the health checks, the public API, the admin API
// (admin.go), the socket, and the pages. The metrics and the profiler are the ops listener's (ops.go).

package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

func (s *Server) routes() {
	s.e.GET("/healthz", s.healthz)
	s.e.GET("/readyz", s.readyz)
	s.e.GET("/.well-known/jwks.json", s.jwks)
	api := s.e.Group("/api")
	if len(s.AllowedOrigins) > 0 {
		// Pages on the allowed origins may call the API from the browser too (the same list as the sockets).
		// Only when the list is set: echo's CORS with an empty list would allow every origin.
		api.Use(middleware.CORSWithConfig(middleware.CORSConfig{
			AllowOrigins: s.AllowedOrigins,
			AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodPatch},
			AllowHeaders: []string{"Authorization", "Content-Type", "Idempotency-Key"},
		}))
	}
	s.adminRoutes(api)
	api.GET("/screenings", s.listScreenings)
	api.GET("/screenings/:id", s.getScreening)
	api.GET("/screenings/:id/seats", s.getSeats)
	api.GET("/screenings/:id/challenge", s.challenge)
	api.GET("/screenings/:id/queue/:token", s.getQueueStatus)
	api.POST("/screenings/:id/reservations", s.reserve, s.countReservations)
	s.orderRoutes(api)
	if s.BenchFloor {
		// The floor of the booking benchmark: the same server, the same middleware, no work.
		api.POST("/bench/floor", func(c echo.Context) error {
			return c.JSON(http.StatusConflict, apiError{Error: apiErrorBody{Code: "SEAT_TAKEN", Message: "bench floor: answered at once"}})
		})
	}
	s.e.GET("/ws/screenings/:id", s.socket, forgetRequest)

	// The pages: the list of screenings, the waiting room of one, and their assets. Revalidated on every
	// load, so a deploy never pairs new HTML with an old cached script.
	s.e.GET("/", page("index.html"), noCache)
	s.e.GET("/s/:id", s.roomPage(), noCache)
	// The operator's control room; it asks for the admin key and calls /api/admin with it.
	s.e.GET("/admin", page("admin.html"), noCache)
	s.e.Group("/static", noCache).StaticFS("/", s.staticFS())
}
