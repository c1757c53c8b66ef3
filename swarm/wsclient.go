// The swarm's client side of a WebSocket (RFC 6455), as little as the waiting room's protocol needs: the
// socket a user's goroutine reads events from and writes its few masked frames to (leave, pong, close).
// The opening handshake is wsdial.go's; the frames from the server (unmasked, possibly fragmented, pings
// and a close between them) are wsframe.go's.
//
// The swarm shares the cores with the server it measures, and at 19,000 sockets per tick reading is half
// the machine's work. A goroutine per socket reading through gorilla costs two read system calls per
// message (the second finds the socket empty and parks the goroutine) and a trip through the scheduler.
// Here a reactor (reactor_linux.go) waits on all of a process's sockets with one epoll set and reads each
// ready socket once; position messages, nearly all of the traffic, are recorded where they are read and
// wake nobody. The user's goroutine sees only the other messages. Where there is no reactor (a wss URL,
// or not Linux) a goroutine per socket (connreader.go) feeds the same frame reader from the connection.

package swarm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// handshakeTimeout bounds the TCP dial and the WebSocket opening handshake.
	handshakeTimeout = 10 * time.Second
	// readWait bounds the silence on a waiting socket. The line may not move for a long time (no position
	// pushes while admission is at capacity), but the server pings every 54 s and every ping extends it.
	readWait = 75 * time.Second
	// writeWait bounds one write: a pong, a leave, a close frame.
	writeWait = 5 * time.Second
	// maxMessageSize bounds one server message; the largest, admitted, carries a pass of a few hundred bytes.
	maxMessageSize = 16 << 10
)

// event is what a socket's reader hands to the user's goroutine: a message other than a position, a ping
// (ping set, its payload in data), or the end of the connection (err: a *websocket.CloseError for a close
// frame, else why the reading stopped).
type event struct {
	msg  message
	at   time.Time
	ping bool
	// answered: the reader sent the ping's pong itself (see socket.pong); the user only notes the ping.
	answered bool
	data     []byte
	err      error
}

// transport is where a socket's frames go and how its connection ends: a file descriptor the reactor
// polls, or a net.Conn a goroutine reads.
type transport interface {
	write(b []byte, deadline time.Time) error
	// close releases the connection; the reader stops first, so it never reads a reused descriptor.
	close()
}

// socket is one user's connection. Its reader (the reactor, or the socket's own goroutine) is the only one
// to touch the frame state; the user's goroutine is the only one to write and to close. They meet under
// mu: the events the user has yet to take, and the positions recorded since it last took them.
type socket struct {
	t transport

	// The reader's own state.
	partial []byte // the start of a frame that has not all arrived
	msg     []byte // a fragmented message so far
	inMsg   bool   // a fragmented message is open
	prev    string // the type of the previous message on the connection
	done    bool   // the reader has stopped (a close frame, an error, EOF)

	mu        sync.Mutex
	events    []event
	positions []position
	notify    chan struct{} // a token when events were added

	// wmu keeps the frames written whole: the user's goroutine writes, and so does the reader (a pong).
	wmu sync.Mutex
}

func newSocket() *socket {
	return &socket{notify: make(chan struct{}, 1)}
}

// stop ends the reading with err, the last event the user gets.
func (k *socket) stop(err error) {
	if k.done {
		return
	}
	k.done = true
	k.push(event{err: err, at: time.Now()})
}

func (k *socket) push(e event) {
	k.mu.Lock()
	k.events = append(k.events, e)
	k.mu.Unlock()
	select {
	case k.notify <- struct{}{}:
	default:
	}
}

// take returns the next event, if any.
func (k *socket) take() (event, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.events) == 0 {
		return event{}, false
	}
	e := k.events[0]
	k.events[0] = event{}
	k.events = k.events[1:]
	if len(k.events) == 0 {
		k.events = nil
	}
	return e, true
}

// takePositions returns the positions recorded since the last call, in the order they arrived.
func (k *socket) takePositions() []position {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.positions
	k.positions = nil
	return p
}

// readTimeout is a read that waited its whole wait; it is a net.Error whose Timeout is true.
type readTimeout struct{ wait time.Duration }

func (e readTimeout) Error() string   { return fmt.Sprintf("no message for %s", e.wait) }
func (e readTimeout) Timeout() bool   { return true }
func (e readTimeout) Temporary() bool { return true }

