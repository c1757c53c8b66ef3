// Package server owns the HTTP surface: echo routes, REST and WebSocket handlers, the origin check, and the
// mapping of package errors to HTTP statuses and JSON bodies.
//
// Where things are: server.go (the Server, its dependencies, middleware and body decoding), routes.go
// (every route of the public handler), ops.go (the operators' listener: metrics, profiler), sockets.go (the
// waiting room's socket: upgrade, limits, then the hub's welcome), reservations.go, screenings.go (the
// public reads), health.go (/healthz, /readyz), pages.go (the embedded pages), admin.go (the operator's API
// and live stream), adminguard.go (the throttle on wrong admin and confirm keys), limits.go (per-address limits, the
// client's address behind trusted proxies), errors.go (package errors to statuses and bodies), metrics.go
// (the requests' and reservations' metrics), webhooks.go (the operator's list of the webhooks), pow.go
// (the proof of work's challenge route), entry.go (a socket's entry as the hub asks it, answered by package
// entry), codes.go (the operator's access codes: issue, list as JSON or CSV, revoke), csv.go (the CSV
// exports), orders.go (the box office's handlers: an order read, confirmed, cancelled, listed; the demo
// checkout), jwks.go (the passes' public keys at /.well-known/jwks.json), classes.go (each route's class of
// work), fairness.go (the admission log's public routes and its key), adminlog.go (the operator's view of a
// screening's admission log and its export), waitlist.go (a waiting buyer's party size), notify.go (the
// buyers' e-mail routes).
package server

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/fairness"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/webhook"
)

// maxBodyBytes bounds a reservation body (four seat ids need a few dozen bytes) and an admission change.
const maxBodyBytes = 4 << 10

// Deps is what the server serves.
type Deps struct {
	Queue          *queue.Queue
	Store          *booking.Store
	Booking        *booking.Booking
	Hub            *hub.Hub
	Redis          redis.UniversalClient
	Gatherer       prometheus.Gatherer   // served at /metrics by OpsHandler
	Registerer     prometheus.Registerer // takes the server's own metrics (metrics.go); nil: registered nowhere
	AllowedOrigins []string
	// BenchFloor adds POST /api/bench/floor (bench.floor).
	BenchFloor bool
	// Pprof serves Go's profiler at /debug/pprof/ on the ops listener (bench.pprof).
	Pprof bool
	// Scheduler is told to read the screenings again after an operator's change (nil: it finds out at its
	// next refresh).
	Scheduler interface{ Refresh() }
	// Limits bounds the sockets and new connections of one client address (limits.*).
	Limits Limits
	// BehindProxy takes the client address from X-Forwarded-For when the TCP peer is one of TrustedProxies
	// (http.behind_proxy, http.trusted_proxies): the right-most address of the chain that is not a trusted
	// proxy. Otherwise, or with no trusted proxies, the client is the TCP peer.
	BehindProxy    bool
	TrustedProxies []netip.Prefix
	// AdminKey is the bearer key of /api/admin (admin.key); empty turns the admin API off.
	AdminKey string
	// AdmissionDefaults are the settings a screening leaves unset (admission.*), for the operator's view.
	AdmissionDefaults queue.Settings
	// Checkout is how buyers pay for held orders (booking.checkout_url, booking.demo_checkout,
	// booking.confirm_key).
	Checkout Checkout
	Webhooks *webhook.Outbox // the webhooks' outbox, listed for the operator (nil: an empty list)
	PassKeys KeySet          // the passes' public keys, served at /.well-known/jwks.json (nil: none)
	// Fairness is the public admission log, served under /api/screenings/{id}/log/ (nil: not kept).
	Fairness *fairness.Log
	// Notify sends the e-mails of buyers who left the page (nil or not Enabled: mail is off); NotifyLines is
	// what its routes ask of the line.
	Notify      *notify.Service
	NotifyLines NotifyLines
	// Gate is what the API says of the gate in front of an existing site (zero: no gate).
	Gate GateLinks
	// Entry is the admission policy of a new place (package entry): a socket's check before it is
	// registered, the screenings' entry rules, the proof of work's challenges.
	Entry *entry.Policy
	// RetryAfter is what a request or socket refused under overload is told to wait (overload.retry_after;
	// 0: a second).
	RetryAfter time.Duration
	Log        *slog.Logger
}

// Server is the echo app.
type Server struct {
	Deps
	e        *echo.Echo
	upgrader websocket.Upgrader
	done     chan struct{} // closed by StopStreams
	stopOnce sync.Once
	addrs    *addressLimits
	// adminKeys and confirmKeys count each address's attempts at the admin key and at the confirm key
	// (adminguard.go).
	adminKeys, confirmKeys *keyGuard
	clientIP               func(*http.Request) string
	metrics                *httpMetrics
	// now is the clock of the per-address counts (the keys' guards, the orders' pace; a test's own clock).
	now func() time.Time
	// orders paces each address's requests to an order's routes; qrs keeps the tickets' QR codes
	// (orders.go).
	orders *limit.Rate
	qrs    *qrCache
	// challenges paces each address's challenges (pow.go).
	challenges *limit.Rate
}

