package swarm

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// The swarm's client side of a WebSocket (RFC 6455), as little as the waiting room's protocol needs: the
// opening handshake, frames from the server (unmasked, possibly fragmented, pings and a close between
// them), and a few masked frames to it (leave, pong, close).
//
// The swarm shares the cores with the server it measures, and at 19,000 sockets per tick reading is half
// the machine's work. A goroutine per socket reading through gorilla costs two read system calls per
// message (the second finds the socket empty and parks the goroutine) and a trip through the scheduler.
// Here a reactor (reactor_linux.go) waits on all of a process's sockets with one epoll set and reads each
// ready socket once; position messages, nearly all of the traffic, are recorded where they are read and
// wake nobody. The user's goroutine sees only the other messages. Where there is no reactor (a wss URL,
// or not Linux) a goroutine per socket feeds the same frame reader from the connection.

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

// The frame opcodes of RFC 6455 §5.2.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// maxControlPayload bounds a control frame's payload (RFC 6455 §5.5).
const maxControlPayload = 125

// websocketGUID is the handshake's constant (RFC 6455 §1.3).
const websocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// event is what a socket's reader hands to the user's goroutine: a message other than a position, a ping
// (ping set, its payload in data), or the end of the connection (err: a *websocket.CloseError for a close
// frame, else why the reading stopped).
type event struct {
	msg  message
	at   time.Time
	ping bool
	data []byte
	err  error
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
}

func newSocket() *socket {
	return &socket{notify: make(chan struct{}, 1)}
}

