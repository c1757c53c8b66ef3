// One virtual user's visit: it waits in line on the screening's socket, over as many connections as
// reconnects take, keeping its place with its token, then reserves once admitted (flow mode) or stays
// connected until the hold ends (hold mode).

package swarm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// maxReconnects bounds how often one user dials again, after a close 1012/1013 or a failed dial.
	maxReconnects = 5
	// reconnectBase and reconnectMax shape the backoff between reconnects: base·2ⁿ, capped, with jitter.
	reconnectBase = 250 * time.Millisecond
	reconnectMax  = 5 * time.Second
)

// kindHoldConnecting is the error kind of a user in hold mode that was dialing, or waiting to dial again,
// without a place on an open socket when the hold ended.
const kindHoldConnecting = "hold ended while connecting"

// visit is what one virtual user works with: the run's shared swarm, the source address it dials from,
// the hold's end (closed when the hold ends; nil in flow mode), and the run's tally.
type visit struct {
	*swarm
	src   *source
	hold  <-chan struct{}
	count *tally
}

// run is the user's whole visit. Flow: wait in line for the pushes, reserve once admitted, and close.
// Hold: wait in line, admitted or not, until the hold ends, then close (wait does it all).
func (v *visit) run(ctx context.Context) result {
	var r result
	sock, pass := v.wait(ctx, &r)
	if sock == nil {
		return r
	}
	if v.reserve(ctx, pass, &r) {
		// Free the admission slot at once rather than when it lapses, so the next in line moves up.
		sock.leave()
	}
	sock.close()
	return r
}

// wait opens the socket and reads pushes until admitted in flow mode (it returns the open socket and the
// pass) or the visit ends otherwise (it returns nil, with r's outcome set). A close 1012 or 1013, or a
// failed dial, is answered by dialing again with the token, keeping the place, at most maxReconnects times.
func (v *visit) wait(ctx context.Context, r *result) (*socket, string) {
	var place place
	for attempt := 0; ; attempt++ {
		sock, pass, retry, kind, err := v.connection(ctx, &place, r)
		switch {
		case sock != nil:
			return sock, pass
		case err == nil:
			return nil, "" // the outcome is set: sold out, or the hold is over
		case ctx.Err() != nil:
			r.fail(stopKind(ctx), err)
			return nil, ""
		case retry && attempt < maxReconnects:
			if v.pause(ctx, backoff(attempt)) {
				r.Reconnects++
				continue
			}
			kind = kindHoldConnecting
			if ctx.Err() != nil {
				kind = stopKind(ctx)
			}
			r.fail(kind, err)
			return nil, ""
		case retry:
			kind += fmt.Sprintf(" (after %d reconnects)", attempt)
		}
		r.fail(kind, err)
		return nil, ""
	}
}

// place is what a user keeps across its connections.
type place struct {
	token          string
	firstMessageAt time.Time
	// admitted (hold mode): some connection got admitted; the user ends as Admitted.
	admitted bool
}

