// Message: the server's WebSocket messages as the tests read them, one type for every kind.

package testenv

import "encoding/json"

// Message is any server-to-client message of docs/protocol.md: the union of the fields the tests read. A
// field a kind does not carry stays at its zero value.
type Message struct {
	Type  string `json:"type"`
	Token string `json:"token"`
	// Rank and Total are a place in the line (queued, position); a prequeue message has only Total.
	Rank     int64 `json:"rank"`
	Total    int64 `json:"total"`
	Inserted bool  `json:"inserted"`
	// TickAt is a position's tick time in Unix milliseconds (a catch-up's is when it was sent).
	TickAt  int64 `json:"tick_at"`
	CatchUp bool  `json:"catch_up"`
	// ETASeconds is absent (nil) while the server does not know the admission rate.
	ETASeconds *int64 `json:"eta_seconds"`
	// Pass and ExpiresAt (RFC 3339) are an admission's.
	Pass      string `json:"pass"`
	ExpiresAt string `json:"expires_at"`
	// OpensAt (RFC 3339) is a prequeue message's opening time; Paused says admission is paused.
	OpensAt string `json:"opens_at"`
	Paused  bool   `json:"paused"`
	// Reason is a sold_out's: sold_out or closed; Waitlist says the socket stays on the waitlist.
	Reason   string `json:"reason"`
	Waitlist bool   `json:"waitlist"`
	// Seats is an offered message's count of seats (SeatCount), or a seats message's changes.
	Seats json.RawMessage `json:"seats"`
	// Code and Message are an error's (Message also an unavailable's).
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterMs is a BUSY error's wait before connecting again.
	RetryAfterMs int64 `json:"retry_after_ms"`
	// Receipt is a place's signed receipt (queued, prequeue) when the server keeps the admission log.
	Receipt string `json:"receipt"`
}

// SeatCount is an offered message's seats: how many its pass may reserve (0 for any other message).
func (m Message) SeatCount() int {
	var n int
	if json.Unmarshal(m.Seats, &n) != nil {
		return 0
	}
	return n
}
