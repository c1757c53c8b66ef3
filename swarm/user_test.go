// Tests of whole runs against a scripted fake server: reconnects with the token, retries on other seats,
// timeouts, line mode, and source addresses.

package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scripted server: onSocket plays one socket, onReserve answers one POST.
type fake struct {
	t         *testing.T
	upgrader  websocket.Upgrader
	onSocket  func(n int, token string, conn *websocket.Conn)
	onReserve func(n int, seats []string) (int, any)
	// seatStatus, when set, is a seat's status in the map for a seat not sold here; routes adds handlers.
	seatStatus func(id string) string
	routes     func(mux *http.ServeMux)
	// powCost is the screening's pow_cost in its JSON (0: no proof of work).
	powCost int

	mu      sync.Mutex
	sockets int
	posts   int
	sold    map[string]bool
	tokens  []string
	inbound []string
	forms   []string     // how each socket sent its token: "hello" or "url"
	queries []url.Values // each socket's URL query
	brought []url.Values // what each socket brought for a new place (altcha, code): from its hello, or its URL
	closes  []int        // the close codes clients sent
	from    []string     // the client address of every request, sockets and REST alike
}

// record notes where a request came from.
func (f *fake) record(r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	f.mu.Lock()
	f.from = append(f.from, host)
	f.mu.Unlock()
}

// token reads a socket's token as the server does: from its hello when it came with auth=message (and then
// never from the URL), else from ?token=; and with it what the socket brought for a new place.
func (f *fake) token(r *http.Request, conn *websocket.Conn) (token, form string, brought url.Values) {
	q := r.URL.Query()
	if q.Get("auth") != "message" {
		brought = url.Values{}
		for _, k := range []string{"altcha", "code"} {
			if q.Has(k) {
				brought.Set(k, q.Get(k))
			}
		}
		return q.Get("token"), "url", brought
	}
	for _, k := range []string{"token", "altcha", "code"} {
		if q.Has(k) {
			f.t.Errorf("socket URL %q carries %s beside auth=message", r.URL.RequestURI(), k)
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := conn.ReadMessage()
	var hello struct{ Type, Token, Altcha, Code string }
	if err != nil || json.Unmarshal(data, &hello) != nil || hello.Type != "hello" {
		f.t.Errorf("first message %q (%v), want a hello", data, err)
	}
	brought = url.Values{}
	if hello.Altcha != "" {
		brought.Set("altcha", hello.Altcha)
	}
	if hello.Code != "" {
		brought.Set("code", hello.Code)
	}
	return hello.Token, "hello", brought
}

func newFake(t *testing.T, f *fake) string {
	t.Helper()
	f.t, f.sold = t, map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/screenings/x", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		conn, err := f.upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		token, form, brought := f.token(r, conn)
		f.mu.Lock()
		n := f.sockets
		f.sockets++
		f.tokens = append(f.tokens, token)
		f.forms = append(f.forms, form)
		f.queries = append(f.queries, r.URL.Query())
		f.brought = append(f.brought, brought)
		f.mu.Unlock()
		f.onSocket(n, token, conn)
		// Read until the client closes, keeping what it sent.
		for {
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, data, err := conn.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					f.mu.Lock()
					f.closes = append(f.closes, ce.Code)
					f.mu.Unlock()
				}
				return
			}
			f.mu.Lock()
			f.inbound = append(f.inbound, string(data))
			f.mu.Unlock()
		}
	})
	mux.HandleFunc("GET /api/screenings/x", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		fmt.Fprintf(w, `{"id":"x","pow_cost":%d}`, f.powCost)
	})
	mux.HandleFunc("GET /api/screenings/x/seats", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []seat
		for _, id := range []string{"A1", "A2", "A3"} {
			st := "available"
			if f.seatStatus != nil {
				st = f.seatStatus(id)
			}
			if f.sold[id] {
				st = "sold"
			}
			out = append(out, seat{ID: id, Status: st})
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/screenings/x/reservations", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		var body struct{ Seats []string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Header.Get("Authorization") != "Bearer p1" {
			t.Errorf("Authorization = %q, want Bearer p1", r.Header.Get("Authorization"))
		}
		f.mu.Lock()
		n := f.posts
		f.posts++
		f.mu.Unlock()
		status, out := f.onReserve(n, body.Seats)
		if status == http.StatusCreated {
			f.mu.Lock()
			for _, s := range body.Seats {
				f.sold[s] = true
			}
			f.mu.Unlock()
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(out)
	})
	if f.routes != nil {
		f.routes(mux)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func send(t *testing.T, conn *websocket.Conn, v any) {
	t.Helper()
	if err := conn.WriteJSON(v); err != nil {
		t.Errorf("server write: %v", err)
	}
}

func conflict(code string, seats []string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": "no", "seats": seats}}
}

// TestUserWithTokenInURLSendsItAsOldClientsDid: with TokenInURL a user dials ?token= and says no hello,
// for a server older than the hello; its reconnect still carries the token.
func TestUserWithTokenInURLSendsItAsOldClientsDid(t *testing.T) {
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			if n == 0 {
				send(t, conn, map[string]any{"type": "queued", "token": "t1", "rank": 1, "total": 1, "inserted": true})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "restarting"))
				return
			}
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
		},
		onReserve: func(n int, seats []string) (int, any) {
			return http.StatusCreated, map[string]any{"id": 1, "screening": "x", "seats": seats, "seats_left": 2}
		},
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, TokenInURL: true, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Ticket: 1}) {
		t.Errorf("outcomes %+v, want one ticket (errors %v)", rep.Outcomes, rep.Errors)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.tokens, []string{"", "t1"}) || !slices.Equal(f.forms, []string{"url", "url"}) {
		t.Errorf("tokens %q sent as %q, want none then t1, both in the URL", f.tokens, f.forms)
	}
	for _, m := range f.inbound {
		if strings.Contains(m, "hello") {
			t.Errorf("the user sent %s with TokenInURL, want no hello", m)
		}
	}
}

