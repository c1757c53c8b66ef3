// Socket: a test's end of a waiting-room WebSocket: dial (the token in the hello, or in the URL as old
// clients send it), read the next message, read until a type, read the close code.

package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// handshakeTimeout bounds a dial: a handshake on loopback takes milliseconds, so this is a hung server.
const handshakeTimeout = 10 * time.Second

// Socket is a test's WebSocket to the server. Its reads that take a testing.TB fail the test and belong on
// the test's goroutine; Read and ReadUntil return errors instead and may run on any goroutine. A test
// writes (a leave, a bad frame), closes, or reads raw frames through the embedded connection.
type Socket struct {
	*websocket.Conn
	// Token is the token it dialled with ("" for none); a test that learns the socket's token may note it.
	Token string
}

// Dial opens a socket to url (http:// or ws://, with the path) as the server's own clients do: with
// auth=message, then the hello carrying token ("" for a new place), failing the test if it does not open
// or the hello cannot be sent. It is closed when the test ends.
func Dial(t testing.TB, url, token string) *Socket {
	t.Helper()
	s, _, err := DialHeader(t, withQuery(url, "auth=message"), nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	if err := s.Hello(token); err != nil {
		t.Fatalf("hello on %s: %v", url, err)
	}
	s.Token = token
	return s
}

// DialHello is Dial with more in the hello than the token: the fields (a code, an altcha payload), each
// sent only when not "".
func DialHello(t testing.TB, url, token string, fields map[string]string) *Socket {
	t.Helper()
	s, _, err := DialHeader(t, withQuery(url, "auth=message"), nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	hello := map[string]string{"type": "hello"}
	if token != "" {
		hello["token"] = token
	}
	for k, v := range fields {
		if v != "" {
			hello[k] = v
		}
	}
	msg, err := json.Marshal(hello)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	if err := s.WriteMessage(websocket.TextMessage, msg); err != nil {
		t.Fatalf("hello on %s: %v", url, err)
	}
	s.Token = token
	return s
}

// DialQuery opens a socket to url as clients before the hello did: token as its ?token= when not "", no
// hello. It is for the tests of that form; it fails the test if the socket does not open.
func DialQuery(t testing.TB, url, token string) *Socket {
	t.Helper()
	if token != "" {
		url = withQuery(url, "token="+token)
	}
	s, _, err := DialHeader(t, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	s.Token = token
	return s
}

// Hello sends the hello of a socket dialled with auth=message: {"type":"hello","token":token}, or
// {"type":"hello"} when token is "".
func (s *Socket) Hello(token string) error {
	msg := []byte(`{"type":"hello"}`)
	if token != "" {
		var err error
		if msg, err = json.Marshal(map[string]string{"type": "hello", "token": token}); err != nil {
			return fmt.Errorf("testenv: hello: %w", err)
		}
	}
	_ = s.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	if err := s.WriteMessage(websocket.TextMessage, msg); err != nil {
		return fmt.Errorf("testenv: hello: %w", err)
	}
	return nil
}

// withQuery adds the query parameter kv ("k=v") to url.
func withQuery(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}

// DialHeader opens a socket to url with the request header h (nil: none), for a test of the handshake
// itself: the response and error are returned as they came, with a nil Socket when it did not open. An
// open socket is closed when the test ends.
func DialHeader(t testing.TB, url string, h http.Header) (*Socket, *http.Response, error) {
	t.Helper()
	if rest, ok := strings.CutPrefix(url, "http"); ok {
		url = "ws" + rest
	}
	d := websocket.Dialer{HandshakeTimeout: handshakeTimeout}
	conn, res, err := d.Dial(url, h)
	if res != nil && res.Body != nil {
		res.Body.Close()
	}
	if err != nil {
		return nil, res, err
	}
	t.Cleanup(func() { conn.Close() })
	return &Socket{Conn: conn}, res, nil
}

// Read reads the next message within timeout.
func (s *Socket) Read(timeout time.Duration) (Message, error) {
	_ = s.SetReadDeadline(time.Now().Add(timeout))
	_, data, err := s.ReadMessage()
	if err != nil {
		return Message{}, err
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return Message{}, fmt.Errorf("testenv: socket message %s: %w", data, err)
	}
	return m, nil
}

// ReadUntil reads until a message that done accepts, all within timeout, and returns it; or the error of
// the read that failed, with the last message read.
func (s *Socket) ReadUntil(done func(Message) bool, timeout time.Duration) (Message, error) {
	deadline := time.Now().Add(timeout)
	for {
		m, err := s.Read(time.Until(deadline))
		if err != nil || done(m) {
			return m, err
		}
	}
}

// Next reads the next message, failing the test after timeout.
func (s *Socket) Next(t testing.TB, timeout time.Duration) Message {
	t.Helper()
	m, err := s.Read(timeout)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}

// Until reads messages until one of type typ arrives, all within timeout, failing the test otherwise; the
// others are returned in order before it.
func (s *Socket) Until(t testing.TB, typ string, timeout time.Duration) (Message, []Message) {
	t.Helper()
	var before []Message
	deadline := time.Now().Add(timeout)
	for {
		m := s.Next(t, time.Until(deadline))
		if m.Type == typ {
			return m, before
		}
		before = append(before, m)
	}
}

// CloseCode reads until the server's close frame, within timeout, and returns its code; the messages
// before it are logged. Any other end of the socket fails the test.
func (s *Socket) CloseCode(t testing.TB, timeout time.Duration) int {
	t.Helper()
	_ = s.SetReadDeadline(time.Now().Add(timeout))
	for {
		_, data, err := s.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		if err != nil {
			t.Fatalf("reading the socket until close: %v, want a close frame", err)
		}
		t.Logf("message before close: %s", data)
	}
}
