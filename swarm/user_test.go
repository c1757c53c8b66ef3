package swarm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

	mu      sync.Mutex
	sockets int
	posts   int
	sold    map[string]bool
	tokens  []string
	inbound []string
}

func newFake(t *testing.T, f *fake) string {
	t.Helper()
	f.t, f.sold = t, map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/screenings/x", func(w http.ResponseWriter, r *http.Request) {
		conn, err := f.upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		f.mu.Lock()
		n := f.sockets
		f.sockets++
		f.tokens = append(f.tokens, r.URL.Query().Get("token"))
		f.mu.Unlock()
		f.onSocket(n, r.URL.Query().Get("token"), conn)
		// Read until the client closes, keeping what it sent.
		for {
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.inbound = append(f.inbound, string(data))
			f.mu.Unlock()
		}
	})
	mux.HandleFunc("GET /api/screenings/x/seats", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []seat
		for _, id := range []string{"A1", "A2", "A3"} {
			st := "available"
			if f.sold[id] {
				st = "sold"
			}
			out = append(out, seat{ID: id, Status: st})
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/screenings/x/reservations", func(w http.ResponseWriter, r *http.Request) {
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
	if f.posts != 2 || rep.Latency.Reservation.Count != 2 || rep.Latency.Queue.Count != 1 || rep.Latency.Connect.Count != 1 {
		t.Errorf("posts %d, latency counts connect %d queue %d reservation %d; want 2, 1, 1, 2",
			f.posts, rep.Latency.Connect.Count, rep.Latency.Queue.Count, rep.Latency.Reservation.Count)
	}
	if !rep.Verification.OK {
		t.Errorf("verification: %q", rep.Verification.Problems)
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
