// One virtual user's visit: it waits in line on the screening's socket, over as many connections as
// reconnects take, keeping its place with its token, then reserves once admitted (flow mode) or stays
// connected until the hold ends (line mode).

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
	// maxBusy bounds how often one user comes back after a BUSY refusal (the server too busy to register
	// it, saying when to return), which does not count as a reconnect's failure.
	maxBusy = 30
	// reconnectBase and reconnectMax shape the backoff between reconnects: base·2ⁿ, capped, with jitter.
	reconnectBase = 250 * time.Millisecond
	reconnectMax  = 5 * time.Second
)

// kindHoldConnecting is the error kind of a user in line mode that was dialing, or waiting to dial again,
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
// Line: wait in line, admitted or not, until the hold ends, then close (wait does it all).
func (v *visit) run(ctx context.Context) result {
	var r result
	sock, pass := v.wait(ctx, &r)
	if sock == nil {
		return r
	}
	if v.reserve(ctx, sock, pass, &r) {
		// Free the admission slot at once rather than when it lapses, so the next in line moves up.
		sock.leave()
	}
	sock.close()
	if r.Code != "" && r.Outcome == "" { // hold checkout: reserve left the outcome to the checkout
		v.checkout(ctx, &r) // the hold keeps the slot; the user pays (or not) off the socket
	}
	return r
}

// wait opens the socket and reads pushes until admitted in flow mode (it returns the open socket and the
// pass) or the visit ends otherwise (it returns nil, with r's outcome set). A close 1012 or 1013, or a
// failed dial, is answered by dialing again with the token, keeping the place, at most maxReconnects times.
func (v *visit) wait(ctx context.Context, r *result) (*socket, string) {
	var place place
	busy := 0
	for attempt := 0; ; attempt++ {
		end := v.connect(ctx, &place, r)
		kind := end.kind
		pause := backoff(attempt)
		if end.busyWait > 0 && busy < maxBusy {
			// Refused for a moment, told when to return: then, spread over as long again. Not a failure.
			busy++
			r.Busy++
			attempt--
			pause = end.busyWait + rand.N(end.busyWait)
		}
		switch {
		case end.sock != nil:
			return end.sock, end.pass
		case end.err == nil:
			return nil, "" // the outcome is set: sold out, or the hold is over
		case ctx.Err() != nil:
			r.fail(stopKind(ctx), end.err)
			return nil, ""
		case end.retry && attempt < maxReconnects:
			if v.pause(ctx, pause) {
				r.Reconnects++
				continue
			}
			kind = kindHoldConnecting
			if ctx.Err() != nil {
				kind = stopKind(ctx)
			}
			r.fail(kind, end.err)
			return nil, ""
		case end.retry:
			kind += fmt.Sprintf(" (after %d reconnects)", attempt)
		}
		r.fail(kind, end.err)
		return nil, ""
	}
}

// place is what a user keeps across its connections.
type place struct {
	token          string
	firstMessageAt time.Time
	// admitted (line mode): some connection got admitted; the user ends as Admitted.
	admitted bool
}

// ending is how one connection of a user's wait ended: admitted in flow mode (sock is the open socket, pass
// its pass); the visit over (no error: r's outcome is set, sold out or the hold is over); or an error, with
// its kind and whether dialing again with the token is the answer (a failed dial, a close 1012 or 1013, an
// INTERNAL error message).
type ending struct {
	sock  *socket
	pass  string
	retry bool
	// busyWait is a BUSY refusal's wait before dialing again (0: none asked).
	busyWait time.Duration
	kind     string
	err      error
}

