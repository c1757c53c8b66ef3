// Package server owns the HTTP surface: echo routes, REST and WebSocket handlers, the origin check, and the
// mapping of package errors to HTTP statuses and JSON bodies.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/web"
)

const (
	// maxBodyBytes bounds a reservation body: four seat ids need a few dozen bytes.
	maxBodyBytes = 4 << 10
	// readyTimeout bounds each dependency check of /readyz (they run side by side).
	readyTimeout = 2 * time.Second
	// undoWait bounds the wait for a registration's undo (Queue.Undo) before the socket is told to retry;
	// an undo still queued then goes out all the same.
	undoWait = 5 * time.Second
)

// Deps is what the server serves.
type Deps struct {
	Queue          *queue.Queue
	Store          *booking.Store
	Booking        *booking.Booking
	Hub            *hub.Hub
	Redis          redis.UniversalClient
	Gatherer       prometheus.Gatherer
	AllowedOrigins []string
	// BenchFloor adds POST /api/bench/floor (bench.floor).
	BenchFloor bool
	// Pprof serves Go's profiler at /debug/pprof/ (bench.pprof).
	Pprof bool
	// Scheduler is told to read the screenings again after an operator's change (nil: it finds out at its
	// next refresh).
	Scheduler interface{ Refresh() }
	// Limits bounds the sockets and new connections of one client address (limits.*).
	Limits Limits
	// BehindProxy takes the client address from X-Forwarded-For, as set by a proxy on a private or loopback
	// address (http.behind_proxy); otherwise it is the TCP peer.
	BehindProxy bool
	// AdminKey is the bearer key of /api/admin (admin.key); empty turns the admin API off.
	AdminKey string
	// AdmissionDefaults are the settings a screening leaves unset (admission.*), for the operator's view.
	AdmissionDefaults queue.Settings
	Log               *slog.Logger
}

// Server is the echo app.
type Server struct {
	Deps
	e        *echo.Echo
	upgrader websocket.Upgrader
	done     chan struct{} // closed by StopStreams
	stopOnce sync.Once
	addrs    *addressLimits
	clientIP func(*http.Request) string
}

// New builds the routes.
func New(d Deps) *Server {
	s := &Server{Deps: d, e: echo.New(), done: make(chan struct{}), addrs: newAddressLimits(d.Limits)}
	s.clientIP = func(r *http.Request) string { return peerAddress(r.RemoteAddr) }
	if d.BehindProxy {
		s.clientIP = echo.ExtractIPFromXFFHeader()
	}
	s.upgrader = websocket.Upgrader{
		// Client frames are tiny (leave); a socket's write buffer is borrowed from a pool only while a write
		// is under way, so 19,000 idle sockets hold none.
		ReadBufferSize: 256, WriteBufferSize: 1024, WriteBufferPool: &sync.Pool{}, HandshakeTimeout: 10 * time.Second,
		CheckOrigin: s.checkOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			code := "BAD_HANDSHAKE"
			if status == http.StatusForbidden {
				code = "FORBIDDEN_ORIGIN"
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(apiError{Error: apiErrorBody{Code: code, Message: reason.Error()}})
		},
	}
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = errorHandler(d.Log)
	s.e.Use(middleware.Recover())
	s.e.Use(middleware.RequestID())
	s.e.Use(s.logRequests)
	s.e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		ContentTypeNosniff: "nosniff",
		XFrameOptions:      "DENY",
		ReferrerPolicy:     "same-origin",
		// The pages carry their own full policy in a meta tag; only a header can forbid framing.
		ContentSecurityPolicy: "frame-ancestors 'none'",
	}))
	s.routes()
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

// logRequests logs each request once it is answered, with its id and screening: the operator's calls at
// info (an audit trail), failures at error, everything else at debug (a sale is millions of requests).
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status, _ = classify(err)
		}
		level := slog.LevelDebug
		switch {
		case status >= 500 && c.Path() == "/readyz":
			level = slog.LevelWarn // a probe saying a dependency is down, every few seconds: not an error of ours
		case status >= 500:
			level = slog.LevelError
		case strings.HasPrefix(c.Path(), "/api/admin"):
			level = slog.LevelInfo
		}
		ctx := c.Request().Context()
		if s.Log.Enabled(ctx, level) {
			s.Log.LogAttrs(ctx, level, "request", slog.String("method", c.Request().Method), slog.String("path", c.Request().URL.Path),
				slog.Int("status", status), slog.Duration("took", time.Since(start)),
				slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)), slog.String("screening", c.Param("id")))
		}
		return err
	}
}

