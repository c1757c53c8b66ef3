// The token in the first message (auth=message): a hello registers and keeps its place across reconnects;
// no hello in time, or a first message that is not one, is refused with nothing registered; a drain wakes
// the sockets still waiting for theirs; and the old form, the token in the URL, still works.

package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// helloSettings admit nobody unless a test ticks: the line only grows.
var helloSettings = queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute, LockTTL: time.Second}

// dialNoHello opens a socket with auth=message and sends nothing.
func (r *rig) dialNoHello(t *testing.T, screening string) *testenv.Socket {
	t.Helper()
	s, _, err := testenv.DialHeader(t, r.url+"/ws/screenings/"+screening+"?auth=message", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return s
}

// nothingRegistered fails the test if the screening's line holds a token, or any token counts a socket.
func nothingRegistered(t *testing.T, env *testenv.Env, screening string) {
	t.Helper()
	ctx := context.Background()
	if n, err := env.Redis.ZCard(ctx, queue.Key(env.Prefix, screening, "waiting")).Result(); err != nil || n != 0 {
		t.Errorf("the line holds %d tokens (%v), want none: a refused socket registered", n, err)
	}
	if n, err := env.Redis.HLen(ctx, queue.Key(env.Prefix, screening, "conns")).Result(); err != nil || n != 0 {
		t.Errorf("%d tokens count open sockets (%v), want none", n, err)
	}
}

// refusedWith reads the error message and close frame a refused socket gets.
func refusedWith(t *testing.T, s *testenv.Socket, code string, closeCode int) {
	t.Helper()
	if m := s.Next(t, readWait); m.Type != "error" || m.Code != code {
		t.Errorf("first message = %+v, want error %s", m, code)
	}
	if got := s.CloseCode(t, readWait); got != closeCode {
		t.Errorf("close code = %d, want %d", got, closeCode)
	}
}

// TestHelloRegistersAndKeepsThePlaceAcrossReconnects: a socket that sends {"type":"hello"} gets a new
// place; one that reconnects with {"type":"hello","token":T} keeps T's place, ahead of those who came later.
func TestHelloRegistersAndKeepsThePlaceAcrossReconnects(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, helloSettings)
		first := r.dial(t, "s1", "")
		m := first.Next(t, readWait)
		if m.Type != "queued" || m.Rank != 1 || !m.Inserted || !queue.ValidToken(m.Token) {
			t.Fatalf("first message after a hello without token = %+v, want queued rank 1, inserted, with a token", m)
		}
		token := m.Token
		second := r.dial(t, "s1", "")
		if m := second.Next(t, readWait); m.Type != "queued" || m.Rank != 2 {
			t.Fatalf("second socket's first message = %+v, want queued rank 2", m)
		}
		first.Close()

		again := r.dial(t, "s1", token)
		m = again.Next(t, readWait)
		if m.Type != "queued" || m.Token != token || m.Rank != 1 || m.Inserted {
			t.Errorf("reconnect with the token in the hello = %+v, want queued, the same token, rank 1, not inserted", m)
		}
	})
}

// TestOldQueryTokenKeepsItsPlace: a client that sends its token in the URL (?token=T, no auth) keeps its
// place as before, and a place got that way is kept by a hello too.
func TestOldQueryTokenKeepsItsPlace(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, helloSettings)
		first := r.dialQuery(t, "s1", "")
		m := first.Next(t, readWait)
		if m.Type != "queued" || m.Rank != 1 {
			t.Fatalf("first message without token or hello = %+v, want queued rank 1", m)
		}
		token := m.Token
		if m := r.dialQuery(t, "s1", "").Next(t, readWait); m.Rank != 2 {
			t.Fatalf("second socket = %+v, want rank 2", m)
		}
		first.Close()
		if m := r.dialQuery(t, "s1", token).Next(t, readWait); m.Type != "queued" || m.Token != token || m.Rank != 1 || m.Inserted {
			t.Errorf("reconnect with ?token= = %+v, want queued, the same token, rank 1, not inserted", m)
		}
		if m := r.dial(t, "s1", token).Next(t, readWait); m.Type != "queued" || m.Rank != 1 || m.Inserted {
			t.Errorf("the same token in a hello = %+v, want queued rank 1, not inserted", m)
		}
	})
}

