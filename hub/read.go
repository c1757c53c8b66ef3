// A socket's reader: the one goroutine per socket, which reads what its client sends (a leave, pongs,
// pings, the close), enforces the read limits and deadline, and takes the socket out of the hub and counts
// it off in Redis once it is gone; and the read of a socket's hello, before it has a reader.

package hub

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/gorilla/websocket"
	"github.com/waitroom/waitroom/queue"
	"golang.org/x/time/rate"
)

const (
	// pongWait is how long a socket may stay silent (no pong, no message) before it is dropped.
	pongWait = 60 * time.Second
	// maxMessageSize bounds a client frame: the protocol's client messages are tiny.
	maxMessageSize = 512
	// maxHelloSize bounds the hello, which may carry an access code and a proof of work's payload (about
	// 700 bytes) besides the token.
	maxHelloSize = 4 << 10
	// messagesPerSecond and messageBurst bound what one client may send: the protocol's only client message
	// is a leave, so a socket past them is a bot or a bug, and is closed with 1008.
	messagesPerSecond = 5
	messageBurst      = 10
	// maxBadMessages is how many malformed or unknown messages a socket may send: the first is answered with
	// an error message, the next closes the socket with 1008.
	maxBadMessages = 2
	// closeWait bounds how long a socket the server closed is read (and discarded) for the peer's answer.
	closeWait = time.Second
)

// serve reads the client's messages until the socket closes, then takes it out of the hub and calls gone.
// It is the socket's goroutine (Welcome starts it), and its Redis calls (a leave, the count-off) have
// deadlines of their own.
//
// An idle socket's goroutine waits here, nearly always inside NextReader, so this frame is kept small (not
// even a context) and the handling of a message is in handle. Go halves a goroutine's stack at a
// collection only while less than a quarter of it is in use, and a reader that starts on the 8 KiB stack a
// registration burst makes the default (GODEBUG adaptivestackstart) waits in under 2 KiB this way, so its
// stack shrinks to 4 KiB; with the handling inline it waited in 2.1 KiB and kept 8 KiB: 155 MB at 19,000
// sockets instead of 79 MB (docs/benchmarks.md). A frame more between the goroutine's start and this one
// (a context and a wrapper function) did the same: 120–150 MB.
func (h *Hub) serve(c *client, gone func()) {
	defer gone()
	defer h.serving.Done()
	defer h.leave(c)
	c.prepareRead()
	var st readState
	for {
		_, r, err := c.conn.NextReader()
		if !h.handle(c, r, err, &st) {
			return
		}
	}
}

// readState is what a socket's reader remembers between messages. The limiter is made at the first
// message: most sockets never send one, and an idle socket should cost little.
type readState struct {
	limiter *rate.Limiter
	bad     int
}

// prepareRead sets the socket's read limit and deadline, and has gorilla's reader queue its answers to a
// ping and to a close instead of writing them: the writers are the connection's only writers (flush).
//
//go:noinline
func (c *client) prepareRead() {
	c.conn.SetReadLimit(maxMessageSize)
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	c.conn.SetPingHandler(func(data string) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.closed {
			c.pongDue, c.pong = true, []byte(data) // RFC 6455 §5.5.3: answering only the latest ping will do
			c.scheduleLocked()
		}
		return nil
	})
	c.conn.SetCloseHandler(func(code int, _ string) error {
		c.close(code, "") // echo the peer's code, as gorilla's own handler would; the writer then closes
		return nil
	})
}

