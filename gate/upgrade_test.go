// Tests of the upgrades the gate forwards: a WebSocket on a GET without a body, and nothing else, to an
// origin that would switch to anything it is asked; and the read deadline kept on every other request.

package gate_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/testenv"
)

// permissive is an origin that switches to whatever protocol a request asks for, then reads plain HTTP/1.1
// requests over the switched connection and answers each: what a tunnel past the gate would reach. It
// records the path and Upgrade header of every request, tunnelled ones marked.
type permissive struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newPermissive(t *testing.T) *permissive {
	t.Helper()
	p := &permissive{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.record(r.Method + " " + r.URL.Path + " upgrade=" + r.Header.Get("Upgrade"))
		up := r.Header.Get("Upgrade")
		if up == "" {
			_, _ = io.WriteString(w, "plain "+r.URL.Path)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + up + "\r\n\r\n")
		_ = rw.Flush()
		for {
			req, err := http.ReadRequest(rw.Reader)
			if err != nil {
				return
			}
			p.record("tunnelled " + req.Method + " " + req.URL.Path)
			_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ntunnelled")
			_ = rw.Flush()
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *permissive) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, s)
}

func (p *permissive) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func TestTheGateForwardsNoUpgradeButAWebSocketOnAGetWithoutABody(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		p := newPermissive(t)
		f := newFixture(t, env, 1, booking.GateQueueAll, func(s *gate.Settings) { s.Upstream, _ = url.Parse(p.URL) })
		for _, c := range []struct{ what, request string }{
			{"an h2c upgrade", "GET /about HTTP/1.1\r\nHost: shop.example\r\nConnection: Upgrade, HTTP2-Settings\r\n" +
				"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"},
			{"a WebSocket upgrade on a POST with a body", "POST /about HTTP/1.1\r\nHost: shop.example\r\nConnection: Upgrade\r\n" +
				"Upgrade: websocket\r\nContent-Length: 4\r\n\r\nbody"},
			{"a WebSocket upgrade on a GET with a body", "GET /about HTTP/1.1\r\nHost: shop.example\r\nConnection: Upgrade\r\n" +
				"Upgrade: websocket\r\nContent-Length: 4\r\n\r\nbody"},
			{"an upgrade to a WebSocket or h2c", "GET /about HTTP/1.1\r\nHost: shop.example\r\nConnection: Upgrade\r\n" +
				"Upgrade: websocket, h2c\r\n\r\n"},
			{"an upgrade named twice", "GET /about HTTP/1.1\r\nHost: shop.example\r\nConnection: Upgrade\r\n" +
				"Upgrade: websocket\r\nUpgrade: h2c\r\n\r\n"},
			{"an upgrade to something else", "GET /about HTTP/1.1\r\nHost: shop.example\r\nConnection: keep-alive, Upgrade\r\n" +
				"Upgrade: tunnel/1\r\n\r\n"},
		} {
			before := len(p.requests())
			resp, tunnelled := throughTunnel(t, f, c.request)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s = %d, want 200, the origin's plain answer", c.what, resp.StatusCode)
			}
			if tunnelled {
				t.Errorf("%s: a request for /checkout/secret went through the switched connection to the origin", c.what)
			}
			if seen := p.requests()[before:]; len(seen) == 0 || !strings.HasSuffix(seen[0], " /about upgrade=") {
				t.Errorf("%s: the origin saw %q, want the plain request for /about with no Upgrade header", c.what, seen)
			}
		}
		// A WebSocket's upgrade, in any case, still goes through to the origin (here, which switches).
		if resp, _ := throughTunnel(t, f, "GET /about HTTP/1.1\r\nHost: shop.example\r\nConnection: upgrade\r\n"+
			"Upgrade: WebSocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"); resp.StatusCode != http.StatusSwitchingProtocols {
			t.Errorf("a WebSocket upgrade = %d, want 101 from the origin", resp.StatusCode)
		}
	})
}

// throughTunnel sends request on a connection of its own and reads the answer; if it is 101 it then asks
// for a protected page over the switched connection, and reports whether the origin answered it.
func throughTunnel(t *testing.T, f *fixture, request string) (*http.Response, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", f.gate.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: %v", strings.SplitN(request, "\r\n", 2)[0], err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return resp, false
	}
	if _, err := io.WriteString(conn, "GET /checkout/secret HTTP/1.1\r\nHost: shop.example\r\n\r\n"); err != nil {
		return resp, false
	}
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		return resp, false
	}
	inner.Body.Close()
	return resp, inner.StatusCode == http.StatusOK
}

// A request that asks for an upgrade the gate does not forward keeps http.read_timeout: here the gate's
// clock stands an hour back, so its deadline has passed as the body is read, and the gate must stop
// waiting for a body that never comes.
func TestAnUpgradeThatIsNotAWebSocketKeepsTheReadDeadline(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateQueueAll)
		f.g.SetClock(func() time.Time { return time.Now().Add(-time.Hour) })
		conn, err := net.Dial("tcp", f.gate.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		const bound = 10 * time.Second // far past the gate's deadline, which has passed already
		_ = conn.SetDeadline(time.Now().Add(bound))
		_, err = io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: shop.example\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n"+
			"Content-Length: 100\r\n\r\nonly part of the body")
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("the gate still waited for the body after %v, want the connection cut at its read deadline", bound)
		}
	})
}