// trustedHosts are the peers whose Host and X-Forwarded-Proto are believed for the URLs an answer names:
// the trusted proxies with http.behind_proxy, else none.
func (s *Server) trustedHosts() []netip.Prefix {
	if !s.BehindProxy {
		return nil
	}
	return s.TrustedProxies
}

// New builds the routes.
func New(d Deps) *Server {
	s := &Server{Deps: d, e: echo.New(), done: make(chan struct{}), addrs: newAddressLimits(d.Limits),
		adminKeys: newKeyGuard(adminKeyName), confirmKeys: newKeyGuard(confirmKeyName), now: time.Now}
	s.challenges = limit.NewRate(d.Limits.RegistrationsPerSecond, d.Limits.RegistrationBurst)
	s.orders = limit.NewRate(d.Limits.OrdersPerSecond, d.Limits.OrdersBurst)
	s.qrs = newQRCache()
	s.clientIP = limit.ClientAddress(nil)
	if d.BehindProxy {
		s.clientIP = limit.ClientAddress(d.TrustedProxies)
	}
	s.upgrader = s.newUpgrader()
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = errorHandler(d.Log, s.retryAfter())
	s.metrics = newHTTPMetrics(d.Registerer)
	s.e.Use(s.observeRequests) // outermost: it times a recovered panic's 500 too
	s.e.Use(middleware.Recover())
	s.e.Use(requestID)
	s.e.Use(s.logRequests)
	s.e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		ContentTypeNosniff: "nosniff",
		XFrameOptions:      "DENY",
		ReferrerPolicy:     "same-origin",
		// The pages carry their own full policy in a meta tag; only a header can forbid framing.
		ContentSecurityPolicy: "frame-ancestors 'none'",
	}))
	s.routes()
	s.metrics.know(s.e.Routes())
	return s
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

// StopStreams ends the control room's live streams, so a graceful shutdown is not held up by them.
func (s *Server) StopStreams() { s.stopOnce.Do(func() { close(s.done) }) }

// logFor is the log with the request's id, so every line a request writes can be found together.
func (s *Server) logFor(c echo.Context) *slog.Logger {
	return s.Log.With("request_id", c.Response().Header().Get(echo.HeaderXRequestID))
}

// clientRequestIDKey holds, in the echo context, the X-Request-Id the client sent (bounded), for the log.
const clientRequestIDKey = "client_request_id"

// maxClientRequestID bounds the client's own request id as the log keeps it.
const maxClientRequestID = 64

// requestID gives every request an id of the server's own, in the answer's X-Request-Id and on every line
// the request logs. echo's RequestID middleware would keep the client's X-Request-Id instead, letting a
// forged id make a refused request look like an operator's action; the client's value is kept apart, cut to
// maxClientRequestID printable characters, as client_request_id on the request's log line.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderXRequestID, rand.Text())
		if theirs := c.Request().Header.Get(echo.HeaderXRequestID); theirs != "" {
			c.Set(clientRequestIDKey, printable(theirs, maxClientRequestID))
		}
		return next(c)
	}
}

// printable is s without what is not printable ASCII, cut to at most n bytes.
func printable(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		if s[i] >= ' ' && s[i] <= '~' {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// logRequests logs each request once it is answered: its method, its route's pattern (never the URL,
// whose ids and tokens are the client's to make as long as it likes), its status, the server's request id,
// the client's address, and the screening (cut to 64 characters). The operator's calls at info (an audit
// trail, refusals included), failures at error, everything else at debug (a sale is millions of requests).
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request() // a socket's handler swaps it for a light copy (forgetRequest) without the header
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status, _ = classify(err)
		}
		route := c.Path()
		if !s.metrics.patterns[route] {
			route = unmatchedRoute
		}
		level := slog.LevelDebug
		switch {
		case status >= 500 && route == "/readyz":
			level = slog.LevelWarn // a probe saying a dependency is down, every few seconds: not an error of ours
		case status >= 500:
			level = slog.LevelError
		case strings.HasPrefix(route, "/api/admin"):
			level = slog.LevelInfo
		}
		ctx := req.Context()
		if !s.Log.Enabled(ctx, level) {
			return err
		}
		attrs := []slog.Attr{slog.String("method", knownMethod(req.Method)), slog.String("route", route),
			slog.Int("status", status), slog.Duration("took", time.Since(start)),
			slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
			slog.String("client", s.clientIP(req)), slog.String("screening", truncateID(c.Param("id")))}
		if theirs, ok := c.Get(clientRequestIDKey).(string); ok {
			attrs = append(attrs, slog.String(clientRequestIDKey, theirs))
		}
		s.Log.LogAttrs(ctx, level, "request", attrs...)
		return err
	}
}

// decodeStrict reads exactly one JSON object into v, refusing unknown fields and anything after it (even a
// stray "}", which dec.More does not see); a refusal wraps bad, and a body over limit is the
// http.MaxBytesError.
func decodeStrict(c echo.Context, limit int64, v any, bad error) error {
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return fmt.Errorf("%w: %v", bad, err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: one JSON object, nothing after it", bad)
	}
	return nil
}