// handle acts on one client message (r, or the read error err) and tells whether to go on reading.
//
//go:noinline
func (h *Hub) handle(c *client, r io.Reader, err error, st *readState) bool {
	var data []byte
	if err == nil {
		data, err = io.ReadAll(r)
	}
	if err != nil {
		if err == websocket.ErrReadLimit {
			c.closeRead(websocket.CloseMessageTooBig, "message too big", true)
		}
		return false
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	if st.limiter == nil {
		st.limiter = rate.NewLimiter(messagesPerSecond, messageBurst)
	}
	if !st.limiter.Allow() {
		c.send(ErrorMessage("TOO_MANY_MESSAGES", "more messages than the protocol needs; reconnect with your token"))
		c.closeRead(websocket.ClosePolicyViolation, "too many messages", false)
		return false
	}
	in, err := DecodeInbound(data)
	if err != nil {
		c.send(ErrorMessage("BAD_MESSAGE", err.Error()))
		if st.bad++; st.bad >= maxBadMessages {
			c.closeRead(websocket.ClosePolicyViolation, "repeated bad messages", false)
			return false
		}
		return true
	}
	_ = in // a leave: the only message there is
	leaveCtx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	_, err = h.leaver.Leave(leaveCtx, c.screening, c.token)
	cancel()
	if err != nil {
		h.log.Error("hub: leave", "screening", c.screening, "err", err)
		c.send(ErrorMessage("UNAVAILABLE", "could not leave the line; try again"))
		return true
	}
	c.close(websocket.CloseNormalClosure, "left")
	return true
}

// closeRead closes a socket from its reader while the peer is still sending: the close frame is queued
// as by close, then what the peer sends is read and dropped until it answers the close or closeWait passes,
// and only then is the connection closed. Closed at once with unread data in it, TCP would reset the
// connection, and the peer would lose the close frame that says why. readerFailed says gorilla refuses
// every further read (after a frame over the read limit): the rest of the peer's frame and whatever follows
// is then read from the connection itself, until the peer closes or closeWait passes.
func (c *client) closeRead(code int, reason string, readerFailed bool) {
	c.mu.Lock()
	if !c.closed {
		c.linger = true
	}
	c.closeLocked(code, reason)
	c.mu.Unlock()
	drainAndClose(c.conn, readerFailed)
}

// drainAndClose reads and drops what the peer still sends, until it answers a close frame already sent or
// closeWait passes, then closes the connection (see closeRead); readerFailed: gorilla refuses every further
// read, so the connection itself is read.
func drainAndClose(conn *websocket.Conn, readerFailed bool) {
	if readerFailed {
		raw := conn.UnderlyingConn()
		_ = raw.SetReadDeadline(time.Now().Add(closeWait))
		_, _ = io.Copy(io.Discard, raw)
	} else {
		_ = conn.SetReadDeadline(time.Now().Add(closeWait))
		for {
			if _, _, err := conn.NextReader(); err != nil {
				break
			}
		}
	}
	_ = conn.Close()
}

// readHello reads the first message of a socket connected with auth=message, which must be a hello
// (DecodeHello); the caller has set the read limit and deadline. A ping before it is answered by gorilla's
// own handler, which writes the pong itself: the socket has no other writer yet.
func readHello(conn *websocket.Conn) (Hello, error) {
	typ, data, err := conn.ReadMessage()
	if err != nil {
		return Hello{}, err
	}
	if typ != websocket.TextMessage {
		return Hello{}, errBadHello
	}
	return DecodeHello(data)
}

// rejectReading turns away a socket that never joined the hub while its peer may still be sending: msg and
// a close frame, then what the peer sends is drained as closeRead does, so the close is not lost to a reset.
// The caller is the socket's only writer.
func rejectReading(conn *websocket.Conn, msg []byte, code int, reason string) {
	_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
	_ = conn.WriteMessage(websocket.TextMessage, msg)
	_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason))
	drainAndClose(conn, false)
}

// leave closes the client's socket, counts it off in Redis, so a waiting user who never comes back stops
// costing an admission after the grace (an admitted one's count is just dropped), and takes it out of the
// hub.
func (h *Hub) leave(c *client) {
	c.close(websocket.CloseNormalClosure, "")
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	if err := h.lines.Disconnected(ctx, c.screening, c.token); errors.Is(err, queue.ErrQueued) {
		// A mass close (a drain, a crowd leaving at once) outran the wait; the count-off still goes out.
		h.log.Debug("hub: disconnect still queued", "screening", c.screening)
	} else if err != nil {
		h.log.Warn("hub: disconnect", "screening", c.screening, "err", err)
	}
	cancel()
	h.remove(c)
}
