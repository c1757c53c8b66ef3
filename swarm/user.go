package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
	// maxReconnects bounds how often one user dials again, after a close 1012/1013 or a failed dial.
	maxReconnects = 5
	// reconnectBase and reconnectMax shape the backoff between reconnects: base·2ⁿ, capped, with jitter.
	reconnectBase = 250 * time.Millisecond
	reconnectMax  = 5 * time.Second
	// maxErrorBody bounds how much of an error response is read.
	maxErrorBody = 64 << 10
)

// Outcome is how a virtual user's visit ended.
type Outcome string

// The outcomes.
const (
	// Ticket: a reservation was created (201).
	Ticket Outcome = "ticket"
	// SoldOut: the server said sold_out, on the socket or as 409 SOLD_OUT, or no seat was left to pick.
	SoldOut Outcome = "sold_out"
	// GaveUp: every try met 409 SEAT_TAKEN or SEAT_LOCKED.
	GaveUp Outcome = "gave_up"
	// Held (hold mode): still connected and waiting in line when the hold ended.
	Held Outcome = "held"
	// Admitted (hold mode): admitted, and still connected when the hold ended (it does not reserve).
	Admitted Outcome = "admitted"
	// Error: anything else; result.ErrKind says what.
	Error Outcome = "error"
)

// kindHoldConnecting is the error kind of a user in hold mode that was dialing, or waiting to dial again,
// without a place on an open socket when the hold ended.
const kindHoldConnecting = "hold ended while connecting"

// result is one user's visit. Its fields are exported for gob: a child process sends the results of its
// users to the parent, which summarizes them as its own.
type result struct {
	Outcome Outcome
	// ErrKind groups errors for counting ("read", "closed 1011", "server UNAVAILABLE", "reserve 401
	// INVALID_PASS", "timeout", ...); ErrText is the full error of this user.
	ErrKind, ErrText string
	// Connect is from the first dial to the first message; Connected says it was measured.
	Connect   time.Duration
	Connected bool
	// InQueue is from the first message to admitted; WasAdmitted says it was measured.
	InQueue     time.Duration
	WasAdmitted bool
	// Reservations holds the round trip of each POST.
	Reservations []time.Duration
	// Seats are the seats of the ticket.
	Seats      []string
	Reconnects int
	// FirstDialAt is when the user first dialed; RegisteredAt when it got its first queued (or prequeue)
	// message (zero if it never did). Wall-clock times: the processes of a run share the machine's clock.
	FirstDialAt, RegisteredAt time.Time
	// Positions are the position messages the user received, in order.
	Positions []position
	// Windows are the stretches in which the user was connected and waiting: one per connection that got
	// queued, from that message to admitted or the connection's end.
	Windows []window
}

func (r *result) fail(kind string, err error) {
	r.Outcome, r.ErrKind, r.ErrText = Error, kind, err.Error()
}

// position is one position message as received.
type position struct {
	// TickAtMs is the message's tick_at (Unix ms); Latency is from then to the message's receipt.
	TickAtMs int64
	Latency  time.Duration
	// AfterQueued says the message came right after queued on its connection: it may be the catch-up of
	// the connect (docs/protocol.md 4.2), not a tick's push.
	AfterQueued bool
	// CatchUp: the server marked it as a connect's catch-up (catch_up): it is not a tick's, wherever it
	// came. A server that does not mark them leaves the swarm to tell them by AfterQueued.
	CatchUp bool
}

// window is a stretch in which a user was connected and waiting in line.
type window struct {
	// From is when queued arrived; To when admitted arrived (Admitted true) or the connection ended.
	From, To time.Time
	Admitted bool
}

