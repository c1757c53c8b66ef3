// The listeners' bounds through the whole server: a request's body must arrive within http.read_timeout, a
// keep-alive connection is closed after idle_timeout, a header over max_header_bytes is refused, the
// long-lived answers (the socket, the control room's stream) outlive read_timeout and write_timeout, and
// the metrics are served on the ops listener only.

package app_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// short are the listener bounds of these tests: a second each, so a cut shows within a test's time.
var short = map[string]string{
	"WAITROOM_HTTP_READ_TIMEOUT": "1s", "WAITROOM_HTTP_WRITE_TIMEOUT": "1s", "WAITROOM_HTTP_IDLE_TIMEOUT": "1s",
	"WAITROOM_ADMIN_KEY": apptest.AdminKey,
}

// dialRaw opens a TCP connection to the server at base, closed when the test ends.
func dialRaw(t *testing.T, base string) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedWithin reads conn until the server closes it, and returns how long that took from start; it fails
// the test if the connection is still open after limit.
func closedWithin(t *testing.T, conn net.Conn, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	_ = conn.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, conn)
	took := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open %v after start, want it closed by the server", took)
	}
	return took
}

// A client that sends its body a byte at a time is cut once http.read_timeout has passed since its
// request began, however steadily it trickles.
func TestSlowBodyIsCutAfterTheReadTimeout(t *testing.T) {
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), short)
	conn := dialRaw(t, srv.URL)
	const bodyBytes = 100
	start := time.Now()
	fmt.Fprintf(conn, "POST /api/admin/screenings HTTP/1.1\r\nHost: waitroom\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", apptest.AdminKey, bodyBytes)
	sent := make(chan int, 1)
	stop := make(chan struct{})
	go func() { // the trickle: a byte every 100 ms, until the server cuts it or the test is over
		n := 0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ; n < bodyBytes; n++ {
			select {
			case <-stop:
				sent <- n
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				break
			}
		}
		sent <- n
	}()
	took := closedWithin(t, conn, start, 5*time.Second)
	close(stop)
	if n := <-sent; n >= bodyBytes {
		t.Errorf("the whole body of %d bytes was sent before the cut, want it cut", n)
	}
	if took < 900*time.Millisecond || took > 3*time.Second {
		t.Errorf("slow body cut after %v, want about the read timeout (1s)", took)
	}
}

// A keep-alive connection that sends nothing after its answer is closed after http.idle_timeout.
func TestIdleKeepAliveIsClosedAfterTheIdleTimeout(t *testing.T) {
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), short)
	conn := dialRaw(t, srv.URL)
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: waitroom\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("GET /healthz = %d (close %v), want 200 on a kept-alive connection", res.StatusCode, res.Close)
	}
	answered := time.Now()
	_ = conn.SetReadDeadline(answered.Add(5 * time.Second))
	_, err = br.ReadByte()
	took := time.Since(answered)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("reading the idle connection = %v after %v, want EOF (closed by the server)", err, took)
	}
	if took < 800*time.Millisecond || took > 3*time.Second {
		t.Errorf("idle connection closed after %v, want about the idle timeout (1s)", took)
	}
}

// A request whose header is over http.max_header_bytes is refused with 431, before any handler.
func TestHeaderOverTheLimitIsRefusedWith431(t *testing.T) {
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), map[string]string{"WAITROOM_HTTP_MAX_HEADER_BYTES": "8192"})
	for size, want := range map[int]int{2 << 10: http.StatusOK, 32 << 10: http.StatusRequestHeaderFieldsTooLarge} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
		req.Header.Set("X-Padding", strings.Repeat("a", size))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET /healthz with a header of %d bytes = %d, want %d", size, res.StatusCode, want)
		}
	}
}