func TestUserReconnectsWithItsTokenAndTriesOtherSeats(t *testing.T) {
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			if n == 0 {
				send(t, conn, map[string]any{"type": "queued", "token": "t1", "rank": 1, "total": 1, "inserted": true})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "restarting"))
				return
			}
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
		},
		onReserve: func(n int, seats []string) (int, any) {
			if n == 0 {
				return http.StatusConflict, conflict("SEAT_LOCKED", seats)
			}
			return http.StatusCreated, map[string]any{"id": 1, "screening": "x", "seats": seats, "seats_left": 2}
		},
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, Retries: 1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Ticket: 1}) || rep.Reconnects != 1 {
		t.Errorf("outcomes %+v, reconnects %d; want one ticket after one reconnect (errors %v)", rep.Outcomes, rep.Reconnects, rep.Errors)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.tokens, []string{"", "t1"}) {
		t.Errorf("tokens dialed = %q, want none, then t1", f.tokens)
	}
	if !slices.Equal(f.forms, []string{"hello", "hello"}) {
		t.Errorf("tokens sent as %q, want each in a hello, none in the URL", f.forms)
	}
	if f.posts != 2 || rep.Latency.Reservation.Count != 2 || rep.Latency.Queue.Count != 1 || rep.Latency.Connect.Count != 1 {
		t.Errorf("posts %d, latency counts connect %d queue %d reservation %d; want 2, 1, 1, 2",
			f.posts, rep.Latency.Connect.Count, rep.Latency.Queue.Count, rep.Latency.Reservation.Count)
	}
	if !rep.Verification.OK {
		t.Errorf("verification: %q", rep.Verification.Problems)
	}
}