// message is any server message of docs/protocol.md.
type message struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	Pass     string `json:"pass"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	TickAtMs int64  `json:"tick_at"`
	CatchUp  bool   `json:"catch_up"`
}

// visit is what one virtual user works with: the run's shared swarm, the source address it dials from,
// the hold's end (closed when the hold ends; nil in flow mode), and the run's tally.
type visit struct {
	*swarm
	src   *source
	hold  <-chan struct{}
	count *tally
}

// run is the user's whole visit. Flow: wait in line for the pushes, reserve once admitted, and close.
// Hold: wait in line, admitted or not, until the hold ends, then close (wait does it all).
func (v *visit) run(ctx context.Context) result {
	var r result
	sock, pass := v.wait(ctx, &r)
	if sock == nil {
		return r
	}
	if v.reserve(ctx, pass, &r) {
		// Free the admission slot at once rather than when it lapses, so the next in line moves up.
		sock.leave()
	}
	sock.close()
	return r
}

// wait opens the socket and reads pushes until admitted in flow mode (it returns the open socket and the
// pass) or the visit ends otherwise (it returns nil, with r's outcome set). A close 1012 or 1013, or a
// failed dial, is answered by dialing again with the token, keeping the place, at most maxReconnects times.
func (v *visit) wait(ctx context.Context, r *result) (*socket, string) {
	var place place
	for attempt := 0; ; attempt++ {
		sock, pass, retry, kind, err := v.connection(ctx, &place, r)
		switch {
		case sock != nil:
			return sock, pass
		case err == nil:
			return nil, "" // the outcome is set: sold out, or the hold is over
		case ctx.Err() != nil:
			r.fail(stopKind(ctx), err)
			return nil, ""
		case retry && attempt < maxReconnects:
			if v.pause(ctx, backoff(attempt)) {
				r.Reconnects++
				continue
			}
			kind = kindHoldConnecting
			if ctx.Err() != nil {
				kind = stopKind(ctx)
			}
			r.fail(kind, err)
			return nil, ""
		case retry:
			kind += fmt.Sprintf(" (after %d reconnects)", attempt)
		}
		r.fail(kind, err)
		return nil, ""
	}
}

// place is what a user keeps across its connections.
type place struct {
	token          string
	firstMessageAt time.Time
	// admitted (hold mode): some connection got admitted; the user ends as Admitted.
	admitted bool
}

// connection is one socket of a user's wait. It returns the open socket and the pass on admission in flow
// mode; nil and no error when the visit ended (r's outcome set: sold out, or the hold is over); else the
// error, its kind, and whether dialing again with the token is the answer (a failed dial, a close 1012 or
// 1013, an INTERNAL error message).
func (v *visit) connection(ctx context.Context, p *place, r *result) (sock *socket, pass string, retry bool, kind string, err error) {
	dialAt := time.Now()
	if r.FirstDialAt.IsZero() {
		r.FirstDialAt = dialAt
	}
	sock, err = v.open(ctx, p.token)
	if err != nil {
		var hs *handshakeError
		if errors.As(err, &hs) {
			return nil, "", false, fmt.Sprintf("handshake %d", hs.status), err
		}
		return nil, "", true, "dial", err
	}
	// When the connection ends while it waits in line, its window ends too.
	var w waiting
	defer func() { w.end(r, time.Now(), false) }()
	var refused *message // an error message; its close frame follows and says whether to try again
	// Positions are recorded where they are read; they join the result when the connection ends.
	// (conn, not sock: a return sets the result sock to nil before this runs.)
	conn := sock
	defer func() { r.Positions = append(r.Positions, conn.takePositions()...) }()
	for first := true; ; first = false {
		wait := readWait
		if refused != nil {
			wait = writeWait
		}
		m, at, err := sock.read(ctx, v.hold, wait)
		if errors.Is(err, errHoldEnded) && ctx.Err() == nil {
			// The user stops waiting at the hold's end, not when its socket is closed after it: a tick
			// still being pushed then is not one this user missed (positions read until the close are kept,
			// after the window).
			w.end(r, at, false)
			v.endHold(sock, p, r, w.placed)
			return nil, "", false, "", nil
		}
		if err != nil {
			sock.drop()
			var ce *websocket.CloseError
			closed := errors.As(err, &ce)
			switch {
			case closed && (ce.Code == websocket.CloseServiceRestart || ce.Code == websocket.CloseTryAgainLater):
				return nil, "", true, fmt.Sprintf("closed %d", ce.Code), err
			case refused != nil:
				return nil, "", false, "server " + refused.Code, fmt.Errorf("server error %s: %s; then %w", refused.Code, refused.Message, err)
			case closed:
				return nil, "", false, fmt.Sprintf("closed %d", ce.Code), err
			case errors.Is(err, errProtocol):
				return nil, "", false, "protocol", err
			case isTimeout(err):
				return nil, "", false, "read timeout", err
			}
			return nil, "", false, "read", err
		}
		if first && p.firstMessageAt.IsZero() {
			p.firstMessageAt = at
			r.Connect, r.Connected = p.firstMessageAt.Sub(dialAt), true
		}
		switch m.Type {
		case "queued", "prequeue":
			// prequeue: the sale has not opened; the place is in the pre-queue, and position messages follow
			// the opening. Either way the token keeps the place across reconnects.
			p.token = m.Token
			if r.RegisteredAt.IsZero() {
				r.RegisteredAt = at
				v.count.registered.Add(1)
			}
			w.start(at)
		case "admitted":
			if m.Pass == "" {
				sock.close()
				return nil, "", false, "protocol", fmt.Errorf("%w: admitted without a pass", errProtocol)
			}
			p.token = m.Token
			w.end(r, at, true)
			w.placed = true
			if !r.WasAdmitted {
				r.InQueue, r.WasAdmitted = at.Sub(p.firstMessageAt), true
			}
			if v.hold == nil {
				return sock, m.Pass, false, "", nil
			}
			p.admitted = true // hold mode: stay connected until the hold ends
		case "sold_out":
			sock.close()
			r.Outcome = SoldOut
			return nil, "", false, "", nil
		case "error":
			if m.Code == "INTERNAL" {
				// The pass could not be signed; the socket stays open. Reconnecting hands the pass out again.
				sock.close()
				return nil, "", true, "server INTERNAL", fmt.Errorf("server error %s: %s", m.Code, m.Message)
			}
			refused = &m
		}
		// "paused", "resumed", "unavailable", "available", and any type a newer server adds: keep waiting.
	}
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

// endHold ends a hold-mode visit on its still open socket: leave if asked, close, and set the outcome.
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

// reserve picks random available seats and posts them, trying other seats after a 409 SEAT_TAKEN or
// SEAT_LOCKED up to Retries times. It sets r's outcome, and reports whether the user gave up holding its
// admission (so the caller can hand the slot back).
func (v *visit) reserve(ctx context.Context, pass string, r *result) (gaveUp bool) {
	locked := map[string]bool{} // seats another request held; a hint only, the map says what is sold
	for try := 0; try <= v.cfg.Retries; try++ {
		seats, err := v.seatMap(ctx, v.src.client)
		if err != nil {
			r.fail(requestKind(ctx, "seat map"), err)
			return false
		}
		pick := pickSeats(seats, locked, v.cfg.Seats)
		if len(pick) == 0 {
			r.Outcome = SoldOut // the map shows no seat left
			return false
		}
		sentAt := time.Now()
		status, body, err := v.post(ctx, pass, pick)
		r.Reservations = append(r.Reservations, time.Since(sentAt))
		if err != nil {
			r.fail(requestKind(ctx, "reserve"), err)
			return false
		}
		switch {
		case status == http.StatusCreated:
			r.Outcome, r.Seats = Ticket, body.Seats
			if len(r.Seats) == 0 {
				r.Seats = pick
			}
			return false
		case status == http.StatusConflict && body.Error.Code == "SOLD_OUT":
			r.Outcome = SoldOut
			return false
		case status == http.StatusConflict && (body.Error.Code == "SEAT_TAKEN" || body.Error.Code == "SEAT_LOCKED"):
			for _, seat := range body.Error.Seats {
				locked[seat] = true
			}
		default:
			r.fail(fmt.Sprintf("reserve %d %s", status, body.Error.Code),
				fmt.Errorf("POST %s: %d %s: %s", v.bookURL, status, body.Error.Code, body.Error.Message))
			return false
		}
	}
	r.Outcome = GaveUp
	return true
}

// requestKind names a failed REST call: the run's stop, or what was being called.
func requestKind(ctx context.Context, what string) string {
	if ctx.Err() != nil {
		return stopKind(ctx)
	}
	return what
}

// pickSeats returns up to n random available seats, avoiding those in avoid while others are left.
func pickSeats(seats []seat, avoid map[string]bool, n int) []string {
	var free, avoided []string
	for _, s := range seats {
		switch {
		case s.Status != "available":
		case avoid[s.ID]:
			avoided = append(avoided, s.ID)
		default:
			free = append(free, s.ID)
		}
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	rand.Shuffle(len(avoided), func(i, j int) { avoided[i], avoided[j] = avoided[j], avoided[i] })
	free = append(free, avoided...)
	return free[:min(n, len(free))]
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

// seat is one seat of GET /api/screenings/{id}/seats.
type seat struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// apiError is the body of a refused request.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats"`
	} `json:"error"`
}

