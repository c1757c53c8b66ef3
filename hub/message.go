// The protocol's messages (docs/protocol.md): what the server sends a socket, built once or rendered by
// hand for the per-tick position, and what a client may send: the hello that opens a socket connected with
// auth=message, then a leave.

package hub

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// The messages of docs/protocol.md, server to client. Ranks on the wire are 1-based.

// Queued is the first message after registering.
type Queued struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	Rank     int64  `json:"rank"`
	Total    int64  `json:"total"`
	Inserted bool   `json:"inserted"`
	Paused   bool   `json:"paused,omitempty"`
	// Receipt is the place's signed receipt (docs/admission-log.md), when the admission log is kept.
	Receipt string `json:"receipt,omitempty"`
}

// Position follows every admission tick that moved the line.
type Position struct {
	Type   string `json:"type"`
	Rank   int64  `json:"rank"`
	Total  int64  `json:"total"`
	TickAt int64  `json:"tick_at"`
	// ETASeconds estimates the wait from the measured admission rate; absent while unknown or paused.
	ETASeconds *int64 `json:"eta_seconds,omitempty"`
	// CatchUp marks a connect's catch-up (docs/protocol.md 4.2): TickAt is when the rank was read, not a
	// tick's time.
	CatchUp bool `json:"catch_up,omitempty"`
}

// PreQueue is the first message for a token that arrived before the line opened.
type PreQueue struct {
	Type  string `json:"type"`
	Token string `json:"token"`
	// OpensAt is the sale time, when the pre-queue is shuffled into the line.
	OpensAt string `json:"opens_at"`
	// Total is how many are in the pre-queue.
	Total    int64 `json:"total"`
	Inserted bool  `json:"inserted"`
	Paused   bool  `json:"paused,omitempty"`
	// Receipt is the pre-queue entry's signed receipt (docs/admission-log.md), when the log is kept.
	Receipt string `json:"receipt,omitempty"`
}

// Pause tells the line that the operator paused (type "paused") or resumed ("resumed") admission.
type Pause struct {
	Type string `json:"type"`
}

// Admitted carries the pass.
type Admitted struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Pass      string `json:"pass"`
	ExpiresAt string `json:"expires_at"`
}

// SoldOut ends the wait: Reason is queue.ReasonSoldOut or queue.ReasonClosed (absent on a connect refused
// because the line is closed).
type SoldOut struct {
	Type   string `json:"type"`
	Reason string `json:"reason,omitempty"`
	// Waitlist: the socket stays, waiting on the screening's waitlist for seats that come back.
	Waitlist bool `json:"waitlist,omitempty"`
}

// Offered carries the pass of a waitlist's offer: seats came back, and the holder may reserve up to Seats
// of them until ExpiresAt.
type Offered struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Pass      string `json:"pass"`
	Seats     int    `json:"seats"`
	ExpiresAt string `json:"expires_at"`
}

// Seats tells an admitted socket that seats changed state, so its seat map follows.
type Seats struct {
	Type  string             `json:"type"`
	Seats []queue.SeatChange `json:"seats"`
}

// Error explains a refusal.
type Error struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterMs (BUSY) is how long the client waits before it connects again.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
}

// Inbound is a client message ({"type":"leave"}).
type Inbound struct {
	Type string `json:"type"`
}

// errBadInbound explains every refused client message: the protocol has one.
var errBadInbound = errors.New(`the only client message is {"type":"leave"}`)

// DecodeInbound reads a client message: exactly {"type":"leave"} (unknown fields are ignored, so a newer
// client's extras do no harm); anything else is refused with an error to send back.
func DecodeInbound(data []byte) (Inbound, error) {
	var in Inbound
	if err := json.Unmarshal(data, &in); err != nil || in.Type != "leave" {
		return Inbound{}, errBadInbound
	}
	return in, nil
}

// Hello is the first client message of a socket connected with auth=message: the token travels here, not
// in the URL, where proxies log it. An empty Token asks for a new place. Code and Altcha are what a new
// place may need (an access code, a proof of work's payload: docs/protocol.md 12), here for the same
// reason; the hub does not read them, the server's entry check does.
type Hello struct {
	Type   string `json:"type"`
	Token  string `json:"token"`
	Code   string `json:"code,omitempty"`
	Altcha string `json:"altcha,omitempty"`
}

