// The waiting room's socket: the upgrade (with its origin check), the per-address limits, the screening,
// the registration, the hub's join and the catch-up.

package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
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