// TestNoHelloWithinTheWaitIsClosedWithNothingRegistered: a socket that connects with auth=message and
// sends nothing is told BAD_HELLO and closed with 1008 once the wait is over, and leaves nothing in the line.
func TestNoHelloWithinTheWaitIsClosedWithNothingRegistered(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		const wait = 300 * time.Millisecond
		r := newRig(t, env, helloSettings, func(h *hub.Hub) { hub.SetHelloWait(h, wait) })
		start := time.Now()
		s := r.dialNoHello(t, "s1")
		refusedWith(t, s, "BAD_HELLO", websocket.ClosePolicyViolation)
		if took := time.Since(start); took < wait {
			t.Errorf("closed after %v, want no sooner than the hello wait of %v", took, wait)
		}
		nothingRegistered(t, env, "s1")
		if n := hub.HellosWaiting(r.hub); n != 0 {
			t.Errorf("the hub still holds %d sockets waiting for a hello, want none", n)
		}
	})
}

// TestFirstMessageThatIsNoHelloIsRefused: with auth=message, a first message that is anything but a hello
// (a leave, not JSON, a binary frame, a token that is not a string) is refused with BAD_HELLO and 1008; a
// hello with a malformed token with BAD_TOKEN, as in the URL; a frame over 512 bytes with 1009. None of
// them registers anything.
func TestFirstMessageThatIsNoHelloIsRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, helloSettings)
		for _, c := range []struct {
			name      string
			kind      int
			frame     string
			code      string
			closeCode int
		}{
			{"a leave", websocket.TextMessage, `{"type":"leave"}`, "BAD_HELLO", websocket.ClosePolicyViolation},
			{"not JSON", websocket.TextMessage, `hello`, "BAD_HELLO", websocket.ClosePolicyViolation},
			{"a binary hello", websocket.BinaryMessage, `{"type":"hello"}`, "BAD_HELLO", websocket.ClosePolicyViolation},
			{"a token that is a number", websocket.TextMessage, `{"type":"hello","token":5}`, "BAD_HELLO", websocket.ClosePolicyViolation},
			{"a malformed token", websocket.TextMessage, `{"type":"hello","token":"XYZ"}`, "BAD_TOKEN", websocket.ClosePolicyViolation},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := r.dialNoHello(t, "s1")
				if err := s.WriteMessage(c.kind, []byte(c.frame)); err != nil {
					t.Fatal(err)
				}
				refusedWith(t, s, c.code, c.closeCode)
				nothingRegistered(t, env, "s1")
			})
		}
		t.Run("a frame over the limit", func(t *testing.T) {
			s := r.dialNoHello(t, "s1")
			big := `{"type":"hello","token":"` + strings.Repeat("a", 5000) + `"}` // over 4 KiB, room for a proof of work
			if err := s.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
				t.Fatal(err)
			}
			if got := s.CloseCode(t, readWait); got != websocket.CloseMessageTooBig {
				t.Errorf("close code = %d, want %d", got, websocket.CloseMessageTooBig)
			}
			nothingRegistered(t, env, "s1")
		})
	})
}

// TestShutdownWakesSocketsWaitingForTheirHello: a drain does not wait out the hello wait of a socket that
// has not spoken: it is closed with 1012 at once, registered nowhere, and Shutdown returns.
func TestShutdownWakesSocketsWaitingForTheirHello(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, helloSettings)
		s := r.dialNoHello(t, "s1")
		deadline := time.Now().Add(readWait)
		for hub.HellosWaiting(r.hub) != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the socket never waited for its hello")
			}
			time.Sleep(5 * time.Millisecond)
		}
		start := time.Now()
		shutdown(t, r.hub)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Shutdown took %v with a socket waiting for its hello, want it woken at once (the wait is 10 s)", took)
		}
		if got := s.CloseCode(t, readWait); got != hub.CloseServiceRestart {
			t.Errorf("close code = %d, want %d (reconnect)", got, hub.CloseServiceRestart)
		}
		nothingRegistered(t, env, "s1")
	})
}

// TestHelloWhileDrainingIsNotRegistered: a socket that arrives while the hub drains is told to reconnect
// (1012) before its hello is read, and its token is not put in line.
func TestHelloWhileDrainingIsNotRegistered(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, helloSettings)
		shutdown(t, r.hub)
		s := r.dial(t, "s1", queue.NewToken())
		if got := s.CloseCode(t, readWait); got != hub.CloseServiceRestart {
			t.Errorf("close code = %d, want %d", got, hub.CloseServiceRestart)
		}
		nothingRegistered(t, env, "s1")
	})
}