// errBadHello explains a first message that is not a hello.
var errBadHello = errors.New(`with auth=message the first message is {"type":"hello","token":"<your token>"}, or {"type":"hello"} for a new place`)

// DecodeHello reads the first client message of an auth=message socket: a JSON object whose type is
// "hello", with a string token or none, and a string code and altcha or none (unknown fields are ignored). Anything else is refused with an error
// to send back. Whether the token is well formed is the registration's check (BAD_TOKEN), as for a token
// in the URL.
//
// The hello every client sends, a flat object of plain strings, is read by decodeFlatHello; anything else
// by encoding/json, which is deep enough to grow the handshake goroutine's stack: in the profile of 5,000
// arrivals a second, json.Unmarshal of the hello was 7% of the server's CPU, most of it copying that stack.
func DecodeHello(data []byte) (Hello, error) {
	h, ok := decodeFlatHello(data)
	if !ok && json.Unmarshal(data, &h) != nil {
		return Hello{}, errBadHello
	}
	if h.Type != "hello" {
		return Hello{}, errBadHello
	}
	return h, nil
}

// decodeFlatHello reads a hello of the one shape clients send: a JSON object whose members are all
// strings of printable ASCII without escapes, named exactly type, token, code or altcha (a name twice: the
// last, as encoding/json does), with JSON's whitespace between tokens and nothing after the object. ok is
// false for anything else, which the caller leaves to encoding/json: whenever ok is true, json.Unmarshal
// reads the same Hello (FuzzFlatHelloAgreesWithEncodingJSON).
func decodeFlatHello(data []byte) (h Hello, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return Hello{}, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return h, skipSpace(data, i+1) == len(data)
	}
	for {
		key, next, ok := flatString(data, i)
		if !ok {
			return Hello{}, false
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return Hello{}, false
		}
		val, next, ok := flatString(data, skipSpace(data, i+1))
		if !ok {
			return Hello{}, false
		}
		switch string(key) {
		case "type":
			h.Type = string(val)
		case "token":
			h.Token = string(val)
		case "code":
			h.Code = string(val)
		case "altcha":
			h.Altcha = string(val)
		default:
			return Hello{}, false
		}
		i = skipSpace(data, next)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == '}':
			return h, skipSpace(data, i+1) == len(data)
		default:
			return Hello{}, false
		}
	}
}

