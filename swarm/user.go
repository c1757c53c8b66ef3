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
	// Error: anything else; result.errKind says what.
	Error Outcome = "error"
)

// result is one user's visit.
type result struct {
	outcome Outcome
	// errKind groups errors for counting ("read", "closed 1011", "server UNAVAILABLE", "reserve 401
	// INVALID_PASS", "timeout", ...); errText is the full error of this user.
	errKind, errText string
	// connect is from the first dial to the first message; connected says it was measured.
	connect   time.Duration
	connected bool
	// inQueue is from the first message to admitted; admitted says it was measured.
	inQueue  time.Duration
	admitted bool
	// reservations holds the round trip of each POST.
	reservations []time.Duration
	// seats are the seats of the ticket.
	seats      []string
	reconnects int
}

func (r *result) fail(kind string, err error) {
	r.outcome, r.errKind, r.errText = Error, kind, err.Error()
}

// message is any server message of docs/protocol.md.
type message struct {
	Type    string `json:"type"`
	Token   string `json:"token"`
	Pass    string `json:"pass"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// user is one virtual user's visit: wait in line for the pushes, reserve once admitted, and close.
func (s *swarm) user(ctx context.Context) result {
	var r result
	sock, pass := s.wait(ctx, &r)
	if sock == nil {
		return r
	}
	if s.reserve(ctx, pass, &r) {
		// Free the admission slot at once rather than when it lapses, so the next in line moves up.
		sock.leave()
	}
	sock.close()
	return r
}

// wait opens the socket and reads pushes until admitted (it returns the open socket and the pass) or the
// visit ends otherwise (it returns nil, with r's outcome set). A close 1012 or 1013, or a failed dial, is
// answered by dialing again with the token, keeping the place, at most maxReconnects times.
func (s *swarm) wait(ctx context.Context, r *result) (*socket, string) {
	var place place
	for attempt := 0; ; attempt++ {
		sock, pass, retry, kind, err := s.connection(ctx, &place, r)
		switch {
		case sock != nil:
			return sock, pass
		case err == nil:
			return nil, "" // the outcome is set: sold out
		case ctx.Err() != nil:
			r.fail(stopKind(ctx), err)
			return nil, ""
		case retry && attempt < maxReconnects:
			if pause(ctx, backoff(attempt)) {
				r.reconnects++
				continue
			}
			r.fail(stopKind(ctx), err)
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
}

// connection is one socket of a user's wait. It returns the open socket and the pass on admission; nil and
// no error when the visit ended (r's outcome set); else the error, its kind, and whether dialing again with
// the token is the answer (a failed dial, a close 1012 or 1013, an INTERNAL error message).
func (s *swarm) connection(ctx context.Context, p *place, r *result) (sock *socket, pass string, retry bool, kind string, err error) {
	dialAt := time.Now()
	sock, err = s.open(ctx, p.token)
	if err != nil {
		var hs *handshakeError
		if errors.As(err, &hs) {
			return nil, "", false, fmt.Sprintf("handshake %d", hs.status), err
		}
		return nil, "", true, "dial", err
	}
	var refused *message // an error message; its close frame follows and says whether to try again
	for first := true; ; first = false {
		wait := readWait
		if refused != nil {
			wait = writeWait
		}
		m, err := sock.read(wait)
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
			p.firstMessageAt = time.Now()
			r.connect, r.connected = p.firstMessageAt.Sub(dialAt), true
		}
		switch m.Type {
		case "queued":
			p.token = m.Token
		case "admitted":
			if m.Pass == "" {
				sock.close()
				return nil, "", false, "protocol", fmt.Errorf("%w: admitted without a pass", errProtocol)
			}
			p.token = m.Token
			r.inQueue, r.admitted = time.Since(p.firstMessageAt), true
			return sock, m.Pass, false, "", nil
		case "sold_out":
			sock.close()
			r.outcome = SoldOut
			return nil, "", false, "", nil
		case "error":
			if m.Code == "INTERNAL" {
				// The pass could not be signed; the socket stays open. Reconnecting hands the pass out again.
				sock.close()
				return nil, "", true, "server INTERNAL", fmt.Errorf("server error %s: %s", m.Code, m.Message)
			}
			refused = &m
		}
		// "position", and any type a newer server adds: keep waiting.
	}
}

// reserve picks random available seats and posts them, trying other seats after a 409 SEAT_TAKEN or
// SEAT_LOCKED up to Retries times. It sets r's outcome, and reports whether the user gave up holding its
// admission (so the caller can hand the slot back).
func (s *swarm) reserve(ctx context.Context, pass string, r *result) (gaveUp bool) {
	locked := map[string]bool{} // seats another request held; a hint only, the map says what is sold
	for try := 0; try <= s.cfg.Retries; try++ {
		seats, err := s.seatMap(ctx)
		if err != nil {
			r.fail(requestKind(ctx, "seat map"), err)
			return false
		}
		pick := pickSeats(seats, locked, s.cfg.Seats)
		if len(pick) == 0 {
			r.outcome = SoldOut // the map shows no seat left
			return false
		}
		sentAt := time.Now()
		status, body, err := s.post(ctx, pass, pick)
		r.reservations = append(r.reservations, time.Since(sentAt))
		if err != nil {
			r.fail(requestKind(ctx, "reserve"), err)
			return false
		}
		switch {
		case status == http.StatusCreated:
			r.outcome, r.seats = Ticket, body.Seats
			if len(r.seats) == 0 {
				r.seats = pick
			}
			return false
		case status == http.StatusConflict && body.Error.Code == "SOLD_OUT":
			r.outcome = SoldOut
			return false
		case status == http.StatusConflict && (body.Error.Code == "SEAT_TAKEN" || body.Error.Code == "SEAT_LOCKED"):
			for _, seat := range body.Error.Seats {
				locked[seat] = true
			}
		default:
			r.fail(fmt.Sprintf("reserve %d %s", status, body.Error.Code),
				fmt.Errorf("POST %s: %d %s: %s", s.bookURL, status, body.Error.Code, body.Error.Message))
			return false
		}
	}
	r.outcome = GaveUp
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

// pause sleeps d, or less if ctx ends; it reports whether the full pause passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
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

func (s *swarm) seatMap(ctx context.Context) ([]seat, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.seatURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
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

func (s *swarm) post(ctx context.Context, pass string, seats []string) (int, reservation, error) {
	body, err := json.Marshal(map[string][]string{"seats": seats})
	if err != nil {
		return 0, reservation{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.bookURL, bytes.NewReader(body))
	if err != nil {
		return 0, reservation{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+pass)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, reservation{}, err
	}
	defer resp.Body.Close()
	var out reservation
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&out); err != nil && resp.StatusCode == http.StatusCreated {
		return 0, reservation{}, fmt.Errorf("POST %s: decode: %w", s.bookURL, err)
	}
	return resp.StatusCode, out, nil
}

// errProtocol marks a server message that is not the JSON of docs/protocol.md.
var errProtocol = errors.New("not a protocol message")

// handshakeError is a socket the server refused with an HTTP status: not worth dialing again.
type handshakeError struct{ status int }

func (e *handshakeError) Error() string {
	return fmt.Sprintf("websocket handshake refused: HTTP %d", e.status)
}

// socket is one user's connection. The user's goroutine is its only reader and writer; a watcher
// goroutine closes it when the run's context ends, which unblocks a read in progress.
type socket struct {
	conn    *websocket.Conn
	stop    chan struct{} // closed to release the watcher
	stopped chan struct{} // closed when the watcher has returned
}

// open dials the screening's socket, with the token when the user has one.
func (s *swarm) open(ctx context.Context, token string) (*socket, error) {
	u := s.wsURL
	if token != "" {
		u += "?token=" + url.QueryEscape(token)
	}
	conn, resp, err := s.dialer.DialContext(ctx, u, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
			return nil, &handshakeError{status: resp.StatusCode}
		}
		return nil, err
	}
	conn.SetReadLimit(maxMessageSize)
	conn.SetPingHandler(func(data string) error {
		// A ping shows the server is there: extend the wait, and answer as the default handler would.
		_ = conn.SetReadDeadline(time.Now().Add(readWait))
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || isTimeout(err) {
			return nil
		}
		return err
	})
	sock := &socket{conn: conn, stop: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(sock.stopped)
		select {
		case <-ctx.Done():
			_ = conn.Close()
		case <-sock.stop:
		}
	}()
	return sock, nil
}

// read returns the next message, waiting at most wait (each ping extends it to readWait).
func (k *socket) read(wait time.Duration) (message, error) {
	if err := k.conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return message{}, err
	}
	_, data, err := k.conn.ReadMessage()
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return message{}, fmt.Errorf("%w: decode %q: %v", errProtocol, truncate(data, 80), err)
	}
	return m, nil
}

// leave tells the server the user is done with its place or slot ({"type":"leave"}).
func (k *socket) leave() {
	_ = k.conn.SetWriteDeadline(time.Now().Add(writeWait))
	_ = k.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"leave"}`))
}

// close ends the visit with a normal close, then releases the connection and its watcher.
func (k *socket) close() {
	_ = k.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"), time.Now().Add(writeWait))
	k.drop()
}

// drop releases the connection and its watcher without a close frame (the connection already failed).
func (k *socket) drop() {
	close(k.stop)
	<-k.stopped
	_ = k.conn.Close()
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