// TestPreQueuePauseAndWaitEstimateAreNotErrors: a user that arrives before the sale opens gets prequeue
// first, keeps that token across a reconnect, sits through a pause, reads positions with eta_seconds, and
// ends with its ticket.
func TestPreQueuePauseAndWaitEstimateAreNotErrors(t *testing.T) {
	token := strings.Repeat("b", 32)
	f := &fake{
		onSocket: func(n int, got string, conn *websocket.Conn) {
			if n == 0 {
				send(t, conn, map[string]any{"type": "prequeue", "token": token, "opens_at": "2030-01-01T00:00:00.000Z", "total": 1, "inserted": true})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "restarting"))
				return
			}
			send(t, conn, map[string]any{"type": "prequeue", "token": token, "opens_at": "2030-01-01T00:00:00.000Z", "total": 1, "inserted": false, "paused": true})
			tickAt := time.Now().UnixMilli()
			_ = conn.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"position","rank":1,"total":1,"tick_at":%d,"eta_seconds":3}`, tickAt)))
			send(t, conn, map[string]any{"type": "paused"})
			_ = conn.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"position","rank":1,"total":1,"tick_at":%d}`, tickAt+1)))
			send(t, conn, map[string]any{"type": "resumed"})
			send(t, conn, map[string]any{"type": "admitted", "token": token, "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
		},
		onReserve: func(n int, seats []string) (int, any) {
			return http.StatusCreated, map[string]any{"id": 1, "screening": "x", "seats": seats, "seats_left": 2}
		},
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Ticket: 1}) || rep.Reconnects != 1 {
		t.Errorf("outcomes %+v, reconnects %d; want one ticket after one reconnect (errors %v)", rep.Outcomes, rep.Reconnects, rep.Errors)
	}
	if rep.Registration.Registered != 1 || rep.Push.Positions.Count != 2 || rep.Latency.Queue.Count != 1 {
		t.Errorf("registered %d, positions %d, queue latencies %d; want 1, 2, 1", rep.Registration.Registered, rep.Push.Positions.Count, rep.Latency.Queue.Count)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.tokens, []string{"", token}) {
		t.Errorf("tokens dialed = %q, want none, then the prequeue's", f.tokens)
	}
}

func TestUserGivesUpAfterRetriesAndLeaves(t *testing.T) {
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
		},
		onReserve: func(n int, seats []string) (int, any) { return http.StatusConflict, conflict("SEAT_TAKEN", seats) },
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, Retries: 2, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{GaveUp: 1}) {
		t.Errorf("outcomes = %+v, want one gave_up (errors %v)", rep.Outcomes, rep.Errors)
	}
	// Wait for the server's socket handler to have read what the client sent before it closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		posts, inbound := f.posts, slices.Clone(f.inbound)
		f.mu.Unlock()
		if slices.Contains(inbound, `{"type":"leave"}`) || time.Now().After(deadline) {
			if posts != 3 || !slices.Contains(inbound, `{"type":"leave"}`) {
				t.Errorf("posts %d, client messages %q; want 3 tries and a leave", posts, inbound)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunStopsByItselfAtTheTimeout(t *testing.T) {
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "queued", "token": strings.Repeat("a", 32), "rank": n + 1, "total": n + 1})
		},
		onReserve: func(int, []string) (int, any) { return http.StatusInternalServerError, nil },
	}
	url := newFake(t, f)
	started := time.Now()
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 5, Concurrency: 2, Timeout: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("Run took %v with a 300ms timeout", took)
	}
	if rep.Outcomes != (Outcomes{Error: 5}) || rep.Errors[kindTimeout].Count != 5 || rep.Stopped != kindTimeout {
		t.Errorf("outcomes %+v, errors %v, stopped %q; want 5 errors of kind timeout, stopped by timeout", rep.Outcomes, rep.Errors, rep.Stopped)
	}
	if !rep.Verification.OK {
		t.Errorf("verification: %q", rep.Verification.Problems)
	}
}

func TestErrorThenClose1013ReconnectsAndErrorThenClose1008Ends(t *testing.T) {
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			if n == 0 {
				send(t, conn, map[string]any{"type": "error", "code": "UNAVAILABLE", "message": "retry shortly"})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "UNAVAILABLE"))
				return
			}
			send(t, conn, map[string]any{"type": "error", "code": "UNKNOWN_SCREENING", "message": "no such screening"})
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "UNKNOWN_SCREENING"))
		},
		onReserve: func(int, []string) (int, any) { return http.StatusInternalServerError, nil },
	}
	url := newFake(t, f)
	started := time.Now()
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Errors["server UNKNOWN_SCREENING"].Count; got != 1 || rep.Outcomes.Error != 1 || rep.Reconnects != 1 {
		t.Errorf("errors %v, outcomes %+v, reconnects %d; want one reconnect, then 1 error of kind server UNKNOWN_SCREENING",
			rep.Errors, rep.Outcomes, rep.Reconnects)
	}
	if took := time.Since(started); took > 3*time.Second {
		t.Errorf("Run took %v: the close after an error message should end the wait at once", took)
	}
}

// ticks is the fake's admission clock: tick k (1-based) at start+k·every, the same for every socket.
type ticks struct {
	start time.Time
	every time.Duration
	n     int
}

