// The hub's test rig: a hub on real backends behind a socket endpoint of its own (an upgrade, then
// Welcome, as the server's handler does), the clients that dial it, and the helpers that start and stop a
// hub.

package hub_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is a hub on real backends, reached through its own socket endpoint, with the tick driven by the test.
type rig struct {
	q      *queue.Queue
	passes *pass.Issuer
	hub    *hub.Hub
	sched  *queue.Scheduler
	url    string
	reg    *prometheus.Registry

	mu      sync.Mutex
	opensAt map[string]time.Time // a screening's sale time; a minute before the rig was made when not set
	made    time.Time
}

// newRig makes a rig; set changes its hub before it runs.
func newRig(t *testing.T, env *testenv.Env, settings queue.Settings, set ...func(*hub.Hub)) *rig {
	t.Helper()
	r := &rig{q: queue.New(env.Redis, env.Prefix), passes: pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), reg: prometheus.NewRegistry(),
		opensAt: map[string]time.Time{}, made: time.Now()}
	r.hub = hub.New(r.q, r.passes, r.q, r.reg, quiet)
	for _, f := range set {
		f(r.hub)
	}
	stop := run(t, r.hub)
	r.sched = queue.NewScheduler(r.q, noSales{}, settings, "test", queue.NewMetrics(r.reg), quiet)
	srv := httptest.NewServer(http.HandlerFunc(r.socket))
	r.url = srv.URL

	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		if err := r.hub.Shutdown(sctx); err != nil {
			t.Errorf("hub.Shutdown = %v", err)
		}
		stop()
		srv.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.hub.Follow(ctx, "s1"); err != nil {
		t.Fatalf("Follow = %v", err)
	}
	return r
}

// socket is the rig's socket endpoint, /ws/screenings/{id}: the upgrade, then the hub's welcome, which
// reads the hello first when the socket came with auth=message (as the server's endpoint does).
func (r *rig) socket(w http.ResponseWriter, req *http.Request) {
	conn, err := (&websocket.Upgrader{}).Upgrade(w, req, nil)
	if err != nil {
		return
	}
	id := strings.TrimPrefix(req.URL.Path, "/ws/screenings/")
	q := req.URL.Query()
	r.hub.Welcome(req.Context(), hub.Arrival{Conn: conn, Screening: id, Token: q.Get("token"), AwaitHello: q.Get("auth") == "message", OpensAt: r.saleTime(id)})
}

// setSaleTime makes the screening's sale open at opensAt (before it, sockets wait in the pre-queue).
func (r *rig) setSaleTime(screening string, opensAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opensAt[screening] = opensAt
}

func (r *rig) saleTime(screening string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.opensAt[screening]; ok {
		return at
	}
	return r.made.Add(-time.Minute)
}

// noSales lists no screening: the rig's scheduler runs only the ticks a test asks for (Tick).
type noSales struct{}

func (noSales) Sales(context.Context, time.Time) ([]queue.Sale, error) { return nil, nil }

// run runs h (Hub.Run) until the test ends, or until the returned stop is called, which waits for it.
func run(t testing.TB, h *hub.Hub) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("hub.Run = %v, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// readWait bounds a read of a rig's socket: the hub pushes within milliseconds.
const readWait = 10 * time.Second

// dial opens a socket to the rig's screening, with token in its hello when not "".
func (r *rig) dial(t *testing.T, screening, token string) *testenv.Socket {
	t.Helper()
	return testenv.Dial(t, r.url+"/ws/screenings/"+screening, token)
}

// dialQuery opens a socket to the rig's screening as older clients do, with token in the URL when not "".
func (r *rig) dialQuery(t *testing.T, screening, token string) *testenv.Socket {
	t.Helper()
	return testenv.DialQuery(t, r.url+"/ws/screenings/"+screening, token)
}

// readTick reads until the message of the tick at tickAtMs (or an admission). A socket may first get a
// catch-up position, sent after connecting when its rank moved before it joined the hub; those carry the
// time they were sent, not the tick's.
func readTick(t *testing.T, c *testenv.Socket, tickAtMs int64) testenv.Message {
	t.Helper()
	for {
		m := c.Next(t, readWait)
		if m.Type != "position" || m.TickAt == tickAtMs {
			return m
		}
	}
}

// quietHub is a hub on its own embedded Redis, logging nothing, running until the test ends; set changes
// it before it runs.
func quietHub(t testing.TB, set ...func(*hub.Hub)) *hub.Hub {
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	h := hub.New(q, pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), q, prometheus.NewRegistry(), quiet)
	for _, f := range set {
		f(h)
	}
	run(t, h)
	return h
}

// shutdown stops h, failing the test if it does not stop within 15 s.
func shutdown(t *testing.T, h *hub.Hub) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
}

// metricValue reads the value of the gauge or counter name from reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// serveOne serves a single socket that joins h through join (given the server's side of the connection),
// dials it, and returns the client's side and the hub's Client. Both ends close when the test ends.
func serveOne(t testing.TB, h *hub.Hub, join func(*websocket.Conn) *hub.Client) (*websocket.Conn, *hub.Client) {
	t.Helper()
	joined := make(chan *hub.Client, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, req, nil)
		if err != nil {
			return
		}
		c := join(conn)
		joined <- c
		hub.Serve(h, c)
	}))
	t.Cleanup(srv.Close)
	conn, resp, err := websocket.DefaultDialer.Dial(strings.Replace(srv.URL, "http://", "ws://", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() { conn.Close() })
	return conn, <-joined
}
