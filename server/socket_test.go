// The waiting room's socket route through the whole server: the Origin check, the refusals, a pass that
// reserves, and a registration that got no answer.

package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// readWait bounds each read of a socket: the server answers within milliseconds.
const readWait = 5 * time.Second

// dial opens a socket to path with the given Origin header ("" sends none).
func (a *testServer) dial(t *testing.T, path, origin string) (*testenv.Socket, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	return testenv.DialHeader(t, a.ts.URL+path, h)
}

func TestSocketOriginCheck(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			c.HTTP.AllowedOrigins = []string{"http://app.example/", "https://partner.example"}
		})
		for _, c := range []struct {
			name   string
			origin string
			allow  bool
		}{
			{"foreign origin", "http://evil.example", false},
			{"lookalike of an allowed origin", "http://app.example.evil.example", false},
			{"opaque origin", "null", false},
			{"same origin", a.ts.URL, true},
			{"allowed origin (listed with a slash)", "http://app.example", true},
			{"allowed origin, other case", "HTTPS://PARTNER.EXAMPLE", true},
			{"no Origin", "", true},
		} {
			t.Run(c.name, func(t *testing.T) {
				conn, res, err := a.dial(t, "/ws/screenings/s1", c.origin)
				if !c.allow {
					if err == nil {
						conn.Close()
						t.Fatalf("socket with Origin %q opened, want HTTP 403", c.origin)
					}
					if res == nil || res.StatusCode != http.StatusForbidden {
						t.Errorf("socket with Origin %q = %v (%v), want HTTP 403", c.origin, status(res), err)
					}
					return
				}
				if err != nil {
					t.Fatalf("socket with Origin %q = %v (%v), want it open", c.origin, status(res), err)
				}
				defer conn.Close()
				if m := conn.Next(t, readWait); m.Type != "queued" || !queue.ValidToken(m.Token) || m.Rank < 1 {
					t.Errorf("first message with Origin %q = %+v, want queued with a token and a rank", c.origin, m)
				}
			})
		}
	})
}

func status(res *http.Response) any {
	if res == nil {
		return "no response"
	}
	return res.StatusCode
}

func TestSocketWithoutUpgradeIsBadRequest(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		if r := a.get(t, "/ws/screenings/s1"); r.status != http.StatusBadRequest {
			t.Errorf("plain GET /ws/screenings/s1 = %d %s, want 400", r.status, r)
		}
	})
}

func TestSocketAnyOriginWhenAllowedOriginsHasStar(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) { c.HTTP.AllowedOrigins = []string{"*"} })
		conn, res, err := a.dial(t, "/ws/screenings/s1", "http://evil.example")
		if err != nil {
			t.Fatalf("socket with any Origin under \"*\" = %v (%v), want it open", status(res), err)
		}
		defer conn.Close()
		if m := conn.Next(t, readWait); m.Type != "queued" {
			t.Errorf("first message = %+v, want queued", m)
		}
	})
}

func TestSocketRefusals(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		env.Demo(t, "gone", 1, 1)
		if err := a.q.Close(context.Background(), "gone"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, path string
			want       testenv.Message
			closeCode  int
		}{
			{"unknown screening", "/ws/screenings/nope", testenv.Message{Type: "error", Code: "UNKNOWN_SCREENING"}, websocket.ClosePolicyViolation},
			{"malformed token", "/ws/screenings/s1?token=xyz", testenv.Message{Type: "error", Code: "BAD_TOKEN"}, websocket.ClosePolicyViolation},
			{"sold out", "/ws/screenings/gone", testenv.Message{Type: "sold_out"}, websocket.CloseNormalClosure},
		} {
			t.Run(c.name, func(t *testing.T) {
				conn, res, err := a.dial(t, c.path, "")
				if err != nil {
					t.Fatalf("socket %s = %v (%v), want it open, then refused", c.path, status(res), err)
				}
				defer conn.Close()
				if m := conn.Next(t, readWait); m.Type != c.want.Type || m.Code != c.want.Code {
					t.Errorf("message on %s = %+v, want type %q code %q", c.path, m, c.want.Type, c.want.Code)
				}
				if code := conn.CloseCode(t, readWait); code != c.closeCode {
					t.Errorf("close code on %s = %d, want %d", c.path, code, c.closeCode)
				}
			})
		}
	})
}