func (tk ticks) at(k int) time.Time { return tk.start.Add(time.Duration(k) * tk.every) }

// holdRun runs 3 users in line mode against a fake that ticks 5 times: user 2 is admitted at tick 3, and
// with drop user 1 gets no position for tick 2.
func holdRun(t *testing.T, drop, leave bool) (Report, *fake) {
	t.Helper()
	// The first tick leaves the users 500 ms to connect; the hold ends 300 ms after the last.
	tk := ticks{start: time.Now().Add(400 * time.Millisecond), every: 100 * time.Millisecond, n: 5}
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "queued", "token": fmt.Sprintf("%032x", n+1), "rank": n + 1, "total": 3, "inserted": true})
			for k := 1; k <= tk.n; k++ {
				time.Sleep(time.Until(tk.at(k)))
				switch {
				case n == 2 && k == 3:
					send(t, conn, map[string]any{"type": "admitted", "token": fmt.Sprintf("%032x", n+1), "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
				case n == 2 && k > 3, drop && n == 1 && k == 2:
				default:
					send(t, conn, map[string]any{"type": "position", "rank": n + 1, "total": 3, "tick_at": tk.at(k).UnixMilli()})
				}
			}
		},
		onReserve: func(int, []string) (int, any) { return http.StatusInternalServerError, nil },
	}
	url := newFake(t, f)
	started := time.Now()
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 3, Mode: Line, Duration: 1300 * time.Millisecond, Leave: leave, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took < 1300*time.Millisecond || took > 5*time.Second {
		t.Errorf("a hold of 1.3s took %v", took)
	}
	if rep.Outcomes != (Outcomes{Held: 2, Admitted: 1}) || rep.Stopped != "" {
		t.Errorf("outcomes %+v, stopped %q; want 2 held and 1 admitted, not stopped (errors %v)", rep.Outcomes, rep.Stopped, rep.Errors)
	}
	if rep.Registration.Registered != 3 || rep.Registration.BurstMs <= 0 || rep.Registration.PerSecond <= 0 {
		t.Errorf("registration %+v, want 3 users at some rate", rep.Registration)
	}
	if rep.Push.Ticks != 5 || rep.Push.CatchUps != 0 || len(rep.Push.PerTick) != 5 {
		t.Errorf("ticks %d, catch-ups %d, per tick %+v; want 5 ticks, no catch-up", rep.Push.Ticks, rep.Push.CatchUps, rep.Push.PerTick)
	}
	for i, pt := range rep.Push.PerTick {
		if pt.TickAtMs != tk.at(i+1).UnixMilli() || pt.MaxMs < 0 || pt.MaxMs > 1000 {
			t.Errorf("tick %d: %+v, want tick_at %d and a latency between 0 and 1s", i+1, pt, tk.at(i+1).UnixMilli())
		}
	}
	// Wait for the server's socket handlers to have read what the clients sent before they closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		closes := len(f.closes)
		f.mu.Unlock()
		if closes == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.closes, []int{websocket.CloseNormalClosure, websocket.CloseNormalClosure, websocket.CloseNormalClosure}) {
		t.Errorf("close codes from the clients = %v, want three 1000 (closed cleanly at the end)", f.closes)
	}
	return rep, f
}

func TestHoldMeasuresEveryPushAndMissesNone(t *testing.T) {
	rep, f := holdRun(t, false, false)
	// Users 0 and 1 got all 5 ticks; user 2 got ticks 1 and 2, then admitted at tick 3 and nothing more.
	if rep.Push.Positions.Count != 12 || rep.Push.UsersWithPosition != 3 {
		t.Errorf("positions %d, users with one %d; want 12 and 3", rep.Push.Positions.Count, rep.Push.UsersWithPosition)
	}
	if got := []int{rep.Push.PerTick[0].Count, rep.Push.PerTick[2].Count, rep.Push.PerTick[4].Count}; !slices.Equal(got, []int{3, 2, 2}) {
		t.Errorf("counts of ticks 1, 3, 5 = %v, want [3 2 2]", got)
	}
	if rep.Push.MissedTicks != 0 || rep.Push.UsersMissingTicks != 0 || rep.Push.UsersWithEveryTick != 3 {
		t.Errorf("missed %d by %d, every tick %d; want none missed, 3 with every tick", rep.Push.MissedTicks, rep.Push.UsersMissingTicks, rep.Push.UsersWithEveryTick)
	}
	if rep.Latency.Queue.Count != 1 || rep.Latency.Reservation.Count != 0 {
		t.Errorf("queue %d, reservations %d; want the one admitted, no reservation", rep.Latency.Queue.Count, rep.Latency.Reservation.Count)
	}
	if len(f.inbound) != 0 || f.posts != 0 {
		t.Errorf("client messages %q, posts %d; want none without -leave", f.inbound, f.posts)
	}
	if !rep.Verification.OK || rep.Verification.Skipped == "" {
		t.Errorf("verification %+v, want skipped in line mode", rep.Verification)
	}
}