// connection is one socket of a user's wait. It returns the open socket and the pass on admission in flow
// mode; nil and no error when the visit ended (r's outcome set: sold out, or the hold is over); else the
// error, its kind, and whether dialing again with the token is the answer (a failed dial, a close 1012 or
// 1013, an INTERNAL error message).
func (v *visit) connection(ctx context.Context, p *place, r *result) (sock *socket, pass string, retry bool, kind string, err error) {
	dialAt := time.Now()
	if r.FirstDialAt.IsZero() {
		r.FirstDialAt = dialAt
	}
	sock, err = v.open(ctx, p.token)
	if err != nil {
		var hs *handshakeError
		if errors.As(err, &hs) {
			return nil, "", false, fmt.Sprintf("handshake %d", hs.status), err
		}
		return nil, "", true, "dial", err
	}
	// When the connection ends while it waits in line, its window ends too.
	var w waiting
	defer func() { w.end(r, time.Now(), false) }()
	var refused *message // an error message; its close frame follows and says whether to try again
	// Positions are recorded where they are read; they join the result when the connection ends.
	// (conn, not sock: a return sets the result sock to nil before this runs.)
	conn := sock
	defer func() { r.Positions = append(r.Positions, conn.takePositions()...) }()
	for first := true; ; first = false {
		wait := readWait
		if refused != nil {
			wait = writeWait
		}
		m, at, err := sock.read(ctx, v.hold, wait)
		if errors.Is(err, errHoldEnded) && ctx.Err() == nil {
			// The user stops waiting at the hold's end, not when its socket is closed after it: a tick
			// still being pushed then is not one this user missed (positions read until the close are kept,
			// after the window).
			w.end(r, at, false)
			v.endHold(sock, p, r, w.placed)
			return nil, "", false, "", nil
		}
		if err != nil {
			sock.drop()
			var ce *websocket.CloseError
			closed := errors.As(err, &ce)
			switch {
			case closed && (ce.Code == websocket.CloseServiceRestart || ce.Code == websocket.CloseTryAgainLater):
				return nil, "", true, fmt.Sprintf("closed %d", ce.Code), err
			case refused != nil:
				return nil, "", false, "server " + refused.Code, fmt.Errorf("server error %s: %s; then %w", refused.Code, refused.Message, err)
			case closed:
				return nil, "", false, fmt.Sprintf("closed %d", ce.Code), err
			case errors.Is(err, errProtocol):
				return nil, "", false, "protocol", err
			case isTimeout(err):
				return nil, "", false, "read timeout", err
			}
			return nil, "", false, "read", err
		}
		if first && p.firstMessageAt.IsZero() {
			p.firstMessageAt = at
			r.Connect, r.Connected = p.firstMessageAt.Sub(dialAt), true
		}
		switch m.Type {
		case "queued", "prequeue":
			// prequeue: the sale has not opened; the place is in the pre-queue, and position messages follow
			// the opening. Either way the token keeps the place across reconnects.
			p.token = m.Token
			if r.RegisteredAt.IsZero() {
				r.RegisteredAt = at
				v.count.registered.Add(1)
			}
			w.start(at)
		case "admitted":
			if m.Pass == "" {
				sock.close()
				return nil, "", false, "protocol", fmt.Errorf("%w: admitted without a pass", errProtocol)
			}
			p.token = m.Token
			w.end(r, at, true)
			w.placed = true
			if !r.WasAdmitted {
				r.InQueue, r.WasAdmitted = at.Sub(p.firstMessageAt), true
			}
			if v.hold == nil {
				return sock, m.Pass, false, "", nil
			}
			p.admitted = true // hold mode: stay connected until the hold ends
		case "sold_out":
			sock.close()
			r.Outcome = SoldOut
			return nil, "", false, "", nil
		case "error":
			if m.Code == "INTERNAL" {
				// The pass could not be signed; the socket stays open. Reconnecting hands the pass out again.
				sock.close()
				return nil, "", true, "server INTERNAL", fmt.Errorf("server error %s: %s", m.Code, m.Message)
			}
			refused = &m
		}
		// "paused", "resumed", "unavailable", "available", and any type a newer server adds: keep waiting.
	}
}

// waiting tracks one connection's place: whether it got one (queued or admitted), and its window, open
// from queued to admitted or the connection's end.
type waiting struct {
	placed, open bool
	from         time.Time
}

func (w *waiting) start(at time.Time) {
	w.placed, w.open, w.from = true, true, at
}

// end closes the window at at, if it is open, and records it.
func (w *waiting) end(r *result, at time.Time, admitted bool) {
	if !w.open {
		return
	}
	r.Windows = append(r.Windows, window{From: w.from, To: at, Admitted: admitted})
	w.open = false
}

// endHold ends a hold-mode visit on its still open socket: leave if asked, close, and set the outcome.
// The user counts as held (or admitted) only if this connection had its place (queued or admitted).
func (v *visit) endHold(sock *socket, p *place, r *result, placed bool) {
	if v.cfg.Leave && placed {
		sock.leave()
	}
	sock.close()
	switch {
	case !placed:
		r.fail(kindHoldConnecting, errors.New("the hold ended before the server answered the connect"))
	case p.admitted:
		r.Outcome = Admitted
	default:
		r.Outcome = Held
	}
}

// backoff is the pause before reconnect attempt n (0-based): base·2ⁿ capped at reconnectMax, then jittered
// into [d/2, d) so users dropped together do not come back together.
func backoff(n int) time.Duration {
	d := min(reconnectBase<<min(n, 10), reconnectMax)
	return d/2 + rand.N(d/2)
}

// pause sleeps d, or less if ctx or the hold ends; it reports whether the full pause passed.
func (v *visit) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-v.hold:
		return false
	case <-t.C:
		return true
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// open dials the screening's socket from the user's source, with the token when the user has one.
func (v *visit) open(ctx context.Context, token string) (*socket, error) {
	u := v.wsURL
	if token != "" {
		u += "?token=" + url.QueryEscape(token)
	}
	return dialSocket(ctx, v.src.dial, v.rx, u)
}