// The waiting room's socket and the control room's stream live on past http.read_timeout and
// write_timeout: the socket still reads (a ping is answered) and is written to (the pause is pushed), and
// the stream still sends its frames.
func TestSocketAndAdminStreamOutliveTheTimeouts(t *testing.T) {
	settings := map[string]string{"WAITROOM_ADMISSION_INTERVAL": "1h"}
	for k, v := range short {
		settings[k] = v
	}
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), settings)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/admin/stream", nil)
	req.Header.Set("Authorization", "Bearer "+apptest.AdminKey)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/admin/stream = %v, %v; want 200", stream, err)
	}
	defer stream.Body.Close()
	sock := srv.Dial(t, "demo", "")
	if m := sock.Next(t, 5*time.Second); m.Type != "queued" {
		t.Fatalf("first message = %+v, want queued", m)
	}
	opened := time.Now()
	// Past both timeouts (1 s each), and then some. Nothing can be awaited: the timeouts are net/http's
	// deadlines on the wall clock, and what is checked is that their passing does nothing to the socket
	// or the stream.
	time.Sleep(2500 * time.Millisecond)

	pong := make(chan struct{}, 1)
	sock.SetPongHandler(func(string) error { pong <- struct{}{}; return nil })
	if err := sock.WriteControl(9 /* ping */, []byte("still there"), time.Now().Add(time.Second)); err != nil {
		t.Fatalf("ping %v after the socket opened: %v", time.Since(opened), err)
	}
	if code := srv.Post(t, "/api/admin/screenings/demo/pause", apptest.AdminKey, nil); code != http.StatusOK {
		t.Fatalf("pause = %d, want 200", code)
	}
	if m, err := sock.ReadUntil(func(m testenv.Message) bool { return m.Type == "paused" }, 5*time.Second); err != nil {
		t.Fatalf("socket after %v: %v (last %+v), want the pause pushed", time.Since(opened), err, m)
	}
	select {
	case <-pong:
	default:
		t.Errorf("no pong to a ping sent %v after the socket opened, want one", time.Since(opened))
	}

	// Frames keep coming: one written after both timeouts proves the stream's deadlines moved.
	lines := bufio.NewScanner(stream.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	frames := 0
	for lines.Scan() && time.Since(opened) < 4*time.Second {
		if strings.HasPrefix(lines.Text(), "data: ") {
			frames++
		}
	}
	if frames < 3 || time.Since(opened) < 4*time.Second {
		t.Errorf("stream sent %d frames and ended %v after it opened (%v), want one a second past the timeouts",
			frames, time.Since(opened), lines.Err())
	}
}

// The metrics are served on the ops listener (whose URL Main prints), not on the public one.
func TestMetricsAreOnTheOpsListenerOnly(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	srv := apptest.Start(t, env, nil)
	get := func(url string) int {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if srv.OpsURL == "" || srv.OpsURL == srv.URL {
		t.Fatalf("ops URL = %q (public %q), want a listener of its own", srv.OpsURL, srv.URL)
	}
	if code := get(srv.URL + "/metrics"); code != http.StatusNotFound {
		t.Errorf("public GET /metrics = %d, want 404", code)
	}
	if _, ok := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, "waitroom_hub_sockets"); !ok {
		t.Errorf("ops /metrics lacks waitroom_hub_sockets")
	}
}

// answers reports whether the server that wrote out has printed its URL and answers /healthz there.
func answers(out *testenv.SyncBuffer) bool {
	_, rest, ok := strings.Cut(out.String(), "waitroom: open ")
	if !ok {
		return false
	}
	res, err := http.Get(strings.SplitN(rest, "\n", 2)[0] + "healthz")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// With http.ops_addr set empty in config.yaml (an empty variable means "not set"), there is no ops
// listener: Main prints no ops URL and serves.
func TestNoOpsListenerWhenItsAddressIsEmpty(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("http:\n  addr: 127.0.0.1:0\n  ops_addr: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"WAITROOM_DATABASE_URL": env.DatabaseURL, "WAITROOM_DEMO_ENABLED": "false", "WAITROOM_LOG_LEVEL": "warn"}
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.Main(ctx, []string{"waitroom", "-config", path}, func(k string) string { return vars[k] }, out)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !answers(out) {
		select {
		case err := <-done:
			t.Fatalf("app.Main = %v before serving; output:\n%s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not answer; output:\n%s", out)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("app.Main after shutdown = %v, want nil", err)
	}
	if !strings.Contains(out.String(), "waitroom: open ") || strings.Contains(out.String(), "waitroom: ops ") {
		t.Errorf("output with ops_addr empty:\n%s\nwant the public URL and no ops URL", out)
	}
}