// connect dials one socket of a user's wait, with the place's token if it has one, and reads it until it
// ends. A dial for a new place, where the screening asks for a proof of work, solves a challenge first.
func (v *visit) connect(ctx context.Context, p *place, r *result) ending {
	var proof string
	if v.cfg.PowCost > 0 && p.token == "" {
		var end ending
		var ok bool
		if proof, end, ok = v.prove(ctx, r); !ok {
			return end
		}
	}
	dialAt := time.Now()
	if r.FirstDialAt.IsZero() {
		r.FirstDialAt = dialAt
	}
	sock, err := v.open(ctx, p.token, proof)
	if err != nil {
		var hs *handshakeError
		if errors.As(err, &hs) {
			return ending{kind: fmt.Sprintf("handshake %d", hs.status), err: err}
		}
		return ending{retry: true, kind: "dial", err: err}
	}
	c := &connection{visit: v, sock: sock, place: p, r: r, dialAt: dialAt}
	defer c.finish()
	return c.readUntilEnd(ctx)
}

// connection is one open socket of a user's wait, as its messages are read.
type connection struct {
	*visit
	sock   *socket
	place  *place
	r      *result
	dialAt time.Time
	w      waiting
	// refused is an error message the server sent; its close frame follows and says whether to try again.
	refused *message
	// waitlistUntil is when a user on the waitlist (sold_out with waitlist) stops waiting for an offer.
	waitlistUntil time.Time
}

// finish adds what the connection saw to the result when it ends: the positions, recorded where they were
// read, and its window if it was still waiting in line.
func (c *connection) finish() {
	c.r.Positions = append(c.r.Positions, c.sock.takePositions()...)
	c.w.end(c.r, time.Now(), false)
}

// readUntilEnd reads messages until one ends the connection (admitted in flow mode, sold out, an INTERNAL
// error), the hold ends, or the connection fails.
func (c *connection) readUntilEnd(ctx context.Context) ending {
	for first := true; ; first = false {
		wait := readWait
		if c.refused != nil {
			wait = writeWait
		}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if !c.waitlistUntil.IsZero() {
			// On the waitlist: the wait for an offer ends at waitlistUntil, however often the server pings.
			rctx, cancel = context.WithDeadline(ctx, c.waitlistUntil)
		}
		m, at, err := c.sock.read(rctx, c.hold, wait)
		cancel()
		if err != nil && rctx.Err() != nil && ctx.Err() == nil {
			return c.leaveWaitlist()
		}
		if errors.Is(err, errHoldEnded) && ctx.Err() == nil {
			// The user stops waiting at the hold's end, not when its socket is closed after it: a tick
			// still being pushed then is not one this user missed (positions read until the close are kept,
			// after the window).
			c.w.end(c.r, at, false)
			c.endHold(c.sock, c.place, c.r, c.w.placed)
			return ending{}
		}
		if err != nil {
			c.sock.drop()
			return c.failed(err)
		}
		if first && c.place.firstMessageAt.IsZero() {
			c.place.firstMessageAt = at
			c.r.Connect, c.r.Connected = at.Sub(c.dialAt), true
		}
		if end, done := c.handle(m, at); done {
			return end
		}
	}
}

// leaveWaitlist ends a wait on the waitlist that brought no offer in time: the user leaves, sold out.
func (c *connection) leaveWaitlist() ending {
	c.sock.close()
	c.r.Outcome = SoldOut
	return ending{}
}

// failed names a read that ended the connection: a close frame, an error message the close frame
// followed, a protocol error, a read timeout.
func (c *connection) failed(err error) ending {
	var ce *websocket.CloseError
	closed := errors.As(err, &ce)
	switch {
	case closed && (ce.Code == websocket.CloseServiceRestart || ce.Code == websocket.CloseTryAgainLater):
		var busyWait time.Duration
		if c.refused != nil {
			// The error message the close followed says why (RATE_LIMITED: which limit): the report names
			// the server's setting from it. BUSY says when to come back.
			err = fmt.Errorf("server error %s: %s; then %w", c.refused.Code, c.refused.Message, err)
			if c.refused.Code == "BUSY" {
				busyWait = time.Duration(max(c.refused.RetryAfterMs, 1)) * time.Millisecond
			}
		}
		return ending{retry: true, busyWait: busyWait, kind: fmt.Sprintf("closed %d", ce.Code), err: err}
	case c.refused != nil:
		return ending{kind: "server " + c.refused.Code, err: fmt.Errorf("server error %s: %s; then %w", c.refused.Code, c.refused.Message, err)}
	case closed:
		return ending{kind: fmt.Sprintf("closed %d", ce.Code), err: err}
	case errors.Is(err, errProtocol):
		return ending{kind: "protocol", err: err}
	case isTimeout(err):
		return ending{kind: "read timeout", err: err}
	}
	return ending{kind: "read", err: err}
}