func (s *Server) routes() {
	s.e.GET("/healthz", s.healthz)
	s.e.GET("/readyz", s.readyz)
	s.e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{})))
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
	api.GET("/screenings/:id/queue/:token", s.getQueueStatus)
	api.POST("/screenings/:id/reservations", s.reserve)
	if s.BenchFloor {
		// The floor of the booking benchmark: the same server, the same middleware, no work.
		api.POST("/bench/floor", func(c echo.Context) error {
			return c.JSON(http.StatusConflict, apiError{Error: apiErrorBody{Code: "SEAT_TAKEN", Message: "bench floor: answered at once"}})
		})
	}
	s.e.GET("/ws/screenings/:id", s.socket, forgetRequest)
	if s.Pprof {
		s.e.GET("/debug/pprof/*", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
		s.e.GET("/debug/pprof/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
		s.e.GET("/debug/pprof/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	}

	// The pages: the list of screenings, the waiting room of one, and their assets. Revalidated on every
	// load, so a deploy never pairs new HTML with an old cached script.
	s.e.GET("/", page("index.html"), noCache)
	s.e.GET("/s/:id", page("room.html"), noCache)
	// The operator's control room; it asks for the admin key and calls /api/admin with it.
	s.e.GET("/admin", page("admin.html"), noCache)
	s.e.Group("/static", noCache).StaticFS("/", web.FS)
}

// forgetRequest lets a socket's HTTP request go once its handler returns. echo keeps every request context
// it served in a pool, and a pooled context points at its last request and response until it serves
// another: through them at net/http's connection, its 4 KiB read and write buffers and the request's
// headers. A burst of 19,000 socket upgrades leaves thousands of contexts in that pool, each holding ~12 KiB
// of a connection that was hijacked long ago, until two garbage collections empty the pool; measured, that
// was half the server's heap after a burst (docs/benchmarks.md). What the middleware around it reads after
// the handler (method, path, status, request id) is kept in a small copy.
func forgetRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		req, resp := c.Request(), c.Response()
		light := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path}, RemoteAddr: req.RemoteAddr,
			Header: http.Header{}, Proto: req.Proto, ProtoMajor: req.ProtoMajor, ProtoMinor: req.ProtoMinor}
		kept := &keptHeader{h: http.Header{}}
		if id := resp.Header().Get(echo.HeaderXRequestID); id != "" {
			kept.h.Set(echo.HeaderXRequestID, id)
		}
		r := echo.NewResponse(kept, c.Echo())
		r.Status, r.Size, r.Committed = resp.Status, resp.Size, resp.Committed
		c.SetRequest(light)
		c.SetResponse(r)
		return err
	}
}

// keptHeader is the response writer of a request that has been answered: it keeps the headers for reading
// and writes nowhere.
type keptHeader struct{ h http.Header }

func (k *keptHeader) Header() http.Header         { return k.h }
func (k *keptHeader) Write(p []byte) (int, error) { return 0, http.ErrHijacked }
func (k *keptHeader) WriteHeader(int)             {}

func noCache(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-cache")
		return next(c)
	}
}

// page serves one embedded HTML page, read once; the page reads its screening id from the URL itself.
func page(name string) echo.HandlerFunc {
	b, err := fs.ReadFile(web.FS, name)
	if err != nil {
		panic(err) // the pages are embedded at build time
	}
	return func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, b) }
}

// checkOrigin allows a socket from the server's own origin, from http.allowed_origins ("*" for any), and
// from clients that send no Origin (not browsers: the swarm, scripts).
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.ContainsFunc(s.AllowedOrigins, func(a string) bool {
		return a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin)
	})
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(c echo.Context) error {
	// Both checks at once, each with its own deadline: a slow Redis must not make the database look down.
	check := func(f func(context.Context) error) chan error {
		out := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
			defer cancel()
			out <- f(ctx)
		}()
		return out
	}
	redisErr, dbErr := check(s.redisReady), check(s.Store.Ping)
	checks := map[string]string{"redis": "ok", "database": "ok"}
	status := http.StatusOK
	if err := <-redisErr; err != nil {
		checks["redis"], status = err.Error(), http.StatusServiceUnavailable
	}
	if err := <-dbErr; err != nil {
		checks["database"], status = err.Error(), http.StatusServiceUnavailable
	}
	return c.JSON(status, checks)
}

// redisReady pings Redis; a Redis Cluster must also say its state is ok (with a master down, the others
// still answer PING while every write to the lost slots fails).
func (s *Server) redisReady(ctx context.Context) error {
	if err := s.Redis.Ping(ctx).Err(); err != nil {
		return err
	}
	cluster, ok := s.Redis.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	info, err := cluster.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errors.New("redis cluster state is not ok")
	}
	return nil
}