// flatString reads the JSON string at data[i]: its bytes, and the index after its closing quote; ok false
// unless it is one of printable ASCII without escapes.
func flatString(data []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipSpace is the index of the first byte at or after i that is not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// queuedMessage is the first message for a waiting entry, and for a socket held as a bot (botHold).
func queuedMessage(e queue.Entry, receipt string) []byte {
	return mustJSON(Queued{Type: "queued", Token: e.Token, Rank: e.ZeroBasedRank + 1, Total: e.Total, Inserted: e.Inserted, Paused: e.Paused,
		Receipt: receipt})
}

// preQueueMessage is the first message for a token in the pre-queue of a line that opens at opensAt.
func preQueueMessage(e queue.Entry, opensAt time.Time, receipt string) []byte {
	return mustJSON(PreQueue{Type: "prequeue", Token: e.Token, OpensAt: opensAt.UTC().Format(TimeFormat), Total: e.Total, Inserted: e.Inserted, Paused: e.Paused,
		Receipt: receipt})
}

// Service tells a socket the server lost (type "unavailable") or got back ("available") its Redis: while
// it is away nobody is admitted and nothing moves, and the place is kept.
type Service struct {
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
}

// UnavailableMessage says the line is stopped by a fault; AvailableMessage that it runs again.
func UnavailableMessage() []byte {
	return mustJSON(Service{Type: "unavailable", Message: "the waiting room lost its line store for a moment; your place is kept, stay on this page"})
}

// AvailableMessage says the line runs again after UnavailableMessage.
func AvailableMessage() []byte { return mustJSON(Service{Type: "available"}) }

// PausedMessage tells the line admission was paused (true) or resumed (false).
func PausedMessage(paused bool) []byte {
	if paused {
		return mustJSON(Pause{Type: "paused"})
	}
	return mustJSON(Pause{Type: "resumed"})
}

// PositionMessage tells a waiting socket where it stands after the tick at tickAtMs, with the estimated
// wait (etaSeconds < 0: unknown, left out). It is built by hand, not by encoding/json: a tick writes one
// per waiting socket, and this is the same bytes (TestPositionMessageIsTheJSONOfPosition) for a fraction
// of the cost.
func PositionMessage(zeroBasedRank, total, tickAtMs, etaSeconds int64) []byte {
	return appendPosition(make([]byte, 0, 100), zeroBasedRank, total, tickAtMs, etaSeconds)
}

// catchUpMessage is the position a connect's catch-up sends: the rank read at atMs, marked, so that a client
// counting ticks (the swarm) does not take it for one. It carries no estimate.
func catchUpMessage(zeroBasedRank, total, atMs int64) []byte {
	b := appendPosition(make([]byte, 0, 100), zeroBasedRank, total, atMs, -1)
	return append(b[:len(b)-1], `,"catch_up":true}`...)
}

// appendPosition appends PositionMessage's bytes to b.
func appendPosition(b []byte, zeroBasedRank, total, tickAtMs, etaSeconds int64) []byte {
	b = append(b, `{"type":"position","rank":`...)
	b = strconv.AppendInt(b, zeroBasedRank+1, 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, total, 10)
	b = append(b, `,"tick_at":`...)
	b = strconv.AppendInt(b, tickAtMs, 10)
	if etaSeconds >= 0 {
		b = append(b, `,"eta_seconds":`...)
		b = strconv.AppendInt(b, etaSeconds, 10)
	}
	return append(b, '}')
}

// TimeFormat is how times travel on the wire: RFC 3339 in UTC with milliseconds, the precision of an
// admission's expiry, so a client's countdown ends when the server's does.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// AdmittedMessage hands over a pass.
func AdmittedMessage(token, pass string, expiresAt time.Time) []byte {
	return mustJSON(Admitted{Type: "admitted", Token: token, Pass: pass, ExpiresAt: expiresAt.UTC().Format(TimeFormat)})
}

// OfferedMessage hands over the pass of a waitlist's offer of seats.
func OfferedMessage(token, pass string, expiresAt time.Time, seats int) []byte {
	return mustJSON(Offered{Type: "offered", Token: token, Pass: pass, Seats: seats, ExpiresAt: expiresAt.UTC().Format(TimeFormat)})
}

// SoldOutWaitlistMessage tells a socket the screening sold out and it waits on the waitlist.
func SoldOutWaitlistMessage() []byte {
	return mustJSON(SoldOut{Type: "sold_out", Reason: queue.ReasonSoldOut, Waitlist: true})
}

// SoldOutMessage ends the wait, for reason (empty: not known).
func SoldOutMessage(reason string) []byte { return mustJSON(SoldOut{Type: "sold_out", Reason: reason}) }

// AllHeldMessage tells the waiting that every seat is held or sold, some only held: the wait goes on.
func AllHeldMessage() []byte { return []byte(`{"type":"all_held"}`) }

// ReopenedMessage tells the waiting that seats came back.
func ReopenedMessage() []byte { return []byte(`{"type":"reopened"}`) }

// SeatsMessage tells the admitted that seats changed state.
func SeatsMessage(seats []queue.SeatChange) []byte {
	return mustJSON(Seats{Type: "seats", Seats: seats})
}

// ErrorMessage explains a refusal with a stable code.
func ErrorMessage(code, message string) []byte {
	return mustJSON(Error{Type: "error", Code: code, Message: message})
}

// CodeBusy is the refusal of a socket the instance could not register within its handshake wait
// (overload.handshakes): nothing was registered, a token keeps its place, and the close 1013 that follows is
// to be answered by connecting again after RetryAfterMs.
const CodeBusy = "BUSY"

// BusyMessage is the refusal CodeBusy, telling the client to wait retryAfter.
func BusyMessage(retryAfter time.Duration) []byte {
	return mustJSON(Error{Type: "error", Code: CodeBusy, Message: "the waiting room is busy; connect again after retry_after_ms, your place is kept",
		RetryAfterMs: retryAfter.Milliseconds()})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed structs of strings and numbers are marshalled here
	}
	return b
}
