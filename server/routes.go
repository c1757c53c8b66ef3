// Every route the public handler serves, in one place: the health checks, the public API, the admin API,
// the orders' routes, the socket, and the pages. The metrics and the profiler are the ops listener's (ops.go).

package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/waitroom/waitroom/overload"
)

// Each route's class of work (classes.go) is Buyer unless it says another: the payment backend's confirm and
// a cancel are Payment, the socket and its challenge Arrival, the operator's lists and stream Background.
func (s *Server) routes() {
	s.e.GET("/healthz", s.healthz)
	s.e.GET("/readyz", s.readyz)
	s.e.GET("/.well-known/jwks.json", s.jwks)
	s.e.GET("/.well-known/waitroom-log-key", s.logKey)
	api := s.e.Group("/api")
	if len(s.AllowedOrigins) > 0 {
		// Pages on the allowed origins may call the API from the browser too (the same list as the sockets).
		// Only when the list is set: echo's CORS with an empty list would allow every origin.
		api.Use(middleware.CORSWithConfig(middleware.CORSConfig{
			AllowOrigins: s.AllowedOrigins,
			AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete},
			AllowHeaders: []string{"Authorization", "Content-Type", "Idempotency-Key"},
		}))
	}

	// The operator's API (admin.go, adminlog.go, codes.go, csv.go, webhooks.go), behind the bearer key. Without a key
	// configured the routes do not exist (404): the admin API is off, never open.
	if s.AdminKey != "" {
		admin := api.Group("/admin", s.requireAdmin)
		admin.GET("/screenings", s.adminList)
		admin.POST("/screenings", s.adminCreate)
		admin.GET("/screenings/:id", s.adminGet)
		admin.PATCH("/screenings/:id/admission", s.adminSetAdmission)
		admin.POST("/screenings/:id/pause", s.adminPause)
		admin.POST("/screenings/:id/resume", s.adminResume)
		admin.POST("/screenings/:id/close", s.adminClose)
		admin.POST("/screenings/:id/reset", s.adminReset)
		admin.POST("/screenings/:id/archive", s.adminArchive)
		admin.POST("/screenings/:id/unarchive", s.adminUnarchive)
		admin.GET("/screenings/:id/orders", s.adminOrders, workOf(overload.Background))
		admin.POST("/screenings/:id/codes", s.adminIssueCodes)
		admin.GET("/screenings/:id/codes", s.adminCodes, workOf(overload.Background))
		admin.DELETE("/screenings/:id/codes/:code", s.adminRevokeCode)
		admin.GET("/screenings/:id/log", s.adminLog, workOf(overload.Background))
		admin.GET("/screenings/:id/log/export", s.adminLogExport, workOf(overload.Background))
		admin.POST("/orders/:code/cancel", s.adminCancelOrder, workOf(overload.Payment))
		admin.GET("/instances", s.adminInstances)
		admin.GET("/webhooks", s.adminWebhooks, workOf(overload.Background))
		admin.GET("/stream", s.adminStream, workOf(overload.Background))
	}

	api.GET("/screenings", s.listScreenings)
	api.GET("/screenings/:id", s.getScreening)
	api.GET("/screenings/:id/seats", s.getSeats)
	api.GET("/screenings/:id/challenge", s.challenge, workOf(overload.Arrival))
	api.GET("/screenings/:id/queue/:token", s.getQueueStatus)
	api.PUT("/screenings/:id/waitlist", s.putWaitlist, workOf(overload.Arrival))
	registerNotify(api, s.Notify, s.NotifyLines, s.paceOrders)
	api.GET("/screenings/:id/log/checkpoint", s.logCheckpoint, workOf(overload.Background))
	api.GET("/screenings/:id/log/tile/*", s.logTile, workOf(overload.Background))
	api.GET("/screenings/:id/log/records", s.logRecords, workOf(overload.Background))
	api.GET("/screenings/:id/log/proof", s.logProof, workOf(overload.Background))
	api.POST("/screenings/:id/reservations", s.reserve, s.countReservations)

	// The orders (orders.go): the buyers' routes, paced per address (paceOrders); the payment backend's
	// only when the confirm key is set, guarded by the key instead (one address confirming a whole sale);
	// the demo checkout's only when it is asked for and there is no real checkout.
	api.GET("/orders/:code", s.getOrder, s.paceOrders)
	api.POST("/orders/:code/cancel", s.cancelOrder, s.paceOrders, workOf(overload.Payment))
	if s.Checkout.ConfirmKey != "" {
		api.POST("/orders/:code/confirm", s.confirmOrder, s.requireConfirmKey, workOf(overload.Payment))
	}
	if s.Checkout.demo() {
		// The demo checkout: anyone with the order's code pays by pressing Pay. Never on a real sale, where
		// checkout_url names the shop that takes the money and the payment backend confirms with its key.
		api.POST("/orders/:code/pay", s.confirmOrder, s.paceOrders, workOf(overload.Payment))
		s.e.GET("/checkout/:code", page("checkout.html"), s.paceOrders, noCache)
	}

	if s.BenchFloor {
		// The floor of the booking benchmark: the same server, the same middleware, no work.
		api.POST("/bench/floor", func(c echo.Context) error {
			return c.JSON(http.StatusConflict, apiError{Error: apiErrorBody{Code: "SEAT_TAKEN", Message: "bench floor: answered at once"}})
		})
	}
	s.e.GET("/ws/screenings/:id", s.socket, forgetRequest, workOf(overload.Arrival))

	// The pages: the list of screenings, the waiting room of one, an order's ticket, and their assets.
	// Revalidated on every load, so a deploy never pairs new HTML with an old cached script.
	s.e.GET("/", page("index.html"), noCache)
	s.e.GET("/s/:id", s.roomPage(), noCache)
	s.e.GET("/t/:code", page("ticket.html"), s.paceOrders, noCache)
	s.e.GET("/t/:code/qr.png", s.ticketQR, s.paceOrders)
	// The operator's control room; it asks for the admin key and calls /api/admin with it.
	s.e.GET("/admin", page("admin.html"), noCache)
	s.e.Group("/static", noCache).StaticFS("/", s.staticFS())
}