// screeningView is a screening as the API shows it.
type screeningView struct {
	booking.Summary
	// State is "upcoming" before the sale opens, "on_sale", "sold_out", or "closed" by the operator (the
	// operator's view also shows "paused").
	State string `json:"state"`
	// MaxSeats is the most seats one reservation may take.
	MaxSeats int    `json:"max_seats"`
	Waiting  *int64 `json:"waiting,omitempty"`
	Active   *int64 `json:"active,omitempty"`
}

func state(sum booking.Summary, now time.Time) string {
	switch {
	case sum.ClosedAt != nil:
		return "closed"
	case sum.SeatsAvailable <= 0:
		return "sold_out"
	case now.Before(sum.SaleOpensAt):
		return "upcoming"
	}
	return "on_sale"
}

func (s *Server) listScreenings(c echo.Context) error {
	list, err := s.Store.Screenings(c.Request().Context())
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]screeningView, len(list))
	for i, sum := range list {
		out[i] = screeningView{Summary: sum, State: state(sum, now), MaxSeats: s.Booking.MaxSeats()}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getScreening(c echo.Context) error {
	ctx := c.Request().Context()
	sum, err := s.Store.Screening(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	waiting, active, err := s.Queue.Counts(ctx, sum.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, screeningView{Summary: sum, State: state(sum, time.Now()), MaxSeats: s.Booking.MaxSeats(), Waiting: &waiting, Active: &active})
}

func (s *Server) getSeats(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	seats, err := s.Booking.Seats(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, seats)
}

// queueStatus is GET /api/screenings/{id}/queue/{token}.
type queueStatus struct {
	Status    string `json:"status"`
	Rank      int64  `json:"rank,omitempty"`
	Total     int64  `json:"total"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

func (s *Server) getQueueStatus(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.Booking.Exists(ctx, id); err != nil {
		return err
	}
	e, err := s.Queue.Status(ctx, id, c.Param("token"))
	if err != nil {
		return err
	}
	out := queueStatus{Status: string(e.State), Total: e.Total}
	switch e.State {
	case queue.Waiting:
		out.Rank = e.ZeroBasedRank + 1
	case queue.Admitted:
		out.ExpiresAt = e.ExpiresAt.UTC().Format(hub.TimeFormat)
	case queue.Closed:
		out.Status = "sold_out"
	}
	return c.JSON(http.StatusOK, out)
}

// reserveBody is POST /api/screenings/{id}/reservations.
type reserveBody struct {
	Seats []string `json:"seats"`
}

func (s *Server) reserve(c echo.Context) error {
	ctx := c.Request().Context()
	pass, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok || pass == "" {
		return queue.ErrInvalidPass
	}
	var body reserveBody
	if err := decodeStrict(c, maxBodyBytes, &body, errBadBody); err != nil {
		return err
	}
	key := c.Request().Header.Get("Idempotency-Key")
	if !validKey(key) {
		return errBadKey
	}
	r, err := s.Booking.ReserveOnce(ctx, c.Param("id"), pass, key, body.Seats)
	var after *booking.AfterCommitError
	if errors.As(err, &after) {
		s.logFor(c).Warn("reserve: committed, follow-up failed", "screening", c.Param("id"), "err", err)
		err = nil
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, r)
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

// maxKeyLen bounds an Idempotency-Key (a UUID is 36 characters).
const maxKeyLen = 255

// validKey accepts an absent key or 1..255 visible ASCII characters.
func validKey(key string) bool {
	if len(key) > maxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// socket is the waiting room: register (or find) the token, say where it stands, then push.
func (s *Server) socket(c echo.Context) error {
	ctx := c.Request().Context()
	id, token := c.Param("id"), c.QueryParam("token")
	conn, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered (403 on a foreign origin, 400 on a bad handshake)
	}
	c.Response().Status = http.StatusSwitchingProtocols // for the request log: the upgrader wrote it itself
	addr := s.clientIP(c.Request())
	if ok, reason := s.addrs.admit(addr, time.Now()); !ok {
		hub.Reject(conn, hub.ErrorMessage("RATE_LIMITED", reason+"; retry later with your token"), hub.CloseTryAgainLater, "rate limited")
		return nil
	}
	handed := false // to the hub, which releases the address's count when the socket is gone
	defer func() {
		if !handed {
			s.addrs.release(addr)
		}
	}()
	opensAt, err := s.Booking.OpensAt(ctx, id)
	if err != nil {
		status, body := classify(err)
		if status == http.StatusNotFound {
			hub.Reject(conn, hub.ErrorMessage(body.Code, body.Message), websocket.ClosePolicyViolation, body.Code)
		} else {
			s.logFor(c).Error("socket: screening", "screening", id, "err", err)
			hub.Reject(conn, hub.ErrorMessage("UNAVAILABLE", "the waiting room is unavailable; retry shortly"), hub.CloseTryAgainLater, "UNAVAILABLE")
		}
		return nil
	}
	if token != "" && !queue.ValidToken(token) {
		hub.Reject(conn, hub.ErrorMessage("BAD_TOKEN", "a token is 32 lowercase hex digits; connect without one to get a new place"), websocket.ClosePolicyViolation, "BAD_TOKEN")
		return nil
	}
	e, err := s.Queue.Enter(ctx, id, token, opensAt)
	switch {
	case errors.Is(err, queue.ErrClosed):
		hub.Reject(conn, hub.SoldOutMessage(), websocket.CloseNormalClosure, "sold out")
		return nil
	case err != nil:
		s.logFor(c).Error("socket: register", "screening", id, "err", err)
		if e.Token != "" {
			// No answer: the registration may have run. Undone, it counts nothing for a socket that never
			// joined, and leaves no fresh token in line that its client never learnt.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoWait)
			if err := s.Queue.Undo(uctx, id, e); err != nil && !errors.Is(err, queue.ErrQueued) {
				s.Log.Warn("socket: undo a registration", "screening", id, "err", err)
			}
			cancel()
		}
		hub.Reject(conn, hub.ErrorMessage("UNAVAILABLE", "the waiting room is unavailable; retry shortly"), hub.CloseTryAgainLater, "UNAVAILABLE")
		return nil
	}
	var first []byte
	switch e.State {
	case queue.Waiting:
		first = hub.QueuedMessage(e)
	case queue.Pre:
		first = hub.PreQueueMessage(e, opensAt)
	}
	cl := s.Hub.Join(conn, id, e.Token, e.Seq, e.Paused, first)
	if cl == nil {
		// Draining: the socket Enter counted is gone; the client reconnects elsewhere within the grace.
		if err := s.Queue.Disconnected(context.WithoutCancel(ctx), id, e.Token); err != nil {
			s.Log.Warn("socket: disconnect", "screening", id, "err", err)
		}
		return nil
	}
	s.catchUp(ctx, cl, id, e)
	handed = true
	s.Hub.Start(cl, func() { s.addrs.release(addr) })
	return nil
}

// catchUp closes the gap between registering and joining the hub: an admission event in that gap was not
// pushed to this socket, so it reads the entry again and sends what the event changed (an admission, or a
// new rank). Without such an event (the hub says which) there is nothing to catch up and no Redis call.
//
// A socket that registered in the pre-queue has no place in the line until the read here gives it one, and
// the hub pushes nothing to a socket without a place: an event dispatched between the read and the place
// (the first tick often comes in the opening's millisecond) moved the line past the read, with nothing
// pushed here. The hub tells whether one was (Missed, against the read's epoch); the entry is then read
// once more, and from then on every event reaches the socket.
func (s *Server) catchUp(ctx context.Context, cl *hub.Client, screening string, e queue.Entry) {
	if e.State == queue.Admitted {
		cl.Admit(e.ExpiresAt)
		return
	}
	if !s.Hub.Missed(cl, e.Epoch) {
		return
	}
	for {
		mark := cl.Mark()
		now, err := s.Queue.Status(ctx, screening, e.Token)
		if err != nil {
			s.Log.Warn("socket: catch up", "screening", screening, "err", err)
			return
		}
		switch {
		case now.State == queue.Closed:
			cl.Send(hub.SoldOutMessage())
			cl.Close(websocket.CloseNormalClosure, "sold out")
		case now.State == queue.Admitted:
			cl.Admit(now.ExpiresAt)
		case now.State == queue.Waiting && e.State == queue.Pre:
			// The line opened between registering and joining: this socket missed its shuffled place.
			cl.Place(now.Seq)
			if s.Hub.Missed(cl, now.Epoch) {
				e = queue.Entry{Token: e.Token, State: queue.Waiting, ZeroBasedRank: -1}
				continue
			}
			cl.SendUnlessTicked(mark, hub.CatchUpMessage(now.ZeroBasedRank, now.Total, time.Now().UnixMilli()))
		case now.State == queue.Waiting && now.ZeroBasedRank != e.ZeroBasedRank:
			cl.SendUnlessTicked(mark, hub.CatchUpMessage(now.ZeroBasedRank, now.Total, time.Now().UnixMilli()))
		}
		return
	}
}
