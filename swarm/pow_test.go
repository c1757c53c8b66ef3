// Tests of the users' proof of work against the scripted fake: a solution the server can verify, sent once
// per new place (a reconnect with the token solves nothing), the access code on every dial, and a refused
// proof an error of its own that is not tried again.

package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/altcha"
)

var fakeSecrets = altcha.Secrets{Signature: []byte("fake-signature-key"), KeySignature: []byte("fake-key-signature-key")}

// challenges serves the fake screening's challenge route as the server does (10 iterations a derivation, a
// counter up to 8) and counts what it issued.
func challenges(t *testing.T, issued *atomic.Int32) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/screenings/x/challenge", func(w http.ResponseWriter, r *http.Request) {
			n := issued.Add(1)
			ch, err := altcha.Create(altcha.Options{Cost: 10, Counter: uint32(n % 8), ExpiresAt: time.Now().Add(time.Minute),
				Data: map[string]string{"screening": "x"}}, fakeSecrets)
			if err != nil {
				t.Errorf("create a challenge: %v", err)
			}
			_ = json.NewEncoder(w).Encode(ch)
		})
	}
}

func TestUserSolvesOnceAndReconnectsWithItsTokenWithoutSolving(t *testing.T) {
	var issued atomic.Int32
	f := &fake{
		powCost: 5,
		routes:  challenges(t, &issued),
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
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 1, Code: "ab12-cd34 ef56", Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes != (Outcomes{Ticket: 1}) || rep.Reconnects != 1 {
		t.Errorf("outcomes %+v, reconnects %d; want one ticket after one reconnect (errors %v)", rep.Outcomes, rep.Reconnects, rep.Errors)
	}
	if got := issued.Load(); got != 1 {
		t.Errorf("challenges fetched = %d, want 1: the reconnect keeps its place with the token", got)
	}
	if p := rep.Pow; p == nil || p.Cost != 5 || p.Solves.Count != 1 || p.Waits.Count != 1 || p.ChallengeFailures != 0 {
		t.Errorf("pow = %+v, want cost 5, one solve, one wait, no failure", p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.brought) != 2 {
		t.Fatalf("sockets = %d, want 2", len(f.brought))
	}
	first, second := f.brought[0], f.brought[1]
	payload, err := altcha.DecodePayload(first.Get("altcha"))
	if err == nil {
		err = altcha.Verify(payload, fakeSecrets, time.Now())
	}
	if err != nil {
		t.Errorf("the first socket's altcha %q does not verify: %v", first.Get("altcha"), err)
	}
	if second.Has("altcha") {
		t.Errorf("the reconnect with its token sent altcha=%q, want none", second.Get("altcha"))
	}
	for i, b := range f.brought {
		if b.Get("code") != "ab12-cd34 ef56" || f.queries[i].Get("auth") != "message" {
			t.Errorf("socket %d: brought %v with query %v, want auth=message and the run's code in the hello", i, b, f.queries[i])
		}
	}
}

func TestRefusedProofIsAnErrorOfItsOwnAndNotTriedAgain(t *testing.T) {
	var issued atomic.Int32
	f := &fake{
		powCost: 5,
		routes:  challenges(t, &issued),
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "error", "code": "POW_INVALID", "message": "the challenge has expired; solve a new challenge"})
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "POW_INVALID"))
		},
		onReserve: func(int, []string) (int, any) { return http.StatusInternalServerError, nil },
	}
	url := newFake(t, f)
	rep, err := Run(context.Background(), Config{URL: url, Screening: "x", Users: 2, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Errors["server POW_INVALID"].Count; got != 2 || rep.Outcomes.Error != 2 || rep.Reconnects != 0 {
		t.Errorf("errors %v, outcomes %+v, reconnects %d; want 2 errors of kind server POW_INVALID and no reconnect",
			rep.Errors, rep.Outcomes, rep.Reconnects)
	}
	if got := issued.Load(); got != 2 {
		t.Errorf("challenges fetched = %d, want 2, one per user", got)
	}
}

func TestFailedChallengeFetchIsCountedAndTriedAgain(t *testing.T) {
	var issued, asked atomic.Int32
	serve := challenges(t, &issued)
	f := &fake{
		powCost: 5,
		routes: func(mux *http.ServeMux) {
			inner := http.NewServeMux()
			serve(inner)
			mux.HandleFunc("GET /api/screenings/x/challenge", func(w http.ResponseWriter, r *http.Request) {
				if asked.Add(1) == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = w.Write([]byte(`{"error":{"code":"RATE_LIMITED","message":"too many challenges"}}`))
					return
				}
				inner.ServeHTTP(w, r)
			})
		},
		onSocket: func(n int, token string, conn *websocket.Conn) {
			send(t, conn, map[string]any{"type": "admitted", "token": "t1", "pass": "p1", "expires_at": "2030-01-01T00:00:00Z"})
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
	if rep.Outcomes != (Outcomes{Ticket: 1}) || rep.Pow == nil || rep.Pow.ChallengeFailures != 1 || rep.Pow.Solves.Count != 1 {
		t.Errorf("outcomes %+v, pow %+v; want a ticket after one failed challenge fetch and one solve (errors %v)", rep.Outcomes, rep.Pow, rep.Errors)
	}
}

func TestPowFiguresAddEveryUsersSolvesAndTheRegistrationStartsAtTheFirstChallenge(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	start := time.Now()
	results := []result{
		{Outcome: Ticket, FirstChallengeAt: start, FirstDialAt: start.Add(ms(100)), RegisteredAt: start.Add(ms(150)),
			Solves: []time.Duration{ms(90)}, SolveWaits: []time.Duration{0}},
		{Outcome: Ticket, FirstChallengeAt: start.Add(ms(10)), FirstDialAt: start.Add(ms(300)), RegisteredAt: start.Add(ms(500)),
			Solves: []time.Duration{ms(10), ms(180)}, SolveWaits: []time.Duration{ms(80), ms(5)}, ChallengeFailures: 1},
	}
	rep := summarize(Config{Users: 2, Seats: 1, PowCost: 40}, results, time.Second)
	want := Pow{Cost: 40,
		Solves:            Spread{Count: 3, P50Ms: 90, P90Ms: 180, P99Ms: 180, MaxMs: 180},
		Waits:             Spread{Count: 3, P50Ms: 5, P90Ms: 80, P99Ms: 80, MaxMs: 80},
		ChallengeFailures: 1}
	if rep.Pow == nil || *rep.Pow != want {
		t.Errorf("Pow = %+v, want %+v", rep.Pow, want)
	}
	if reg := rep.Registration; reg.BurstMs != 400 || reg.ArrivalMs != 500 || reg.PerSecond != 4 {
		t.Errorf("Registration = %+v, want a burst of 400 ms from the first dial, 500 ms from the first challenge, 4 users/s", reg)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PROOF OF WORK", "cost 40 key derivations", "wait for a core", "challenge failures  1",
		"500ms after the first challenge fetch (400ms after the first dial): 4.0 users/s"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	if rep := summarize(Config{Users: 2, Seats: 1}, results, time.Second); rep.Pow != nil {
		t.Errorf("Pow = %+v for a run without a proof of work, want nil", rep.Pow)
	}
}