// read returns the next message other than a position and when it arrived, waiting at most wait (each ping
// from the server, answered here, extends it to readWait). It returns errHoldEnded once hold is closed,
// ctx's error once it ends, and the connection's end (a *websocket.CloseError for a close frame) as an
// error.
func (k *socket) read(ctx context.Context, hold <-chan struct{}, wait time.Duration) (message, time.Time, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-hold:
			return message{}, time.Now(), errHoldEnded
		default:
		}
		if e, ok := k.take(); ok {
			switch {
			case e.err != nil:
				return message{}, e.at, e.err
			case e.ping:
				// The server is there: extend the wait, and answer as RFC 6455 §5.5.2 asks, unless the
				// reader did.
				if !e.answered {
					_ = k.writeFrame(opPong, e.data)
				}
				timer.Reset(readWait)
				continue
			}
			return e.msg, e.at, nil
		}
		select {
		case <-k.notify:
		case <-hold:
			return message{}, time.Now(), errHoldEnded
		case <-ctx.Done():
			return message{}, time.Now(), context.Cause(ctx)
		case <-timer.C:
			return message{}, time.Now(), readTimeout{wait}
		}
	}
}

// pong answers a ping from the reader, as it reads it, so that a user busy elsewhere (a reservation, a
// checkout, a pause between its steps) is never dropped by the server's pong timeout. It reports whether it
// did: not when there is no transport (a test's bare frame reader) or the user's goroutine is writing
// (that goroutine answers when it reads the ping). The write is bounded by pongWait, so one socket whose
// send buffer is full holds up the reactor's other sockets at most that long.
func (k *socket) pong(payload []byte) bool {
	if k.t == nil || !k.wmu.TryLock() {
		return false
	}
	defer k.wmu.Unlock()
	return k.t.write(maskedFrame(opPong, payload), time.Now().Add(pongWait)) == nil
}

// pongWait bounds a pong written by the reader.
const pongWait = 100 * time.Millisecond

// writeFrame sends one masked frame (RFC 6455 §5.3): a control frame's payload fits the first length byte;
// a data frame's (a hello with a proof of work) may take the 16-bit extended length.
func (k *socket) writeFrame(op byte, payload []byte) error {
	if len(payload) > maxSentPayload || op >= opClose && len(payload) > maxControlPayload {
		return fmt.Errorf("a frame of %d bytes; the swarm sends at most %d", len(payload), maxSentPayload)
	}
	k.wmu.Lock()
	defer k.wmu.Unlock()
	return k.t.write(maskedFrame(op, payload), time.Now().Add(writeWait))
}

// maskedFrame is one masked frame of op carrying payload.
func maskedFrame(op byte, payload []byte) []byte {
	b := make([]byte, 0, 8+len(payload))
	if len(payload) <= maxControlPayload {
		b = append(b, 0x80|op, 0x80|byte(len(payload)))
	} else {
		b = append(b, 0x80|op, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	}
	mask := rand.Uint32()
	b = binary.BigEndian.AppendUint32(b, mask)
	for i, c := range payload {
		b = append(b, c^byte(mask>>(8*(3-i%4))))
	}
	return b
}

// maxSentPayload bounds what the swarm sends in one frame: a hello with a proof of work's payload is under
// a kilobyte, and the server reads at most 4 KiB of it.
const maxSentPayload = 4 << 10

// helloMessage is the first message of a socket dialled with auth=message: the user's token ("" for a new
// place), its proof of work's payload and its access code, each only when there is one, all kept out of
// the URL.
type helloMessage struct {
	Type   string `json:"type"`
	Token  string `json:"token,omitempty"`
	Altcha string `json:"altcha,omitempty"`
	Code   string `json:"code,omitempty"`
}

// hello sends h as the socket's first message.
func (k *socket) hello(h helloMessage) error {
	h.Type = "hello"
	b, err := json.Marshal(h) // a token is hex, but it came from the server: never trust it raw
	if err != nil {
		return err
	}
	return k.writeFrame(opText, b)
}

// leave tells the server the user is done with its place or slot ({"type":"leave"}).
func (k *socket) leave() {
	_ = k.writeFrame(opText, []byte(`{"type":"leave"}`))
}

// close ends the visit with a normal close, then releases the connection.
func (k *socket) close() {
	_ = k.writeFrame(opClose, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"))
	k.drop()
}

// drop releases the connection without a close frame (the connection already failed).
func (k *socket) drop() {
	k.t.close()
}

// errHoldEnded is a read cut short because the hold ended.
var errHoldEnded = errors.New("the hold ended")
