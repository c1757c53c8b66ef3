// The proxy's own tests: it forwards, cuts until restored, resets only what is open, and delays.

package testenv_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer answers every line with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// line is one echo connection through the proxy.
type line struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialLine(t *testing.T, addr string) *line {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &line{conn: c, r: bufio.NewReader(c)}
}

// roundTrip sends s and reads a line back: the echo, or the error that broke the connection.
func (l *line) roundTrip(s string) (string, error) {
	_ = l.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(l.conn, s+"\n"); err != nil {
		return "", err
	}
	got, err := l.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

// broken reports whether err ended the connection (a reset or an end), not a timeout of the test's deadline.
func broken(err error) bool {
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

func TestProxyForwards(t *testing.T) {
	p := testenv.NewProxy(t, echoServer(t))
	for i := range 3 {
		l := dialLine(t, p.Addr())
		for _, s := range []string{"hello", "again"} {
			if got, err := l.roundTrip(s); err != nil || got != s {
				t.Fatalf("connection %d: round trip %q = %q, %v; want %q", i, s, got, err, s)
			}
		}
	}
	if n := p.Conns(); n != 3 {
		t.Errorf("Conns() = %d, want 3", n)
	}
}

func TestProxyCutBreaksAndRefusesUntilRestore(t *testing.T) {
	p := testenv.NewProxy(t, echoServer(t))
	before := dialLine(t, p.Addr())
	if _, err := before.roundTrip("up"); err != nil {
		t.Fatal(err)
	}

	p.Cut()
	if got, err := before.roundTrip("during"); !broken(err) {
		t.Errorf("a connection from before the cut: round trip = %q, %v; want it broken", got, err)
	}
	for i := range 3 { // every new connection is reset (at the connect, or right after it), not forwarded
		c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
		if err != nil {
			continue
		}
		during := &line{conn: c, r: bufio.NewReader(c)}
		got, err := during.roundTrip("during")
		c.Close()
		if !broken(err) {
			t.Errorf("new connection %d during the cut: round trip = %q, %v; want it broken", i, got, err)
		}
	}

	p.Restore()
	after := dialLine(t, p.Addr())
	if got, err := after.roundTrip("back"); err != nil || got != "back" {
		t.Errorf("after Restore: round trip = %q, %v; want %q", got, err, "back")
	}
}

func TestProxyResetBreaksCurrentOnly(t *testing.T) {
	p := testenv.NewProxy(t, echoServer(t))
	a, b := dialLine(t, p.Addr()), dialLine(t, p.Addr())
	for _, l := range []*line{a, b} {
		if _, err := l.roundTrip("up"); err != nil {
			t.Fatal(err)
		}
	}

	p.Reset()
	for i, l := range []*line{a, b} {
		if got, err := l.roundTrip("after"); !broken(err) {
			t.Errorf("connection %d from before the reset: round trip = %q, %v; want it broken", i, got, err)
		}
	}
	c := dialLine(t, p.Addr())
	if got, err := c.roundTrip("new"); err != nil || got != "new" {
		t.Errorf("a new connection after the reset: round trip = %q, %v; want %q", got, err, "new")
	}
}

// Delay holds each chunk at least d: a lower bound, which no slow machine can break.
func TestProxyDelayHoldsEveryChunk(t *testing.T) {
	p := testenv.NewProxy(t, echoServer(t))
	l := dialLine(t, p.Addr())
	const d = 100 * time.Millisecond
	p.Delay(d)
	start := time.Now()
	if got, err := l.roundTrip("slow"); err != nil || got != "slow" {
		t.Fatalf("round trip = %q, %v", got, err)
	}
	if took := time.Since(start); took < 2*d {
		t.Errorf("round trip with a delay of %v each way took %v, want at least %v", d, took, 2*d)
	}
	p.Delay(0)
}