// handle acts on one message; done says the connection ended with it.
func (c *connection) handle(m message, at time.Time) (end ending, done bool) {
	switch m.Type {
	case "queued", "prequeue":
		// prequeue: the sale has not opened; the place is in the pre-queue, and position messages follow
		// the opening. Either way the token keeps the place across reconnects.
		c.place.token = m.Token
		if c.r.RegisteredAt.IsZero() {
			c.r.RegisteredAt = at
			c.count.registered.Add(1)
		}
		c.w.start(at)
	case "admitted":
		return c.admitted(m, at)
	case "offered":
		// Seats came back on the waitlist: the offer's pass reserves as an admission's does.
		c.waitlistUntil = time.Time{}
		c.r.Offered = true
		return c.admitted(m, at)
	case "sold_out":
		if m.Waitlist && c.cfg.Checkout.WaitlistWait > 0 {
			if c.waitlistUntil.IsZero() {
				c.waitlistUntil = at.Add(c.cfg.Checkout.WaitlistWait)
				c.r.Waitlisted = true
			}
			return ending{}, false // it stays on the waitlist
		}
		c.sock.close()
		c.r.Outcome = SoldOut
		return ending{}, true
	case "error":
		if m.Code == "INTERNAL" {
			// The pass could not be signed; the socket stays open. Reconnecting hands the pass out again.
			c.sock.close()
			return ending{retry: true, kind: "server INTERNAL", err: fmt.Errorf("server error %s: %s", m.Code, m.Message)}, true
		}
		c.refused = &m
	}
	// "paused", "resumed", "unavailable", "available", and any type a newer server adds: keep waiting.
	return ending{}, false
}

// admitted records the admission. In flow mode it ends the connection with the open socket and the pass;
// in line mode the user stays connected until the hold ends.
func (c *connection) admitted(m message, at time.Time) (end ending, done bool) {
	if m.Pass == "" {
		c.sock.close()
		return ending{kind: "protocol", err: fmt.Errorf("%w: admitted without a pass", errProtocol)}, true
	}
	c.place.token = m.Token
	c.w.end(c.r, at, true)
	c.w.placed = true
	if !c.r.WasAdmitted {
		c.r.InQueue, c.r.WasAdmitted = at.Sub(c.place.firstMessageAt), true
	}
	if c.hold == nil {
		return ending{sock: c.sock, pass: m.Pass}, true
	}
	c.place.admitted = true
	return ending{}, false
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

// endHold ends a line-mode visit on its still open socket: leave if asked, close, and set the outcome.
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

// open dials the screening's socket from the user's source and says hello with the token when the user
// has one, the proof of work's payload (proof, "" for none) and the run's access code (docs/protocol.md
// 4.6), or, with Config.TokenInURL, puts them all in the URL as older clients do.
func (v *visit) open(ctx context.Context, token, proof string) (*socket, error) {
	if v.cfg.TokenInURL {
		q := ""
		for _, kv := range [][2]string{{"token", token}, {"altcha", proof}, {"code", v.cfg.Code}} {
			if kv[1] != "" {
				q += "&" + kv[0] + "=" + url.QueryEscape(kv[1])
			}
		}
		u := v.wsURL
		if q != "" {
			u += "?" + q[1:]
		}
		return dialSocket(ctx, v.src.dial, v.rx, u)
	}
	sock, err := dialSocket(ctx, v.src.dial, v.rx, v.wsURL+"?auth=message")
	if err != nil {
		return nil, err
	}
	if err := sock.hello(helloMessage{Token: token, Altcha: proof, Code: v.cfg.Code}); err != nil {
		sock.drop()
		return nil, fmt.Errorf("hello: %w", err)
	}
	return sock, nil
}