// reservation is the body of a 201 (Seats) or of a refusal (Error).
type reservation struct {
	Seats []string `json:"seats"`
	apiError
}

// seatMap reads the seat map with client (the user's source's, or the first source's for the run's own
// reads).
func (s *swarm) seatMap(ctx context.Context, client *http.Client) ([]seat, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.seatURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&e)
		return nil, fmt.Errorf("GET %s: %d %s", s.seatURL, resp.StatusCode, e.Error.Code)
	}
	var seats []seat
	if err := json.NewDecoder(resp.Body).Decode(&seats); err != nil {
		return nil, fmt.Errorf("GET %s: decode: %w", s.seatURL, err)
	}
	return seats, nil
}

func (v *visit) post(ctx context.Context, pass string, seats []string) (int, reservation, error) {
	body, err := json.Marshal(map[string][]string{"seats": seats})
	if err != nil {
		return 0, reservation{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.bookURL, bytes.NewReader(body))
	if err != nil {
		return 0, reservation{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := v.src.client.Do(req)
	if err != nil {
		return 0, reservation{}, err
	}
	defer resp.Body.Close()
	var out reservation
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&out); err != nil && resp.StatusCode == http.StatusCreated {
		return 0, reservation{}, fmt.Errorf("POST %s: decode: %w", v.bookURL, err)
	}
	return resp.StatusCode, out, nil
}

// errProtocol marks a server message that is not the JSON of docs/protocol.md.
var errProtocol = errors.New("not a protocol message")

// errHoldEnded is a read cut short because the hold ended.
var errHoldEnded = errors.New("the hold ended")

// handshakeError is a socket the server refused with an HTTP status: not worth dialing again.
type handshakeError struct{ status int }

func (e *handshakeError) Error() string {
	return fmt.Sprintf("websocket handshake refused: HTTP %d", e.status)
}

// open dials the screening's socket from the user's source, with the token when the user has one.
func (v *visit) open(ctx context.Context, token string) (*socket, error) {
	u := v.wsURL
	if token != "" {
		u += "?token=" + url.QueryEscape(token)
	}
	return dialSocket(ctx, v.src.dial, v.rx, u)
}

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
