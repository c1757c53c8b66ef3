// The server's test harness: a server wired as the binary wires it over one env, admitted users, and the
// HTTP calls and error bodies the tests read.

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var secret = []byte("test-secret-0123456789abcdef0123456789")

// testServer is a server over one env, wired as the binary wires it (app.New) and served by httptest, with
// the queue a test admits users from. Its hub runs; its scheduler does not (the tests drive admission).
type testServer struct {
	env    *testenv.Env
	q      *queue.Queue
	passes *pass.Issuer
	store  *booking.Store
	book   *booking.Booking
	hub    *hub.Hub
	app    *app.App
	ts     *httptest.Server
	ops    *httptest.Server // the ops listener's handler (/metrics)
	client *http.Client
	log    *testenv.SyncBuffer
}

// newApp serves screening s1 (2 rows of 5) over env; edit changes the configuration before the server is
// built.
func newApp(t *testing.T, env *testenv.Env, edit func(*config.Config)) *testServer {
	t.Helper()
	return newAppOn(t, env, app.Backends{Redis: env.Redis, DB: env.DB}, edit)
}

// newAppOn is newApp over backends b instead of env's own.
func newAppOn(t *testing.T, env *testenv.Env, b app.Backends, edit func(*config.Config)) *testServer {
	t.Helper()
	env.Demo(t, "s1", 2, 5)
	logs := &testenv.SyncBuffer{}
	b.Log = slog.New(slog.NewTextHandler(logs, nil))
	cfg := config.Default()
	cfg.Redis.Prefix, cfg.Pass.Secret = env.Prefix, string(secret)
	// A short lock wait, no bound on a reservation's statements, and no per-address limits.
	cfg.Booking.LockWait, cfg.Booking.LockLease, cfg.Booking.MaxSeats, cfg.Booking.DBTimeout = 200*time.Millisecond, 10*time.Second, 4, 0
	cfg.Limits = config.Limits{}
	if edit != nil {
		edit(&cfg)
	}
	w, err := app.New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(w.Server.Handler())
	t.Cleanup(ts.Close)
	ops := httptest.NewServer(w.Server.OpsHandler())
	t.Cleanup(ops.Close)
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Hub.Run(runCtx) }()
	// Runs before ts.Close: sockets are hijacked, so the hub must end them; then its background work ends.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Hub.Shutdown(ctx); err != nil {
			t.Errorf("hub.Shutdown = %v, want nil", err)
		}
		stopRun()
		if err := <-ran; err != nil {
			t.Errorf("hub.Run = %v, want nil", err)
		}
	})
	return &testServer{env: env, q: w.Queue, passes: w.Passes, store: w.Store, book: w.Booking, hub: w.Hub, app: w, ts: ts, ops: ops, client: ts.Client(), log: logs}
}

// admit puts n fresh tokens in the screening's line, admits them in one tick and returns their passes.
func (a *testServer) admit(t *testing.T, screening string, n int) []string {
	t.Helper()
	passes := make([]string, n)
	for i, u := range testenv.AdmitNew(t, a.q, a.passes, screening, n) {
		passes[i] = u.Pass
	}
	return passes
}

// response is what a request got back.
type response struct {
	status int
	body   []byte
	header http.Header
}

func (r response) String() string { return string(r.body) }

// do sends a request and reads the whole answer. It is safe from any goroutine.
func (a *testServer) do(method, path, auth, body string) (response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.ts.URL+path, rd)
	if err != nil {
		return response{}, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, body: b, header: res.Header}, err
}

func (a *testServer) get(t *testing.T, path string) response {
	t.Helper()
	r, err := a.do(http.MethodGet, path, "", "")
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return r
}

// metrics reads the ops listener's /metrics, wanting 200.
func (a *testServer) metrics(t *testing.T) string {
	t.Helper()
	res, err := a.client.Get(a.ops.URL + "/metrics")
	if err != nil {
		t.Fatalf("GET ops /metrics: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET ops /metrics = %d, %v; want 200", res.StatusCode, err)
	}
	return string(b)
}

// reserve posts body to s1's reservations with the pass as a bearer token ("" sends no Authorization).
func (a *testServer) reserve(t *testing.T, screening, pass, body string) response {
	t.Helper()
	auth := ""
	if pass != "" {
		auth = "Bearer " + pass
	}
	r, err := a.do(http.MethodPost, "/api/screenings/"+screening+"/reservations", auth, body)
	if err != nil {
		t.Fatalf("POST reservation: %v", err)
	}
	return r
}

// apiError is the documented error body.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats"`
	} `json:"error"`
}

// errorOf decodes an error body strictly: only {"error":{...}}, with a code and a message.
func errorOf(t *testing.T, r response) apiError {
	t.Helper()
	var e apiError
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s: %v, want {\"error\":{\"code\":…,\"message\":…}}", r, err)
	}
	if e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("error body %s has an empty code or message", r)
	}
	return e
}

// wantError checks a response's status and error code.
func wantError(t *testing.T, what string, r response, status int, code string) apiError {
	t.Helper()
	if r.status != status {
		t.Errorf("%s = %d %s, want %d %s", what, r.status, r, status, code)
		return apiError{}
	}
	e := errorOf(t, r)
	if e.Error.Code != code {
		t.Errorf("%s code = %q (%s), want %q", what, e.Error.Code, r, code)
	}
	return e
}

// decode unmarshals a 200 body into v.
func decode(t *testing.T, what string, r response, v any) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s = %d %s, want 200", what, r.status, r)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s body %s: %v", what, r, err)
	}
}
