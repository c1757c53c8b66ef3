// The infinite queue: a socket the entry takes for a bot is told a place in a line that never moves and
// held, never registered, until its bot hold ends, its client goes, or the hub drains (botHold).

package hub

import (
	"errors"
	"net"
	"time"

	"github.com/gorilla/websocket"
)

// botHold tells the socket first (a `queued` message of a place nobody will reach) and holds it for d on a
// goroutine of its own: what the client sends is read and dropped. The socket ends with 1013 (try again
// later) when d is up, with 1012 when the hub drains (like a socket waiting for its hello, which is how
// it is listed), or when its client goes; done then runs, at once when the hub is draining already (the
// socket is then told to reconnect).
func (h *Hub) botHold(conn *websocket.Conn, first []byte, d time.Duration, done func()) {
	conn.SetReadLimit(maxMessageSize)
	_ = conn.SetReadDeadline(time.Now().Add(d))
	if !h.holdForHello(conn) {
		Reject(conn, nil, CloseServiceRestart, "server restarting")
		done()
		return
	}
	_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
	if err := conn.WriteMessage(websocket.TextMessage, first); err != nil {
		h.releaseHello(conn)
		h.serving.Done()
		_ = conn.Close()
		done()
		return
	}
	go func() {
		defer h.serving.Done()
		var err error
		for err == nil {
			_, _, err = conn.NextReader()
		}
		draining := h.releaseHello(conn)
		done() // before the close goes out, so whoever hears the close sees the hold ended
		var ne net.Error
		switch {
		case draining:
			Reject(conn, nil, CloseServiceRestart, "server restarting")
		case errors.As(err, &ne) && ne.Timeout():
			Reject(conn, nil, CloseTryAgainLater, "try again later")
		default:
			_ = conn.Close()
		}
	}()
}
