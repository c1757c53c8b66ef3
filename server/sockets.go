// The waiting room's socket: the upgrade (with its origin check), where its token comes from (the URL, or
// with auth=message the hello, which also carries its access code and proof of work), the per-address
// limits, the screening's sale time, then one call to the hub, which reads the hello, registers, welcomes
// and serves it.

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/hub"
)

// newUpgrader is the socket upgrader of s.
func (s *Server) newUpgrader() websocket.Upgrader {
	return websocket.Upgrader{
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
}

// socket is the waiting room: upgrade, check the address's limits and the screening, and hand the socket to
// the hub, which registers (or finds) the token, says where it stands, then pushes.
func (s *Server) socket(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	conn, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered (403 on a foreign origin, 400 on a bad handshake)
	}
	c.Response().Status = http.StatusSwitchingProtocols // for the request log: the upgrader wrote it itself
	awaitHello, refusal := tokenInMessage(c.QueryParam("auth"), c.QueryParam("token"))
	if refusal != "" {
		hub.Reject(conn, hub.ErrorMessage("BAD_HELLO", refusal), websocket.ClosePolicyViolation, "BAD_HELLO")
		return nil
	}
	addr := s.clientIP(c.Request())
	now := time.Now()
	// The address's limits come first, so that a refused socket costs no read of the screening.
	ok, reason := s.addrs.admit(addr, now)
	if !ok && !s.Entry.InfiniteQueue() {
		hub.Reject(conn, rateLimited(reason), hub.CloseTryAgainLater, "rate limited")
		return nil
	}
	gone := func() { s.addrs.release(addr) }
	if !ok {
		gone = func() {} // not counted: admit refused it
	}
	opensAt, rules, err := s.socketScreening(ctx, id)
	if err != nil {
		gone()
		s.refuseScreening(c, conn, id, err)
		return nil
	}
	var check hub.Entry // nil: nothing to check, and nothing allocated for it
	if s.Entry.Checks(rules, ok) {
		a := entry.Arrival{Screening: id, Addr: addr, Rules: rules, URLCode: c.QueryParam("code"), URLAltcha: c.QueryParam("altcha")}
		if !ok {
			// Held instead, unless its token holds a place or it brought a solution: the entry check
			// decides once the hello has told the token and what the socket brought.
			a.OverLimit = reason
		}
		check = socketEntry{s.Entry.Socket(a)}
	}
	s.Hub.Welcome(ctx, hub.Arrival{
		Conn: conn, Screening: id, Token: c.QueryParam("token"), AwaitHello: awaitHello, OpensAt: opensAt,
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
		Gone:      gone, Entry: check,
	})
	return nil
}

// rateLimited is the refusal of a socket over its address's limits.
func rateLimited(reason string) []byte {
	return hub.ErrorMessage(entry.CodeRateLimited, entry.RetryLater(reason))
}

// socketScreening reads what a socket of the screening needs: its sale time and its entry rules.
func (s *Server) socketScreening(ctx context.Context, id string) (time.Time, entry.Rules, error) {
	opensAt, err := s.Booking.OpensAt(ctx, id)
	if err != nil {
		return time.Time{}, entry.Rules{}, err
	}
	rules, err := s.Entry.Rules(ctx, id)
	return opensAt, rules, err
}

// refuseScreening turns away a socket whose screening is unknown (1008) or could not be read (1013).
func (s *Server) refuseScreening(c echo.Context, conn *websocket.Conn, id string, err error) {
	status, body := classify(err)
	if body.Code == hub.CodeBusy { // the database gate's arrival wait ran out (overload): expected under a surge
		hub.Reject(conn, hub.BusyMessage(s.retryAfter()), hub.CloseTryAgainLater, hub.CodeBusy)
		return
	}
	if status == http.StatusNotFound {
		hub.Reject(conn, hub.ErrorMessage(body.Code, body.Message), websocket.ClosePolicyViolation, body.Code)
		return
	}
	s.logFor(c).Error("socket: screening", "screening", id, "err", err)
	hub.Reject(conn, hub.ErrorMessage("UNAVAILABLE", "the waiting room is unavailable; retry shortly"), hub.CloseTryAgainLater, "UNAVAILABLE")
}

// tokenInMessage reads where a socket's token comes from: auth "message" says the hello, the socket's first
// message (docs/protocol.md 4.6), keeps it out of the URL, which proxies log; no auth keeps today's form, the
// token (if any) in the URL. refusal explains a request that mixes them or names another auth.
func tokenInMessage(auth, token string) (awaitHello bool, refusal string) {
	switch auth {
	case "":
		return false, ""
	case "message":
		if token != "" {
			return false, "with auth=message the token travels in the hello, not in the URL: connect without token="
		}
		return true, ""
	}
	return false, `auth is "message" (the token in the first message) or absent (the token in the URL)`
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
