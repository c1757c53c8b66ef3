// A run of deploy/nginx/nginx.conf itself: nginx started on a loopback port in front of a stand-in
// upstream, so the test reads the access log nginx writes, not just the configuration's text.

package deploy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startNginx runs nginx.conf with its upstream instances replaced by upstream (host:port), listening on a
// free loopback port, its logs and temporary files in a directory of the test's; it returns the port's
// base URL and the access log's path, and stops nginx when the test ends.
func startNginx(t *testing.T, upstream string) (base, accessLog string) {
	t.Helper()
	nginx := nginxBinary(t)
	raw, err := os.ReadFile("nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(raw)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	accessLog = filepath.Join(dir, "access.log")
	temp := "http {\n"
	for _, kind := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		temp += fmt.Sprintf("    %s_temp_path %s;\n", kind, filepath.Join(dir, kind))
	}
	for _, r := range []struct{ old, new string }{
		{"server waitroom-1:8080", "server " + upstream},
		{"server waitroom-2:8080", "server " + upstream},
		{"listen 8080;", "listen " + addr + ";"},
		{"access_log /dev/stdout", "access_log " + accessLog},
		{"error_log /dev/stderr", "error_log " + filepath.Join(dir, "error.log")},
		{"http {\n", temp},
	} {
		if strings.Count(conf, r.old) != 1 {
			t.Fatalf("nginx.conf has %d of %q, want one to adapt for the test", strings.Count(conf, r.old), r.old)
		}
		conf = strings.Replace(conf, r.old, r.new, 1)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", path, "-g", "pid "+filepath.Join(dir, "nginx.pid")+"; daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGTERM is nginx's fast shutdown: the master stops its workers, then itself.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this test started
			<-exited
		}
	})
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr, accessLog
		}
		select {
		case err := <-exited:
			t.Fatalf("nginx exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNginxAccessLogLeavesOutCodesAndSocketQueries sends the routes whose path holds an order's code, an
// access code or a place's token, and a socket URL with its query, through nginx.conf, and reads the
// access log: none of the secrets is there, each request is logged by its route instead, the upstream
// still got the real path, and a request of another route is logged as it came.
func TestNginxAccessLogLeavesOutCodesAndSocketQueries(t *testing.T) {
	var mu sync.Mutex
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.RequestURI)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer upstream.Close()
	base, accessLog := startNginx(t, upstream.Listener.Addr().String())

	requests := []struct{ method, uri, logged string }{
		{"GET", "/t/secretorder1", "GET /t/:code HTTP/1.1"},
		{"GET", "/t/secretorder2/qr.png", "GET /t/:code/qr.png HTTP/1.1"},
		{"GET", "/api/orders/secretorder3", "GET /api/orders/:code HTTP/1.1"},
		{"POST", "/api/orders/secretorder4/pay", "POST /api/orders/:code/pay HTTP/1.1"},
		{"POST", "/api/orders/secretorder5/confirm", "POST /api/orders/:code/confirm HTTP/1.1"},
		{"POST", "/api/orders/secretorder6/cancel?why=secretorder6", "POST /api/orders/:code/cancel HTTP/1.1"},
		{"GET", "/checkout/secretorder7", "GET /checkout/:code HTTP/1.1"},
		{"POST", "/api/admin/orders/secretorder8/cancel", "POST /api/admin/orders/:code/cancel HTTP/1.1"},
		{"DELETE", "/api/admin/screenings/gala/codes/SECRETACCESS1", "DELETE /api/admin/screenings/gala/codes/:code HTTP/1.1"},
		{"GET", "/api/screenings/gala/queue/secrettoken1", "GET /api/screenings/gala/queue/:token HTTP/1.1"},
		{"GET", "/ws/screenings/gala?token=secrettoken2&code=SECRETACCESS2&altcha=secretproof1", "GET /ws/screenings/gala HTTP/1.1"},
		{"GET", "/t/%73ecretorder9", "GET /t/:code HTTP/1.1"}, // nginx decodes the path before it matches
		{"GET", "/T/secretorder10", "GET /t/:code HTTP/1.1"},  // a mistyped route may still hold a real code
		{"GET", "/api/screenings/gala/seats?view=all", "GET /api/screenings/gala/seats?view=all HTTP/1.1"},
	}
	for _, r := range requests {
		req, err := http.NewRequest(r.method, base+r.uri, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s through nginx: %v", r.method, r.uri, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s %s through nginx = %d, want the upstream's 204", r.method, r.uri, resp.StatusCode)
		}
	}
	mu.Lock()
	for _, r := range requests {
		if !slices.Contains(got, r.method+" "+r.uri) {
			t.Errorf("the upstream did not get %s %s as sent (got %q): the log's redaction must not touch the request", r.method, r.uri, got)
		}
	}
	mu.Unlock()

	// nginx writes a request's line once it is answered: wait for all of them.
	var lines []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lines = readLines(t, accessLog)
		if len(lines) >= len(requests) || time.Now().After(deadline) {
			break
		}
	}
	if len(lines) != len(requests) {
		t.Fatalf("the access log has %d lines, want %d:\n%s", len(lines), len(requests), strings.Join(lines, "\n"))
	}
	log := strings.Join(lines, "\n")
	for _, secret := range []string{"secretorder", "SECRETACCESS", "secrettoken", "secretproof", "%73ecret", "ecretorder"} {
		if strings.Contains(strings.ToLower(log), strings.ToLower(secret)) {
			t.Errorf("the access log holds %q:\n%s", secret, log)
		}
	}
	for i, r := range requests {
		if !strings.Contains(lines[i], `"`+r.logged+`"`) {
			t.Errorf("%s %s is logged as %s, want %q", r.method, r.uri, lines[i], r.logged)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestOperationsDocShowsTheNginxConfigsLogRedaction checks that the nginx block docs/operations.md shows
// for the access log is nginx.conf's: each of its lines, but the elision, is one of the file's.
func TestOperationsDocShowsTheNginxConfigsLogRedaction(t *testing.T) {
	docs, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	confLines := map[string]bool{}
	for _, l := range strings.Split(string(conf), "\n") {
		confLines[strings.TrimSpace(l)] = true
	}
	_, block, ok := strings.Cut(string(docs), "```nginx\n")
	if !ok {
		t.Fatal("docs/operations.md shows no nginx block")
	}
	block, _, _ = strings.Cut(block, "```")
	shown := 0
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "# ..." {
			continue
		}
		shown++
		if !confLines[l] {
			t.Errorf("docs/operations.md shows %q, which nginx.conf does not have", l)
		}
	}
	if shown < 10 || !strings.Contains(block, "log_format redacted") {
		t.Errorf("docs/operations.md's nginx block has %d lines and no log_format: want the map and the format", shown)
	}
}
