// A socket's arrival: its hello when the token travels in a message, its registration in the line (or the
// place it kept), its first message, its joining the hub, the catch-up on any event that came in between,
// and its reader. The HTTP handler that upgraded the socket makes one call, Welcome.

package hub

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/overload"
	"github.com/waitroom/waitroom/queue"
)

// Arrival is a socket the server upgraded, for the hub to welcome.
type Arrival struct {
	Conn      *websocket.Conn
	Screening string
	// Token is the token the client sent in the URL ("" for a new place).
	Token string
	// AwaitHello says the token comes in the socket's first message instead (auth=message): Welcome reads
	// that hello before anything else, and Token must be "".
	AwaitHello bool
	// OpensAt is the screening's sale time: a token that arrives before it waits in the pre-queue.
	OpensAt time.Time
	// RequestID is the upgrade's HTTP request id, for the log.
	RequestID string
	// Gone, when not nil, runs once the socket is gone, whether it was welcomed or turned away.
	Gone func()
	// Entry, when not nil, is asked after the hello and before anything is registered whether the hello's
	// token may take a place: what the server asks of a socket (a proof of work, an access code), which the
	// hub does not know. Without AwaitHello the hello is made of Token alone.
	Entry Entry
}

// Entry decides whether a socket may take a place, once its hello has come. The hub runs what it answers
// and knows nothing of why.
type Entry interface {
	// Check is asked once, after the hello and before anything is registered.
	Check(ctx context.Context, hello Hello) Verdict
	// Undo takes back what an allowing Check spent, for a registration that did not happen after all (sold
	// out, Redis not answering).
	Undo()
	// BotHoldDone runs once a socket Check asked to hold (BotHold) is gone.
	BotHoldDone()
}

// VerdictKind is what an Entry decided.
type VerdictKind int

const (
	// Allow registers the socket (the zero Verdict).
	Allow VerdictKind = iota
	// Refuse tells the socket an error and closes it, nothing registered.
	Refuse
	// BotHold holds the socket unregistered in the infinite queue (botHold).
	BotHold
)

// Verdict is what Entry.Check answers.
type Verdict struct {
	Kind VerdictKind
	// Token (Allow), when not "", is the token to register instead of the one the client sent (none): the
	// check drew it, because what it spent is bound to it.
	Token string
	// Code and Message (Refuse) are the error the socket is told before it is closed with Close (0: 1008,
	// policy violation) and Reason as the close's reason.
	Code, Message, Reason string
	Close                 int
	// Decoy and For (BotHold) are the place the held socket is shown first, and how long it is held.
	Decoy queue.Entry
	For   time.Duration
}

// Welcome reads the socket's hello first when its token comes in one (AwaitHello), then registers the token
// in the screening's line (a new token when it sent none; the place it kept when it reconnects), tells it
// where it stands, joins it to the hub and catches up on any event that came in between, then serves it on
// a goroutine of the hub's own, so the HTTP handler that upgraded it returns and its deep stack is freed:
// an idle socket then costs one small reading goroutine. A socket the hub cannot take (no hello, a
// malformed token, a sold-out line, Redis not answering, the hub draining) is told why and closed. ctx is the upgrade's request: the reader outlives it, and its own Redis calls have their own
// deadlines.
func (h *Hub) Welcome(ctx context.Context, a Arrival) {
	gone := a.Gone
	if gone == nil {
		gone = func() {}
	}
	hello := Hello{Type: "hello", Token: a.Token}
	if a.AwaitHello {
		var ok bool
		if hello, ok = h.awaitHello(a.Conn); !ok {
			gone()
			return
		}
		a.Token = hello.Token
	}
	// The handshake's slot is taken after the hello, which costs nothing while it is awaited, and held
	// through the registration and the first messages, which cost the CPU and Redis.
	done, ok := h.takeHandshake(ctx, a.Conn)
	if !ok {
		gone()
		return
	}
	c, e := h.admitArrival(ctx, a, hello)
	if c == nil {
		done()
		gone()
		return
	}
	h.catchUp(ctx, c, e)
	done()
	// The reader holds only the client and gone: nothing of the request (its context, its log) stays with
	// an idle socket.
	go h.serve(c, gone)
}

// SetHandshakes bounds the sockets that register at once with g (a gate of class overload.Arrival; nil: no
// bound): a socket whose hello came waits for one of its slots through the registration and first messages,
// and one that waits past g's wait is told BUSY with retryAfter and closed 1013, nothing registered, its
// token's place (if it had one) kept. Call it before the hub serves sockets.
func (h *Hub) SetHandshakes(g *overload.Gate, retryAfter time.Duration) {
	h.handshakes, h.retryAfter = g, retryAfter
}

// takeHandshake waits for a slot of the handshakes' gate and returns what gives it back; a socket that
// waited past the gate's wait is told BUSY and closed (false). Without a bound it takes nothing and makes
// no context for one.
func (h *Hub) takeHandshake(ctx context.Context, conn *websocket.Conn) (done func(), ok bool) {
	if h.handshakes == nil {
		return func() {}, true
	}
	done, err := h.handshakes.Take(overload.With(ctx, overload.Arrival))
	if err != nil {
		Reject(conn, BusyMessage(h.retryAfter), CloseTryAgainLater, CodeBusy)
		return nil, false
	}
	return done, true
}

