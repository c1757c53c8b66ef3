// The socket route with the token in the first message (auth=message): a hello registers, a token in the
// URL beside auth=message or an unknown auth is refused, a refused hello gives its address's socket back,
// and an unknown screening is refused without waiting for a hello.

package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// helloSocket opens a socket to s1 with auth=message and sends hello (nil: nothing).
func (a *testServer) helloSocket(t *testing.T, hello []byte) *testenv.Socket {
	t.Helper()
	conn, res, err := a.dial(t, "/ws/screenings/s1?auth=message", "")
	if err != nil {
		t.Fatalf("socket = %v (%v), want it open", status(res), err)
	}
	if hello != nil {
		if err := conn.WriteMessage(websocket.TextMessage, hello); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// lineIsEmpty fails the test if s1's line holds a token.
func (a *testServer) lineIsEmpty(t *testing.T) {
	t.Helper()
	if n, err := a.env.Redis.ZCard(context.Background(), queue.Key(a.env.Prefix, "s1", "waiting")).Result(); err != nil || n != 0 {
		t.Errorf("the line holds %d tokens (%v), want none: a refused socket registered", n, err)
	}
}

// TestSocketHelloRegistersAndKeepsThePlace: through the server's route, a hello without a token gets a new
// place and a hello with it keeps that place.
func TestSocketHelloRegistersAndKeepsThePlace(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		first := a.helloSocket(t, []byte(`{"type":"hello"}`))
		m := first.Next(t, readWait)
		if m.Type != "queued" || m.Rank != 1 {
			t.Fatalf("first message after a hello = %+v, want queued rank 1", m)
		}
		a.queuedSocket(t) // a second place, behind it, in the old form
		first.Close()
		again := a.helloSocket(t, []byte(`{"type":"hello","token":"`+m.Token+`"}`))
		if got := again.Next(t, readWait); got.Type != "queued" || got.Token != m.Token || got.Rank != 1 || got.Inserted {
			t.Errorf("reconnect with the token in the hello = %+v, want queued, the same token, rank 1, not inserted", got)
		}
	})
}

// TestSocketAuthRefusals: auth=message with a token in the URL as well (the secret would be logged all the
// same), or an auth that is not "message", is refused with BAD_HELLO and 1008 before anything registers.
func TestSocketAuthRefusals(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		for _, path := range []string{
			"/ws/screenings/s1?auth=message&token=" + queue.NewToken(),
			"/ws/screenings/s1?auth=header",
			"/ws/screenings/s1?auth=MESSAGE",
		} {
			conn, res, err := a.dial(t, path, "")
			if err != nil {
				t.Fatalf("%s: socket = %v (%v), want it open, then refused", path, status(res), err)
			}
			if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "BAD_HELLO" {
				t.Errorf("%s: message = %+v, want error BAD_HELLO", path, m)
			}
			if code := conn.CloseCode(t, readWait); code != websocket.ClosePolicyViolation {
				t.Errorf("%s: closed with %d, want %d", path, code, websocket.ClosePolicyViolation)
			}
		}
		a.lineIsEmpty(t)
	})
}

// TestRefusedHelloGivesTheAddressItsSocketBack: with one socket allowed per address, a socket whose first
// message is not a hello is refused and its count released, so the address's next socket is served.
func TestRefusedHelloGivesTheAddressItsSocketBack(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) { c.Limits = config.Limits{SocketsPerAddress: 1} })
		bad := a.helloSocket(t, []byte(`{"type":"leave"}`))
		if m := bad.Next(t, readWait); m.Type != "error" || m.Code != "BAD_HELLO" {
			t.Fatalf("message after a first message that is no hello = %+v, want error BAD_HELLO", m)
		}
		if code := bad.CloseCode(t, readWait); code != websocket.ClosePolicyViolation {
			t.Errorf("closed with %d, want %d", code, websocket.ClosePolicyViolation)
		}
		a.lineIsEmpty(t)
		deadline := time.Now().Add(5 * time.Second)
		for {
			s := a.helloSocket(t, []byte(`{"type":"hello"}`))
			m := s.Next(t, readWait)
			s.Close()
			if m.Type == "queued" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the address's next socket still gets %+v 5 s after the refused one closed, want queued", m)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestSocketUnknownScreeningIsRefusedBeforeTheHello: a socket to a screening that does not exist is told
// so at once, not after waiting for a hello it will never need.
func TestSocketUnknownScreeningIsRefusedBeforeTheHello(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		conn, res, err := a.dial(t, "/ws/screenings/nope?auth=message", "")
		if err != nil {
			t.Fatalf("socket = %v (%v), want it open, then refused", status(res), err)
		}
		start := time.Now()
		if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "UNKNOWN_SCREENING" {
			t.Errorf("message = %+v, want error UNKNOWN_SCREENING", m)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("refused after %v, want at once (no wait for a hello)", took)
		}
	})
}