// dialSocket dials u (ws or wss) with dial, runs the opening handshake and hands the socket to rx for
// reading, or to a goroutine of its own when rx is nil or the connection is TLS.
func dialSocket(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), rx *reactor, u string) (*socket, error) {
	target, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	secure := target.Scheme == "wss"
	if !secure && target.Scheme != "ws" {
		return nil, fmt.Errorf("socket URL %q: want ws or wss", u)
	}
	host := target.Host
	if target.Port() == "" {
		if secure {
			host = net.JoinHostPort(target.Hostname(), "443")
		} else {
			host = net.JoinHostPort(target.Hostname(), "80")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	conn, err := dial(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if secure {
		tc := tls.Client(conn, &tls.Config{ServerName: target.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	rest, err := handshake(ctx, conn, target)
	if err != nil {
		conn.Close()
		return nil, err
	}
	sock := newSocket()
	if rx != nil { // a TLS connection is no *net.TCPConn: add gives it a reading goroutine
		if err := rx.add(sock, conn, rest); err != nil {
			conn.Close()
			return nil, err
		}
		return sock, nil
	}
	startConnReader(sock, conn, rest)
	return sock, nil
}

// handshake sends the opening request on conn and reads the answer. It returns the bytes read past the
// answer (the server's first frames may come with it), or a *handshakeError for any status but 101.
func handshake(ctx context.Context, conn net.Conn, target *url.URL) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var k [16]byte
	for i := range k {
		k[i] = byte(rand.Uint32())
	}
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET " + target.RequestURI() + " HTTP/1.1\r\nHost: " + target.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		return nil, ctxErr(ctx, err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet, URL: target})
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return nil, &handshakeError{status: resp.StatusCode}
	}
	sum := sha1.Sum([]byte(key + websocketGUID))
	switch {
	case !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
		return nil, fmt.Errorf("%w: handshake answer without Upgrade: websocket", errProtocol)
	case resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]):
		return nil, fmt.Errorf("%w: handshake answer with a wrong Sec-WebSocket-Accept", errProtocol)
	}
	rest, _ := br.Peek(br.Buffered())
	_ = conn.SetDeadline(time.Time{})
	return append([]byte(nil), rest...), nil
}

// ctxErr prefers the context's end to the error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// consume reads the frames in data, which arrived at at, and keeps an unfinished one for the next call. It
// reports false once the reader must stop (a close frame or a protocol error, handed to the user).
func (k *socket) consume(data []byte, at time.Time) bool {
	if k.done {
		return false
	}
	if len(k.partial) > 0 {
		k.partial = append(k.partial, data...)
		data = k.partial
	}
	for {
		n, err := k.frame(data, at)
		if err != nil {
			k.stop(err)
			return false
		}
		if n == 0 || k.done {
			break
		}
		data = data[n:]
	}
	if k.done {
		k.partial = nil
		return false
	}
	// Keep the unfinished frame; data may be k.partial itself, so move it to the front.
	k.partial = append(k.partial[:0], data...)
	if len(k.partial) == 0 && cap(k.partial) > 1024 {
		k.partial = nil // a large frame passed: do not hold its buffer for the rest of the hold
	}
	return true
}

// frame takes one whole frame from the front of data and returns its length, or 0 if it has not all
// arrived.
func (k *socket) frame(data []byte, at time.Time) (int, error) {
	if len(data) < 2 {
		return 0, nil
	}
	fin, op := data[0]&0x80 != 0, data[0]&0x0f
	if data[0]&0x70 != 0 {
		return 0, fmt.Errorf("%w: a frame with reserved bits set", errProtocol)
	}
	if data[1]&0x80 != 0 {
		return 0, fmt.Errorf("%w: a masked frame from the server", errProtocol)
	}
	size, head := uint64(data[1]&0x7f), 2
	switch size {
	case 126:
		if len(data) < 4 {
			return 0, nil
		}
		size, head = uint64(binary.BigEndian.Uint16(data[2:])), 4
	case 127:
		if len(data) < 10 {
			return 0, nil
		}
		size, head = binary.BigEndian.Uint64(data[2:]), 10
	}
	if op >= opClose && (size > maxControlPayload || !fin) {
		return 0, fmt.Errorf("%w: a control frame of %d bytes, fin %t", errProtocol, size, fin)
	}
	if size > maxMessageSize {
		return 0, fmt.Errorf("%w: a frame of %d bytes, over the %d of a message", errProtocol, size, maxMessageSize)
	}
	if uint64(len(data)-head) < size {
		return 0, nil
	}
	payload := data[head : head+int(size)]
	switch op {
	case opText, opBinary:
		if k.inMsg {
			return 0, fmt.Errorf("%w: a new message inside a fragmented one", errProtocol)
		}
		if fin {
			k.message(payload, at)
		} else {
			k.msg, k.inMsg = append(k.msg[:0], payload...), true
		}
	case opContinuation:
		if !k.inMsg {
			return 0, fmt.Errorf("%w: a continuation frame outside a message", errProtocol)
		}
		if len(k.msg)+len(payload) > maxMessageSize {
			return 0, fmt.Errorf("%w: a message over %d bytes", errProtocol, maxMessageSize)
		}
		k.msg = append(k.msg, payload...)
		if fin {
			k.message(k.msg, at)
			k.msg, k.inMsg = nil, false
		}
	case opPing:
		k.push(event{ping: true, data: append([]byte(nil), payload...), at: at})
	case opPong:
	case opClose:
		k.stop(closeError(payload))
	default:
		return 0, fmt.Errorf("%w: a frame of opcode %d", errProtocol, op)
	}
	return head + int(size), nil
}

// closeError is the error a close frame's payload says (RFC 6455 §5.5.1), as gorilla would return it.
func closeError(payload []byte) error {
	switch {
	case len(payload) == 0:
		return &websocket.CloseError{Code: websocket.CloseNoStatusReceived}
	case len(payload) == 1:
		return fmt.Errorf("%w: a close frame of 1 byte", errProtocol)
	case !utf8.Valid(payload[2:]):
		return fmt.Errorf("%w: a close reason that is not UTF-8", errProtocol)
	}
	return &websocket.CloseError{Code: int(binary.BigEndian.Uint16(payload)), Text: string(payload[2:])}
}

// message records a position where it is read, and hands anything else to the user.
func (k *socket) message(data []byte, at time.Time) {
	m, ok := decodePosition(data)
	if !ok {
		if err := json.Unmarshal(data, &m); err != nil {
			k.stop(fmt.Errorf("%w: decode %q: %v", errProtocol, truncate(data, 80), err))
			return
		}
	}
	afterQueued := k.prev == "queued"
	k.prev = m.Type
	if m.Type != "position" {
		k.push(event{msg: m, at: at})
		return
	}
	p := position{TickAtMs: m.TickAtMs, Latency: at.Sub(time.UnixMilli(m.TickAtMs)), AfterQueued: afterQueued, CatchUp: m.CatchUp}
	k.mu.Lock()
	k.positions = append(k.positions, p)
	k.mu.Unlock()
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
				// The server is there: extend the wait, and answer as RFC 6455 §5.5.2 asks.
				_ = k.writeFrame(opPong, e.data)
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

// writeFrame sends one masked frame (RFC 6455 §5.3) of a short payload.
func (k *socket) writeFrame(op byte, payload []byte) error {
	if len(payload) > maxControlPayload {
		return fmt.Errorf("a frame of %d bytes; the swarm sends at most %d", len(payload), maxControlPayload)
	}
	b := make([]byte, 0, 6+len(payload))
	b = append(b, 0x80|op, 0x80|byte(len(payload)))
	mask := rand.Uint32()
	b = binary.BigEndian.AppendUint32(b, mask)
	for i, c := range payload {
		b = append(b, c^byte(mask>>(8*(3-i%4))))
	}
	return k.t.write(b, time.Now().Add(writeWait))
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

// connTransport reads a net.Conn with a goroutine of its own: for a TLS connection, and where there is no
// reactor.
type connTransport struct {
	conn    net.Conn
	stopped chan struct{} // closed when the reading goroutine has returned
}

func startConnReader(k *socket, conn net.Conn, rest []byte) {
	t := &connTransport{conn: conn, stopped: make(chan struct{})}
	k.t = t
	go func() {
		defer close(t.stopped)
		if len(rest) > 0 && !k.consume(rest, time.Now()) {
			return
		}
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if n > 0 && !k.consume(buf[:n], time.Now()) {
				return
			}
			if err != nil {
				k.stop(err)
				return
			}
		}
	}()
}

func (t *connTransport) write(b []byte, deadline time.Time) error {
	_ = t.conn.SetWriteDeadline(deadline)
	_, err := t.conn.Write(b)
	return err
}

func (t *connTransport) close() {
	_ = t.conn.Close()
	<-t.stopped
}

// errHoldEnded is a read cut short because the hold ended.
var errHoldEnded = errors.New("the hold ended")

// handshakeError is a socket the server refused with an HTTP status: not worth dialing again.
type handshakeError struct{ status int }

func (e *handshakeError) Error() string {
	return fmt.Sprintf("websocket handshake refused: HTTP %d", e.status)
}
