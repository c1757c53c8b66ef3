// The server's socket messages (docs/protocol.md), and a fast decoder for the commonest of them, the position
// message, that skips encoding/json.

package swarm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// message is any server message of docs/protocol.md.
type message struct {
	Type    string `json:"type"`
	Token   string `json:"token"`
	Pass    string `json:"pass"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterMs is a BUSY refusal's wait before connecting again.
	RetryAfterMs int64 `json:"retry_after_ms"`
	TickAtMs     int64 `json:"tick_at"`
	CatchUp      bool  `json:"catch_up"`
	// Seats are a seats message's changes (to admitted sockets: held, sold, back on sale); an offered
	// message's count of seats is not read (a user asks for one seat).
	Seats seatsField `json:"seats"`
	// Waitlist is set on a sold_out that keeps the socket on the screening's waitlist.
	Waitlist bool `json:"waitlist"`
}

// seatsField is a seats message's changes; an offered message's seats (a number) decode to none.
type seatsField []seat

func (s *seatsField) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '[' {
		*s = nil
		return nil
	}
	return json.Unmarshal(b, (*[]seat)(s))
}

// errProtocol marks a server message that is not the JSON of docs/protocol.md.
var errProtocol = errors.New("not a protocol message")

var positionPrefix = []byte(`{"type":"position",`)

// decodePosition reads a position message without encoding/json, the swarm's commonest message by far
// (one per waiting user per tick): tick_at last, or followed only by eta_seconds, as the server writes it.
// Anything else, or anything unexpected, is left to encoding/json.
func decodePosition(data []byte) (message, bool) {
	if !bytes.HasPrefix(data, positionPrefix) || !bytes.HasSuffix(data, []byte("}")) {
		return message{}, false
	}
	body := data[:len(data)-1]
	if i := bytes.LastIndex(body, []byte(`,"eta_seconds":`)); i >= 0 {
		if !digits(body[i+len(`,"eta_seconds":`):]) {
			return message{}, false
		}
		body = body[:i]
	}
	i := bytes.LastIndex(body, []byte(`,"tick_at":`))
	if i < 0 {
		return message{}, false
	}
	tick := body[i+len(`,"tick_at":`):]
	if !digits(tick) {
		return message{}, false
	}
	ms, err := strconv.ParseInt(string(tick), 10, 64)
	if err != nil {
		return message{}, false
	}
	return message{Type: "position", TickAtMs: ms}, true
}

// digits reports whether b is a non-empty run of ASCII digits.
func digits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
