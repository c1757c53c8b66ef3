// Package apptest runs the whole server for end-to-end tests, as net/http/httptest runs a handler: in the
// test's process (Start: app.Main on 127.0.0.1:0) or as processes of the built binary (Build,
// StartProcess). Either is waited on until /healthz answers, and stopped when the test ends, the in-process
// one checked to have drained cleanly. It also holds the HTTP calls those tests make (http.go).
//
// It lives beside internal/app, not in testenv: the internal tests of hub and booking import testenv, so
// testenv must not import app, which imports them.
//
// Files: apptest.go (Start: the server in the test's process), process.go (Build, StartProcess: the binary
// as processes of its own), http.go (the tests' HTTP calls).
package apptest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/testenv"
)

// Secret signs the passes of every server these tests start on real backends, so one instance accepts
// another's passes and a test can verify them.
const Secret = "test-secret-0123456789abcdef0123456789"

// The bounds of a server's life in a test: its start until /healthz answers, and its drain.
const (
	startWithin = 30 * time.Second
	drainWithin = 20 * time.Second
)

// Server is a running server: its base URL (no trailing slash), its ops listener's (/metrics; "" when
// WAITROOM_HTTP_OPS_ADDR is set empty), and everything it wrote to its stdout (the URL lines and its JSON
// logs).
type Server struct {
	URL    string
	OpsURL string
	Out    *testenv.SyncBuffer
}

// Start calls app.Main on 127.0.0.1:0, its ops listener on another port of 127.0.0.1:0, with env's backends
// and the settings given (WAITROOM_* variables; nil: none), waits for /healthz, and stops it when the test ends, failing the test if it does not drain
// cleanly. The demo screening is on unless settings turn it off.
func Start(t testing.TB, env *testenv.Env, settings map[string]string) *Server {
	t.Helper()
	vars := map[string]string{
		"WAITROOM_HTTP_ADDR":     "127.0.0.1:0",
		"WAITROOM_HTTP_OPS_ADDR": "127.0.0.1:0",
		"WAITROOM_DATABASE_URL":  env.DatabaseURL,
		"WAITROOM_REDIS_PREFIX":  env.Prefix,
		"WAITROOM_LOG_LEVEL":     "warn",
	}
	if env.Kind == testenv.Real {
		vars["WAITROOM_REDIS_ADDR"] = env.RedisAddr
		vars["WAITROOM_PASS_SECRET"] = Secret
	}
	for k, v := range settings {
		vars[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.Main(ctx, []string{"waitroom", "-config", ""}, func(k string) string { return vars[k] }, out)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("app.Main after shutdown = %v, want nil", err)
			}
		case <-time.After(drainWithin):
			t.Errorf("app.Main did not return within %v of shutdown; output:\n%s", drainWithin, out.String())
		}
	})
	deadline := time.Now().Add(startWithin)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("app.Main = %v before serving; output:\n%s", err, out.String())
		default:
		}
		if url, ok := healthy(http.DefaultClient, out); ok {
			return &Server{URL: url, OpsURL: printedURL(out, "waitroom: ops "), Out: out}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server did not become healthy; output:\n%s", out.String())
	return nil
}

// healthy reads the URL a server printed ("waitroom: open URL") from its output and reports whether its
// /healthz answers 200.
func healthy(client *http.Client, out *testenv.SyncBuffer) (string, bool) {
	url := printedURL(out, "waitroom: open ")
	if url == "" {
		return "", false
	}
	resp, err := client.Get(url + "/healthz")
	if err != nil {
		return "", false
	}
	resp.Body.Close()
	return url, resp.StatusCode == http.StatusOK
}

// printedURL is the URL a server printed after prefix on a line of its output, without its trailing slash,
// or "" when it has printed none (yet). Main prints both its URLs before it serves, so once /healthz
// answers, an ops URL not printed is one not served.
func printedURL(out *testenv.SyncBuffer, prefix string) string {
	_, rest, ok := strings.Cut(out.String(), prefix)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(strings.SplitN(rest, "\n", 2)[0], "/")
}

// Dial opens a socket to the screening's waiting room, with token when not "" (testenv.Dial).
func (s *Server) Dial(t testing.TB, screening, token string) *testenv.Socket {
	t.Helper()
	return testenv.Dial(t, s.URL+"/ws/screenings/"+screening, token)
}
