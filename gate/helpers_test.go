// Helpers the gate's tests share: a real origin that records what reaches it, a gate over the real queue,
// passes and store of a testenv backend, and a client that carries the gate's cookie by hand (a cookie jar
// would not send a Secure cookie over the tests' plain HTTP).

package gate_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// room is the screening the tests' /checkout waits in; other is another room, at /tickets.
const (
	room  = "shop"
	other = "other"
)

var secret = []byte("the gate tests' pass secret, 32+")

// seen is one request as the origin saw it.
type seen struct {
	Method, URI string
	Header      http.Header
}

// cacheable are the caching headers of every answer of the tests' origin.
var cacheable = map[string]string{
	"Cache-Control": "public, max-age=3600", "Vary": "Accept-Encoding", "CDN-Cache-Control": "max-age=3600",
	"Surrogate-Control": "max-age=3600", "X-Accel-Expires": "3600",
}

// origin is a small site of the test's own: it records every request, answers "origin <path>", releases
// the admission on /checkout/done, echoes a WebSocket on /checkout/ws, reads the whole body of /upload
// before it answers, and asks caches to keep every answer (cacheable).
type origin struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newOrigin(t *testing.T) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, seen{Method: r.Method, URI: r.RequestURI, Header: r.Header.Clone()})
		o.mu.Unlock()
		switch r.URL.Path {
		case "/upload":
			_, _ = io.Copy(io.Discard, r.Body)
		case "/checkout/done":
			w.Header().Set(gate.ReleaseHeader, "1")
		case "/checkout/ws", "/ws":
			c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				mt, msg, err := c.ReadMessage()
				if err != nil || c.WriteMessage(mt, msg) != nil {
					return
				}
			}
		}
		// Every answer asks every cache to keep it an hour: the gate's to overrule on protected paths.
		for name, v := range cacheable {
			w.Header().Set(name, v)
		}
		w.Header().Set("X-Waitroom-Internal", "origin's own")
		w.Header()["x_waitroom_internal"] = []string{"origin's own, with underscores"}
		http.SetCookie(w, &http.Cookie{Name: gate.CookiePrefix + room, Value: "set by the origin"})
		_, _ = io.WriteString(w, "origin "+r.URL.Path)
	}))
	t.Cleanup(o.Close)
	return o
}

// requests returns what the origin has seen so far.
func (o *origin) requests() []seen {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]seen(nil), o.reqs...)
}

// fixture is a gate in front of an origin, over a backend's queue, passes and store.
type fixture struct {
	env    *testenv.Env
	q      *queue.Queue
	passes *pass.Issuer
	store  *booking.Store
	origin *origin
	g      *gate.Gate
	gate   *httptest.Server
	reg    *prometheus.Registry
	// offset is what movableClock's advance added to time.Now, for the gate and its entry rules alike.
	offset atomic.Int64
}

// now is f's clock: time.Now plus what advance has added.
func (f *fixture) now() time.Time { return time.Now().Add(time.Duration(f.offset.Load())) }

// newFixture makes the site-wide rooms shop (maxActive slots) and other, and a gate with /checkout=shop and
// /tickets=other in mode, without a server-wide proof of work.
func newFixture(t *testing.T, env *testenv.Env, maxActive int, mode string, opts ...func(*gate.Settings)) *fixture {
	t.Helper()
	return newFixtureCost(t, env, maxActive, mode, 0, opts...)
}

// newFixtureCost is newFixture with powCost as the server's pow.cost. The gate reads the entry rules from
// a cache as the instance's sockets would (entry.Policy's), on f's clock.
func newFixtureCost(t *testing.T, env *testenv.Env, maxActive int, mode string, powCost int, opts ...func(*gate.Settings)) *fixture {
	t.Helper()
	f := &fixture{env: env, q: queue.New(env.Redis, env.Prefix), passes: pass.NewSecretIssuer(secret), store: booking.NewStore(env.DB),
		origin: newOrigin(t), reg: prometheus.NewRegistry()}
	now := time.Now().UTC().Truncate(time.Second)
	for _, id := range []string{room, other} {
		sc := booking.Screening{ID: id, Name: "Room " + id, StartsAt: now.Add(time.Hour), SaleOpensAt: now.Add(-time.Minute)}
		if err := f.store.CreateScreening(context.Background(), sc, nil, queue.Settings{MaxActive: maxActive}); err != nil {
			t.Fatal(err)
		}
	}
	up, _ := url.Parse(f.origin.URL)
	settings := gate.Settings{
		Upstream: up, Paths: []gate.Path{{Prefix: "/checkout", Room: room}, {Prefix: "/tickets", Room: other}},
		RoomURL: "https://room.example", Mode: mode, ReadTimeout: 5 * time.Second,
		Defaults: queue.Settings{Interval: time.Second, BatchSize: 10, MaxActive: 100, ActiveTTL: time.Minute, LockTTL: time.Second},
		Entry:    entry.NewRulesCache(f.store, powCost, f.now),
	}
	for _, o := range opts {
		o(&settings)
	}
	g, err := gate.New(settings, f.q, f.passes, f.store, f.reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.SetClock(f.now)
	f.g, f.gate = g, httptest.NewServer(g)
	t.Cleanup(f.gate.Close)
	return f
}

// movableClock returns advance, which moves f's clock (the gate's and its entry rules'): a test moves past
// the gate's room TTL (gate.RoomTTL) instead of sleeping through it.
func (f *fixture) movableClock() (advance func(time.Duration)) {
	return func(d time.Duration) { f.offset.Add(int64(d)) }
}

// client never follows redirects: the tests read them.
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// get requests path at the gate with the given cookie header ("": none) and extra headers (name, value...).
func (f *fixture) get(t *testing.T, path, cookie string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.gate.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// gateCookie returns the value of the gate's cookie for r in resp ("" when none), and the cookie.
func gateCookie(resp *http.Response, r string) (string, *http.Cookie) {
	for _, c := range resp.Cookies() {
		if c.Name == gate.CookiePrefix+r {
			return c.Name + "=" + c.Value, c
		}
	}
	return "", nil
}

// admitDirect lets a visitor straight into shop through the gate and returns its cookie header.
func (f *fixture) admitDirect(t *testing.T) string {
	t.Helper()
	resp, body := f.get(t, "/checkout/cart", "")
	cookie, _ := gateCookie(resp, room)
	if resp.StatusCode != http.StatusOK || body != "origin /checkout/cart" || cookie == "" {
		t.Fatalf("GET /checkout/cart with room = %d %q, cookie %q, want 200 from the origin with the gate's cookie", resp.StatusCode, body, cookie)
	}
	return cookie
}

// wantLine checks resp sends the visitor to shop's waiting page, on the way back to to.
func wantLine(t *testing.T, what string, resp *http.Response, to string) {
	t.Helper()
	want := "https://room.example/s/" + room + "?to=" + url.QueryEscape(to)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
		t.Errorf("%s = %d to %q, want 303 to %q", what, resp.StatusCode, resp.Header.Get("Location"), want)
	}
}

// tampered is pass with one character of its signature changed.
func tampered(pass string) string {
	i := strings.LastIndexByte(pass, '.') + 3
	c := byte('A')
	if pass[i] == 'A' {
		c = 'B'
	}
	return pass[:i] + string(c) + pass[i+1:]
}

// count is the gate's counter of room r and outcome.
func (f *fixture) count(t *testing.T, r, outcome string) float64 {
	t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "waitroom_gate_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["room"] == r && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no waitroom_gate_requests_total{room=%q,outcome=%q}", r, outcome)
	return 0
}