// The whole path through the server: a socket waits, is admitted, gets its pass, and the pass reserves.
func TestSocketPassReservesOverHTTP(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newApp(t, env, nil)
		conn, res, err := a.dial(t, "/ws/screenings/s1", a.ts.URL)
		if err != nil {
			t.Fatalf("socket = %v (%v), want it open", status(res), err)
		}
		defer conn.Close()
		queued := conn.Next(t, readWait)
		if queued.Type != "queued" || queued.Rank != 1 || queued.Total != 1 {
			t.Fatalf("first message = %+v, want queued, rank 1 of 1", queued)
		}
		if !strings.Contains(a.metrics(t), "waitroom_hub_sockets 1") {
			t.Errorf("GET /metrics with one socket open lacks waitroom_hub_sockets 1")
		}

		tick, err := a.q.Admit(ctx, "s1", time.Now(), queue.Settings{BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute})
		if err != nil || len(tick.Admitted) != 1 || tick.Admitted[0] != queued.Token {
			t.Fatalf("Admit = %v, %v; want the socket's token", tick.Admitted, err)
		}
		a.hub.Dispatch(ctx, &queue.Line{}, tick.Event())
		admitted := conn.Next(t, readWait)
		if admitted.Type != "admitted" || admitted.Pass == "" {
			t.Fatalf("message after admission = %+v, want admitted with a pass", admitted)
		}

		if r := a.reserve(t, "s1", admitted.Pass, `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Errorf("reservation with the socket's pass = %d %s, want 201", r.status, r)
		}
	})
}

// TestSocketWhoseRegistrationGotNoAnswerLeavesNothingCounted: a socket whose registration ran in Redis but
// whose answer was lost is told to retry (UNAVAILABLE, 1013), and the registration is undone: its socket is
// not counted as connected, and its token, which the client may never have learnt, is noted gone so the
// grace drops it rather than it waiting in line for ever.
func TestSocketWhoseRegistrationGotNoAnswerLeavesNothingCounted(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		if _, err := a.q.Register(t.Context(), "s1", ""); err != nil { // Redis learns the script
			t.Fatal(err)
		}
		token := queue.NewToken()
		env.Redis.AddHook(&testenv.Lossy{Token: token, Run: true, Fail: 1})
		conn, res, err := a.dial(t, "/ws/screenings/s1?token="+token, "")
		if err != nil {
			t.Fatalf("socket = %v (%v), want it open, then refused", status(res), err)
		}
		defer conn.Close()
		if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "UNAVAILABLE" {
			t.Errorf("socket message after a registration without an answer = %+v, want error UNAVAILABLE", m)
		}
		if code := conn.CloseCode(t, readWait); code != hub.CloseTryAgainLater {
			t.Errorf("close code = %d, want %d (retry later)", code, hub.CloseTryAgainLater)
		}
		ctx := t.Context()
		if n, err := env.Redis.HGet(ctx, queue.Key(env.Prefix, "s1", "conns"), token).Int64(); err == nil && n != 0 {
			t.Errorf("the token counts %d open sockets after its only socket was refused, want none", n)
		}
		if err := env.Redis.ZScore(ctx, queue.Key(env.Prefix, "s1", "waiting"), token).Err(); err != nil {
			t.Fatalf("the registration did not run (%v): the test's premise", err)
		}
		if err := env.Redis.ZScore(ctx, queue.Key(env.Prefix, "s1", "gone"), token).Err(); err != nil {
			t.Errorf("the token is not noted gone after its registration was undone: %v", err)
		}
	})
}