func TestHoldCountsADroppedPushAsMissed(t *testing.T) {
	rep, f := holdRun(t, true, true)
	if rep.Push.Positions.Count != 11 || rep.Push.PerTick[1].Count != 2 {
		t.Errorf("positions %d, tick 2 got by %d; want 11 and 2", rep.Push.Positions.Count, rep.Push.PerTick[1].Count)
	}
	if rep.Push.MissedTicks != 1 || rep.Push.UsersMissingTicks != 1 || rep.Push.UsersWithEveryTick != 2 {
		t.Errorf("missed %d by %d, every tick %d; want 1 by 1, 2 with every tick", rep.Push.MissedTicks, rep.Push.UsersMissingTicks, rep.Push.UsersWithEveryTick)
	}
	if !slices.Equal(f.inbound, []string{`{"type":"leave"}`, `{"type":"leave"}`, `{"type":"leave"}`}) {
		t.Errorf("client messages %q, want a leave from each user with -leave", f.inbound)
	}
}

func TestSourcesDialSocketsAndRequestsFromTheirAddress(t *testing.T) {
	f := &fake{
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
		},
		onReserve: func(n int, seats []string) (int, any) {
			return http.StatusCreated, map[string]any{"id": n, "screening": "x", "seats": seats}
		},
	}
	url := newFake(t, f) // listens on 127.0.0.1
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 2, Sources: 2, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Ticket: 2}) || rep.Sources != 2 {
		t.Errorf("outcomes %+v, sources %d; want 2 tickets from 2 sources (errors %v)", rep.Outcomes, rep.Sources, rep.Errors)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	from := slices.Clone(f.from)
	slices.Sort(from)
	from = slices.Compact(from)
	if !slices.Equal(from, []string{"127.0.0.2", "127.0.0.3"}) {
		t.Errorf("requests came from %v, want 127.0.0.2 and 127.0.0.3 only", from)
	}
	if f.posts != 2 {
		t.Errorf("posts = %d, want 2", f.posts)
	}
}

func TestBusyRefusalsAreFollowedAfterTheirWaitWithTheToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	const wait = 300 * time.Millisecond
	var mu sync.Mutex
	var dialed []time.Time
	f := &fake{
		onSocket: func(n int, _ string, conn *websocket.Conn) {
			mu.Lock()
			dialed = append(dialed, time.Now())
			mu.Unlock()
			switch n {
			case 0:
				send(t, conn, map[string]any{"type": "queued", "token": token, "rank": 1, "total": 1})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "server restarting"))
			case 1, 2:
				send(t, conn, map[string]any{"type": "error", "code": "BUSY", "message": "busy", "retry_after_ms": wait.Milliseconds()})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "BUSY"))
			default:
				send(t, conn, map[string]any{"type": "sold_out", "reason": "sold_out"})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "sold out"))
			}
		},
		onReserve: func(int, []string) (int, any) { return http.StatusInternalServerError, nil },
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Busy != 2 || rep.Outcomes.SoldOut != 1 {
		t.Errorf("busy %d, outcomes %+v; want 2 busy refusals, then sold out", rep.Busy, rep.Outcomes)
	}
	f.mu.Lock()
	tokens := slices.Clone(f.tokens)
	f.mu.Unlock()
	for i, got := range tokens[1:] {
		if got != token {
			t.Errorf("socket %d came with token %q, want %q: a refusal keeps the place", i+1, got, token)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 2; i < len(dialed); i++ {
		if gap := dialed[i].Sub(dialed[i-1]); gap < wait {
			t.Errorf("socket %d dialed %v after a BUSY refusal, want at least the %v it asked", i, gap, wait)
		}
	}
}
