// Reading the server's frames (RFC 6455 §5): whole frames out of whatever the connection delivered, fragments
// joined into messages, pings and the close frame turned into events, positions recorded where they are read.

package swarm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
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
	if err := k.payload(op, fin, data[head:head+int(size)], at); err != nil {
		return 0, err
	}
	return head + int(size), nil
}

// payload acts on a whole frame's payload by its opcode: a message or a fragment of one, a ping, a close.
func (k *socket) payload(op byte, fin bool, payload []byte, at time.Time) error {
	switch op {
	case opText, opBinary:
		if k.inMsg {
			return fmt.Errorf("%w: a new message inside a fragmented one", errProtocol)
		}
		if fin {
			k.message(payload, at)
		} else {
			k.msg, k.inMsg = append(k.msg[:0], payload...), true
		}
	case opContinuation:
		if !k.inMsg {
			return fmt.Errorf("%w: a continuation frame outside a message", errProtocol)
		}
		if len(k.msg)+len(payload) > maxMessageSize {
			return fmt.Errorf("%w: a message over %d bytes", errProtocol, maxMessageSize)
		}
		k.msg = append(k.msg, payload...)
		if fin {
			k.message(k.msg, at)
			k.msg, k.inMsg = nil, false
		}
	case opPing:
		answered := k.pong(payload)
		k.push(event{ping: true, answered: answered, data: append([]byte(nil), payload...), at: at})
	case opPong:
	case opClose:
		k.stop(closeError(payload))
	default:
		return fmt.Errorf("%w: a frame of opcode %d", errProtocol, op)
	}
	return nil
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
