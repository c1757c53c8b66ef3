// The faults suite's harness: a socket recorded from a goroutine of its own while faults come and go, and
// the server's log lines a failure message quotes.

package faults

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// message is a server message and when the test received it.
type message struct {
	testenv.Message
	At time.Time
}

// socket records every message of one socket from a goroutine of its own, so a test can look at what
// came, and whether the socket was closed, while faults come and go.
type socket struct {
	name string
	srv  *apptest.Server
	conn *websocket.Conn
	done chan struct{} // closed when the socket ends; err says how

	mu   sync.Mutex
	msgs []message
	err  error
}

// watch opens a socket to screening (with token, or none) and records it until the test ends.
func watch(t *testing.T, srv *apptest.Server, name, screening, token string) *socket {
	t.Helper()
	conn := srv.Dial(t, screening, token).Conn
	s := &socket{name: name, srv: srv, conn: conn, done: make(chan struct{})}
	go s.read()
	t.Cleanup(func() {
		conn.Close()
		<-s.done
	})
	return s
}

func (s *socket) read() {
	defer close(s.done)
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		m := message{At: time.Now()}
		if err := json.Unmarshal(data, &m.Message); err != nil {
			m.Type = "undecodable: " + string(data)
		}
		s.mu.Lock()
		s.msgs = append(s.msgs, m)
		s.mu.Unlock()
	}
}

// messages is what came so far.
func (s *socket) messages() []message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// ended is how the socket ended: nil while it is open.
func (s *socket) ended() error {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	default:
		return nil
	}
}

// ofType returns the messages of type typ (every one when typ is "").
func ofType(msgs []message, typ string) []message {
	var out []message
	for _, m := range msgs {
		if typ == "" || m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

// await waits until a message of type typ came after since (the zero time: any) and returns the first such,
// failing the test after timeout or when the socket ends first.
func (s *socket) await(t *testing.T, typ string, since time.Time, timeout time.Duration) message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, m := range s.messages() {
			if m.Type == typ && !m.At.Before(since) {
				return m
			}
		}
		select {
		case <-s.done:
			t.Fatalf("%s: socket ended (%v) before a %q message; got %s\nserver log:\n%s", s.name, s.ended(), typ, s, s.srv.Out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q message within %v; got %s\nserver log:\n%s", s.name, typ, timeout, s, s.srv.Out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// String lists the messages so far, for failure messages.
func (s *socket) String() string {
	var b strings.Builder
	for _, m := range s.messages() {
		fmt.Fprintf(&b, "%s", m.Type)
		switch m.Type {
		case "queued", "position":
			fmt.Fprintf(&b, "(%d/%d)", m.Rank, m.Total)
		case "error":
			fmt.Fprintf(&b, "(%s)", m.Code)
		}
		fmt.Fprintf(&b, "@%s ", m.At.Format("15:04:05.000"))
	}
	return "[" + strings.TrimSpace(b.String()) + "]"
}

// serverLog is the server's log lines that mention what (the error behind a status, for a failure message).
func serverLog(srv *apptest.Server, what string) string {
	var b strings.Builder
	for line := range strings.Lines(srv.Out.String()) {
		if strings.Contains(line, what) {
			b.WriteString(line)
		}
	}
	return b.String()
}