// helloWait bounds the wait for the hello of a socket connected with auth=message: a client sends it as
// soon as the socket opens, so this is a client that will not, holding a socket (and its address's count)
// for nothing.
const helloWait = 10 * time.Second

// awaitHello reads the hello of a socket connected with auth=message, on the goroutine of the upgrade that
// is running anyway (a goroutine of its own would cost a stack per socket), and returns it. ok is
// false when the socket was turned away, told why and closed, with nothing registered: no hello within
// helloWait, a first message that is not a hello, a client that went, or a hub that is draining.
func (h *Hub) awaitHello(conn *websocket.Conn) (hello Hello, ok bool) {
	conn.SetReadLimit(maxHelloSize)
	// The deadline is set before the socket is listed, so that a drain's wake (wakeHellosLocked), which
	// moves it to now, is never undone by it.
	wait := h.helloWait
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	if !h.holdForHello(conn) {
		Reject(conn, nil, CloseServiceRestart, "server restarting")
		return Hello{}, false
	}
	defer h.serving.Done()
	hello, err := readHello(conn)
	if h.releaseHello(conn) {
		Reject(conn, nil, CloseServiceRestart, "server restarting")
		return Hello{}, false
	}
	var ne net.Error
	switch {
	case err == nil:
		return hello, true
	case errors.Is(err, errBadHello):
		rejectReading(conn, ErrorMessage("BAD_HELLO", err.Error()), websocket.ClosePolicyViolation, "BAD_HELLO")
	case errors.Is(err, websocket.ErrReadLimit):
		drainAndClose(conn, true) // gorilla sent the close 1009 itself
	case errors.As(err, &ne) && ne.Timeout():
		Reject(conn, ErrorMessage("BAD_HELLO", "no hello within "+wait.String()+"; "+errBadHello.Error()), websocket.ClosePolicyViolation, "BAD_HELLO")
	default:
		_ = conn.Close() // the client went, or closed the socket (gorilla answered its close frame)
	}
	return Hello{}, false
}

// holdForHello lists a socket that waits for its hello, so that a drain wakes it, and counts it among the
// sockets Shutdown waits for; false when the hub is draining already.
func (h *Hub) holdForHello(conn *websocket.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining {
		return false
	}
	if h.hellos == nil {
		h.hellos = map[*websocket.Conn]struct{}{}
	}
	h.hellos[conn] = struct{}{}
	h.serving.Add(1)
	return true
}

// releaseHello takes a socket off the hello list once its read has ended, and tells whether the hub is
// draining: then the socket is not registered, whatever it sent.
func (h *Hub) releaseHello(conn *websocket.Conn) (draining bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.hellos, conn)
	return h.draining
}

// wakeHellosLocked ends the hello wait of every socket still in it (their reads fail at once), so that a
// drain tells them to reconnect instead of leaving them to their helloWait. h.mu is held.
func (h *Hub) wakeHellosLocked() {
	for conn := range h.hellos {
		_ = conn.SetReadDeadline(time.Now())
	}
}

// admitArrival registers the arrival, whose hello is hello, and joins it to the hub, or turns it away (nil).
func (h *Hub) admitArrival(ctx context.Context, a Arrival, hello Hello) (*client, queue.Entry) {
	if a.Token != "" && !queue.ValidToken(a.Token) {
		Reject(a.Conn, ErrorMessage("BAD_TOKEN", "a token is 32 lowercase hex digits; connect without one to get a new place"), websocket.ClosePolicyViolation, "BAD_TOKEN")
		return nil, queue.Entry{}
	}
	if a.Entry != nil {
		v := a.Entry.Check(ctx, hello)
		switch v.Kind {
		case BotHold:
			h.botHold(a.Conn, queuedMessage(v.Decoy, ""), v.For, a.Entry.BotHoldDone)
			return nil, queue.Entry{}
		case Refuse:
			code := websocket.ClosePolicyViolation
			if v.Close != 0 {
				code = v.Close
			}
			Reject(a.Conn, ErrorMessage(v.Code, v.Message), code, v.Reason)
			return nil, queue.Entry{}
		}
		if v.Token != "" {
			a.Token = v.Token
		}
	}
	e, err := h.lines.Enter(ctx, a.Screening, a.Token, a.OpensAt)
	switch {
	case errors.Is(err, queue.ErrClosed) && e.ClosedReason == queue.ReasonReset:
		undoEntry(a.Entry)
		Reject(a.Conn, nil, CloseServiceRestart, "sale reset") // back in a moment, into the fresh line
		return nil, e
	case errors.Is(err, queue.ErrClosed):
		undoEntry(a.Entry)
		Reject(a.Conn, SoldOutMessage(e.ClosedReason), websocket.CloseNormalClosure, "sold out")
		return nil, e
	case err != nil:
		undoEntry(a.Entry)
		h.log.Error("socket: register", "request_id", a.RequestID, "screening", a.Screening, "err", err)
		if e.Token != "" {
			// No answer: the registration may have run. Undone, it counts nothing for a socket that never
			// joined, and leaves no fresh token in line that its client never learnt.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoWait)
			if err := h.lines.Undo(uctx, a.Screening, e); err != nil && !errors.Is(err, queue.ErrQueued) {
				h.log.Warn("socket: undo a registration", "screening", a.Screening, "err", err)
			}
			cancel()
		}
		Reject(a.Conn, ErrorMessage("UNAVAILABLE", "the waiting room is unavailable; retry shortly"), CloseTryAgainLater, "UNAVAILABLE")
		return nil, e
	}
	c := h.join(a.Conn, a.Screening, e.Token, e.Seq, e.Numbering, e.Paused, firstMessage(e, a.OpensAt, h.receipt(a.Screening, e)))
	if c != nil && e.AllHeld && e.State != queue.Admitted {
		c.send(AllHeldMessage()) // it missed the all_held the waiting before it heard
	}
	if c != nil && e.Waitlisted && e.State != queue.Admitted {
		c.send(SoldOutWaitlistMessage()) // sold out: it waits on the waitlist
	}
	if c == nil {
		// Draining: the socket Enter counted is gone; the client reconnects elsewhere within the grace.
		if err := h.lines.Disconnected(context.WithoutCancel(ctx), a.Screening, e.Token); err != nil {
			h.log.Warn("socket: disconnect", "screening", a.Screening, "err", err)
		}
	}
	return c, e
}

// undoEntry takes back what e (nil: no check) spent, for a registration that did not happen.
func undoEntry(e Entry) {
	if e != nil {
		e.Undo()
	}
}

// undoWait bounds the wait for a registration's undo (Queue.Undo) before the socket is told to retry; an
// undo still queued then goes out all the same.
const undoWait = 5 * time.Second

// firstMessage is what a registered socket is told first: its rank, or its place in the pre-queue (an
// admitted token is sent its pass by the catch-up).
func firstMessage(e queue.Entry, opensAt time.Time, receipt string) []byte {
	switch e.State {
	case queue.Waiting:
		return queuedMessage(e, receipt)
	case queue.Pre:
		return preQueueMessage(e, opensAt, receipt)
	}
	return nil
}

// Receipts signs the receipt of a token's place (package fairness).
type Receipts interface {
	Receipt(screening, token string, p queue.Placed) ([]byte, error)
}

// SetReceipts makes every first message of a place carry its receipt, signed by r. Call it before the hub
// is used.
func (h *Hub) SetReceipts(r Receipts) { h.receipts = r }

// receipt is the signed receipt of e's place, or "" when there is none to give.
func (h *Hub) receipt(screening string, e queue.Entry) string {
	if h.receipts == nil || e.Receipt == nil || (e.State != queue.Waiting && e.State != queue.Pre) {
		return ""
	}
	b, err := h.receipts.Receipt(screening, e.Token, *e.Receipt)
	if err != nil {
		h.log.Warn("socket: sign a receipt", "screening", screening, "err", err)
		return ""
	}
	return string(b)
}

// catchUp closes the gap between registering and joining the hub: an admission event in that gap was not
// pushed to this socket, so it reads the entry again and sends what the event changed (an admission, or a
// new rank). Without such an event (missed says which) there is nothing to catch up and no Redis call.
//
// A socket that registered in the pre-queue has no place in the line until the read here gives it one, and
// the hub pushes nothing to a socket without a place: an event dispatched between the read and the place
// (the first tick often comes in the opening's millisecond) moved the line past the read, with nothing
// pushed here. missed tells whether one was (against the read's epoch); the entry is then read once more,
// and from then on every event reaches the socket.
func (h *Hub) catchUp(ctx context.Context, c *client, e queue.Entry) {
	if e.State == queue.Admitted {
		c.admit(e.ExpiresAt, e.Offer)
		return
	}
	if !h.missed(c, e.Epoch) {
		return
	}
	for {
		mark := c.mark()
		now, err := h.lines.Status(ctx, c.screening, e.Token)
		if err != nil {
			h.log.Warn("socket: catch up", "screening", c.screening, "err", err)
			return
		}
		switch {
		case now.State == queue.Closed:
			c.send(SoldOutMessage(""))
			c.close(websocket.CloseNormalClosure, "sold out")
		case now.State == queue.Admitted:
			c.admit(now.ExpiresAt, now.Offer)
		case now.State == queue.Waiting && e.State == queue.Pre:
			// The line opened between registering and joining: this socket missed its shuffled place.
			c.place(now.Seq, now.Numbering)
			if h.missed(c, now.Epoch) {
				e = queue.Entry{Token: e.Token, State: queue.Waiting, ZeroBasedRank: -1}
				continue
			}
			c.sendUnlessTicked(mark, catchUpMessage(now.ZeroBasedRank, now.Total, time.Now().UnixMilli()))
		case now.State == queue.Waiting && now.ZeroBasedRank != e.ZeroBasedRank:
			c.sendUnlessTicked(mark, catchUpMessage(now.ZeroBasedRank, now.Total, time.Now().UnixMilli()))
		}
		return
	}
}
