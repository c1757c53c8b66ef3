// The property: over random joins, leaves, reconnects and ticks, every socket is pushed the rank Redis
// holds; and a shutdown leaves no goroutine behind.

package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// propReadWait bounds one read in the property: pushes arrive within milliseconds, and a failing case is
// replayed many times while rapid shrinks it.
const propReadWait = 3 * time.Second

func readWire(rt *rapid.T, c *testenv.Socket, what string) testenv.Message {
	rt.Helper()
	m, err := c.Read(propReadWait)
	if err != nil {
		rt.Fatalf("%s: read: %v", what, err)
	}
	return m
}

// readNews reads past catch-up positions (they carry the wall clock, earlier than every tick time of the
// property) and returns the first other message.
func readNews(rt *rapid.T, c *testenv.Socket, firstTickMs int64, what string) testenv.Message {
	rt.Helper()
	for {
		m := readWire(rt, c, what)
		if m.Type != "position" || m.TickAt >= firstTickMs {
			return m
		}
	}
}

// holder is one token of the property and its socket.
type holder struct {
	name      string // c3: the third token that joined
	token     string
	ws        *testenv.Socket // nil while disconnected
	state     string          // waiting, admitted or left
	expiresAt string          // of its admission, as the wire says it
}

// lineRun is one run of the property: a fresh screening, the line as it should be, and its tokens.
type lineRun struct {
	t           *testing.T
	env         *testenv.Env
	r           *rig
	sched       *queue.Scheduler
	id          string
	batch       int
	firstTick   time.Time
	ticks       int
	line        []*holder // waiting, in line order
	all         []*holder // every token, first join first
	changed     bool      // joins or leaves since the last event: the next tick must publish one
	waitingKey  string
	maxAllSocks int
	source      net.IP // the run's loopback source address
}

// dial connects to the run's screening from the run's own loopback source address: a run closes its sockets
// first, so their TIME_WAIT stays with that address, and thousands of runs (-rapid.checks) never run out of
// ephemeral ports.
func (lr *lineRun) dial(rt *rapid.T, token string) *testenv.Socket {
	rt.Helper()
	u := strings.Replace(lr.r.url, "http://", "ws://", 1) + "/ws/screenings/" + lr.id
	if token != "" {
		u += "?token=" + token
	}
	d := websocket.Dialer{HandshakeTimeout: propReadWait, NetDial: func(network, addr string) (net.Conn, error) {
		return (&net.Dialer{LocalAddr: &net.TCPAddr{IP: lr.source}}).Dial(network, addr)
	}}
	conn, resp, err := d.Dial(u, nil)
	if err != nil {
		rt.Fatalf("dial %s from %s: %v", u, lr.source, err)
	}
	resp.Body.Close()
	return &testenv.Socket{Conn: conn, Token: token}
}

// nextSource hands each run a loopback address of its own (127.1.0.2, 127.1.0.3, ...).
var nextSource atomic.Uint32

func sourceAddr() net.IP {
	n := nextSource.Add(1)
	return net.IPv4(127, 1+byte(n/62500%200), byte(n/250%250), 1+byte(n%250))
}

func (lr *lineRun) pick(rt *rapid.T, label string, ok func(h *holder) bool) *holder {
	var among []*holder
	for _, h := range lr.all {
		if ok(h) {
			among = append(among, h)
		}
	}
	if len(among) == 0 {
		return nil
	}
	return among[rapid.IntRange(0, len(among)-1).Draw(rt, label)]
}

func (lr *lineRun) zrank(rt *rapid.T, token string) (int64, int64) {
	rt.Helper()
	ctx := context.Background()
	rank, err := lr.env.Redis.ZRank(ctx, lr.waitingKey, token).Result()
	if err != nil {
		rt.Fatalf("ZRANK %s: %v", token, err)
	}
	total, err := lr.env.Redis.ZCard(ctx, lr.waitingKey).Result()
	if err != nil {
		rt.Fatalf("ZCARD: %v", err)
	}
	return rank, total
}

func (lr *lineRun) join(rt *rapid.T) {
	if len(lr.all) >= lr.maxAllSocks {
		return
	}
	h := &holder{name: fmt.Sprintf("c%d", len(lr.all)+1)}
	h.ws = lr.dial(rt, "")
	lr.all = append(lr.all, h) // closed at the end of the run, whatever happens
	m := readWire(rt, h.ws, h.name+" joins")
	want := int64(len(lr.line) + 1)
	if m.Type != "queued" || !m.Inserted || m.Rank != want || m.Total != want || !queue.ValidToken(m.Token) {
		rt.Fatalf("%s joins: first message %+v, want queued, inserted, rank %d of %d, with a token", h.name, m, want, want)
	}
	h.token, h.ws.Token, h.state = m.Token, m.Token, "waiting"
	lr.line = append(lr.line, h)
	lr.changed = true
}

// rejoin connects a token that left: it gets a new place at the end of the line.
func (lr *lineRun) rejoin(rt *rapid.T) {
	h := lr.pick(rt, "rejoin", func(h *holder) bool { return h.state == "left" })
	if h == nil {
		return
	}
	h.ws = lr.dial(rt, h.token)
	m := readWire(rt, h.ws, h.name+" rejoins")
	want := int64(len(lr.line) + 1)
	if m.Type != "queued" || !m.Inserted || m.Token != h.token || m.Rank != want || m.Total != want {
		rt.Fatalf("%s rejoins after leaving: %+v, want queued, inserted, its token, rank %d of %d", h.name, m, want, want)
	}
	h.state = "waiting"
	lr.line = append(lr.line, h)
	lr.changed = true
}

// reconnect drops a token's socket (if it has one) and connects again with the token: a waiting token
// keeps its place, an admitted one gets its pass again.
func (lr *lineRun) reconnect(rt *rapid.T) {
	h := lr.pick(rt, "reconnect", func(h *holder) bool { return h.state != "left" })
	if h == nil {
		return
	}
	if h.ws != nil {
		h.ws.Close()
	}
	h.ws = lr.dial(rt, h.token)
	m := readWire(rt, h.ws, h.name+" reconnects")
	switch h.state {
	case "waiting":
		want := int64(slices.Index(lr.line, h) + 1)
		if m.Type != "queued" || m.Inserted || m.Token != h.token || m.Rank != want || m.Total != int64(len(lr.line)) {
			rt.Fatalf("%s reconnects while waiting: %+v, want queued, not inserted, its token, rank %d of %d", h.name, m, want, len(lr.line))
		}
		if zr, total := lr.zrank(rt, h.token); m.Rank != zr+1 || m.Total != total {
			rt.Fatalf("%s reconnects: queued rank %d of %d, want ZRANK+1 = %d of ZCARD %d", h.name, m.Rank, m.Total, zr+1, total)
		}
	case "admitted":
		if m.Type != "admitted" || m.Token != h.token || m.ExpiresAt != h.expiresAt {
			rt.Fatalf("%s reconnects while admitted: %+v, want admitted, its token, expires_at %s", h.name, m, h.expiresAt)
		}
		lr.verifyPass(rt, h, m)
	}
}

func (lr *lineRun) disconnect(rt *rapid.T) {
	h := lr.pick(rt, "disconnect", func(h *holder) bool { return h.ws != nil })
	if h == nil {
		return
	}
	h.ws.Close()
	h.ws = nil
}

// leave sends {"type":"leave"} from a waiting token's socket: the server closes it with 1000 "left" and the
// token is out of the line.
func (lr *lineRun) leave(rt *rapid.T) {
	h := lr.pick(rt, "leave", func(h *holder) bool { return h.state == "waiting" && h.ws != nil })
	if h == nil {
		return
	}
	if err := h.ws.WriteJSON(map[string]string{"type": "leave"}); err != nil {
		rt.Fatalf("%s leave: %v", h.name, err)
	}
	// A catch-up position (wall-clock tick_at, before the first tick: one after a resubscription) may come
	// first, as readNews allows; nothing else.
	var data []byte
	var err error
	for {
		_ = h.ws.SetReadDeadline(time.Now().Add(propReadWait))
		_, data, err = h.ws.ReadMessage()
		var m testenv.Message
		if err != nil || json.Unmarshal(data, &m) != nil || m.Type != "position" || m.TickAt >= lr.firstTick.UnixMilli() {
			break
		}
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure || ce.Text != "left" {
		rt.Fatalf("%s after leave: message %q, error %v; want close 1000 \"left\" and no tick's news before it", h.name, data, err)
	}
	waitGone(lr.t, lr.env, lr.waitingKey, h.token)
	h.ws.Close()
	h.ws = nil
	h.state = "left"
	lr.line = slices.DeleteFunc(lr.line, func(x *holder) bool { return x == h })
	lr.changed = true
}

func (lr *lineRun) verifyPass(rt *rapid.T, h *holder, m testenv.Message) {
	rt.Helper()
	c, err := lr.r.passes.Verify(m.Pass, lr.id)
	if err != nil {
		rt.Fatalf("%s: pass does not verify: %v", h.name, err)
	}
	if c.Token != h.token || c.ExpiresAt.UTC().Format(hub.TimeFormat) != m.ExpiresAt {
		rt.Fatalf("%s: pass for token %s expiring %s, want token %s expiring %s", h.name, c.Token, c.ExpiresAt.UTC().Format(hub.TimeFormat), h.token, m.ExpiresAt)
	}
}

// tick runs one admission and checks what every connected socket was pushed.
func (lr *lineRun) tick(rt *rapid.T) {
	at := lr.firstTick.Add(time.Duration(lr.ticks) * time.Second)
	lr.ticks++
	res, err := lr.sched.Tick(context.Background(), lr.id, at)
	if err != nil {
		rt.Fatalf("tick %d: %v", lr.ticks, err)
	}
	n := min(lr.batch, len(lr.line))
	admitted := lr.line[:n]
	var want []string
	for _, h := range admitted {
		want = append(want, h.token)
	}
	if !slices.Equal(res.Admitted, want) {
		rt.Fatalf("tick %d admitted %v (skip %q), want the first %d of the line %v", lr.ticks, res.Admitted, res.Skip, n, want)
	}
	if wantMoved := n > 0 || lr.changed; res.Moved != wantMoved {
		rt.Fatalf("tick %d: moved = %v, want %v (admitted %d, joins or leaves since the last event: %v)", lr.ticks, res.Moved, wantMoved, n, lr.changed)
	}
	lr.line = slices.Clone(lr.line[n:])
	lr.changed = false
	if !res.Moved {
		return // nothing is pushed; the fence at the end of the run shows nothing was
	}
	for _, h := range admitted {
		h.state = "admitted"
		if h.ws == nil {
			continue
		}
		m := readNews(rt, h.ws, lr.firstTick.UnixMilli(), h.name+" admitted")
		if m.Type != "admitted" || m.Token != h.token {
			rt.Fatalf("tick %d: %s (admitted) got %+v, want admitted with its token", lr.ticks, h.name, m)
		}
		h.expiresAt = m.ExpiresAt
		lr.verifyPass(rt, h, m)
		if exp := res.ExpiresAt.UTC().Format(hub.TimeFormat); m.ExpiresAt != exp {
			rt.Fatalf("tick %d: %s admitted until %s, want %s", lr.ticks, h.name, m.ExpiresAt, exp)
		}
	}
	for _, h := range admitted {
		if h.expiresAt == "" { // disconnected: its reconnect shows the admission's expiry
			h.expiresAt = res.ExpiresAt.UTC().Format(hub.TimeFormat)
		}
	}
	for i, h := range lr.line {
		if h.ws == nil {
			continue
		}
		m := readNews(rt, h.ws, lr.firstTick.UnixMilli(), h.name+" waiting")
		zr, total := lr.zrank(rt, h.token)
		if m.Type != "position" || m.TickAt != at.UnixMilli() {
			rt.Fatalf("tick %d: %s (waiting) got %+v, want the position of the tick at %d", lr.ticks, h.name, m, at.UnixMilli())
		}
		if m.Rank != zr+1 || m.Total != total {
			rt.Fatalf("tick %d: %s pushed rank %d of %d, want ZRANK+1 = %d of ZCARD %d", lr.ticks, h.name, m.Rank, m.Total, zr+1, total)
		}
		if m.Rank != int64(i+1) || m.Total != int64(len(lr.line)) {
			rt.Fatalf("tick %d: %s pushed rank %d of %d, want %d of %d (the model's line)", lr.ticks, h.name, m.Rank, m.Total, i+1, len(lr.line))
		}
	}
}

// fence checks that no socket holds a message the property did not expect: a client message the server
// answers with BAD_MESSAGE must be the next thing each open socket reads.
func (lr *lineRun) fence(rt *rapid.T) {
	for _, h := range lr.all {
		if h.ws == nil {
			continue
		}
		if err := h.ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"fence"}`)); err != nil {
			rt.Fatalf("%s fence: %v", h.name, err)
		}
		if m := readNews(rt, h.ws, lr.firstTick.UnixMilli(), h.name+" fence"); m.Type != "error" || m.Code != "BAD_MESSAGE" {
			rt.Fatalf("%s (%s) got %+v before the answer to its own message: want nothing more pushed", h.name, h.state, m)
		}
	}
}

// TestPushedRankPropertyMatchesZRank: over random joins, reconnects, disconnects, leaves from the middle,
// rejoins and ticks, every tick pushes each connected waiting socket exactly its ZRANK+1 and the line's
// ZCARD, and each connected admitted socket a pass that verifies; a reconnect keeps its place; a tick that
// did not change the line pushes nothing; nothing else is ever pushed.
func TestPushedRankPropertyMatchesZRank(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1000, ActiveTTL: time.Hour, LockTTL: 5 * time.Second})
		rapid.Check(t, func(rt *rapid.T) {
			id := testenv.Unique("p")
			batch := rapid.IntRange(1, 3).Draw(rt, "batch")
			sched := queue.NewScheduler(r.q, noSales{}, queue.Settings{Interval: time.Second, BatchSize: batch, MaxActive: 1000, ActiveTTL: time.Hour, LockTTL: 5 * time.Second},
				"prop", queue.NewMetrics(prometheus.NewRegistry()), quiet)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.hub.Follow(ctx, id); err != nil {
				t.Fatalf("Follow(%s) = %v", id, err)
			}
			lr := &lineRun{
				t: t, env: env, r: r, sched: sched, id: id, batch: batch,
				// Tick times an hour ahead: a catch-up position carries the wall clock, so it can never be
				// mistaken for a tick's message.
				firstTick:  time.Now().Add(time.Hour).Truncate(time.Second),
				waitingKey: queue.Key(env.Prefix, id, "waiting"), maxAllSocks: 30, source: sourceAddr(),
			}
			defer func() {
				for _, h := range lr.all {
					if h.ws != nil {
						h.ws.Close()
					}
				}
			}()
			actions := map[string]func(*rapid.T){
				"join": lr.join, "rejoin": lr.rejoin, "reconnect": lr.reconnect, "disconnect": lr.disconnect,
				"leave": lr.leave, "tick": lr.tick,
			}
			// Weighted so that lines grow long enough for leaves from the middle and many ranks per tick.
			names := []string{"join", "join", "join", "join", "rejoin", "reconnect", "disconnect", "leave", "leave", "tick", "tick", "tick"}
			steps := rapid.IntRange(5, 25).Draw(rt, "steps")
			for range steps {
				actions[rapid.SampledFrom(names).Draw(rt, "action")](rt)
			}
			lr.tick(rt) // every run ends with a tick, so the last actions are checked too
			lr.fence(rt)
		})
	})
}

// TestShutdownLeaksNoGoroutine: a hub that followed two screenings, pushed ticks and held sockets leaves no
// goroutine behind once Shutdown, and then Run, return (its writers, subscriptions and readers all end).
func TestShutdownLeaksNoGoroutine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		passes := pass.NewSecretIssuer([]byte(strings.Repeat("k", 32)))
		reg := prometheus.NewRegistry()
		h := hub.New(q, passes, q, reg, quiet)
		sched := queue.NewScheduler(q, noSales{}, queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 10, ActiveTTL: time.Minute, LockTTL: time.Second},
			"leak", queue.NewMetrics(reg), quiet)
		r := &rig{q: q, passes: passes, hub: h, sched: sched, reg: reg, opensAt: map[string]time.Time{}, made: time.Now()}
		ts := httptest.NewServer(http.HandlerFunc(r.socket))
		t.Cleanup(ts.Close)
		r.url = ts.URL
		// Everything above (the backends' and the HTTP server's own goroutines) outlives the hub.
		before := goleak.IgnoreCurrent()

		runCtx, stopRun := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- h.Run(runCtx) }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, id := range []string{"a", "b"} {
			if err := h.Follow(ctx, id); err != nil {
				t.Fatalf("Follow(%s) = %v", id, err)
			}
		}
		var socks []*testenv.Socket
		for _, id := range []string{"a", "b", "a", "b"} {
			c := r.dial(t, id, "")
			if m := c.Next(t, readWait); m.Type != "queued" {
				t.Fatalf("first message on %s = %+v, want queued", id, m)
			}
			socks = append(socks, c)
		}
		at := time.Now().Add(time.Hour).Truncate(time.Second)
		if _, err := sched.Tick(ctx, "a", at); err != nil {
			t.Fatal(err)
		}
		if m := readTick(t, socks[0], at.UnixMilli()); m.Type != "admitted" {
			t.Fatalf("first socket of a after the tick: %+v, want admitted", m)
		}
		if m := readTick(t, socks[2], at.UnixMilli()); m.Type != "position" || m.Rank != 1 {
			t.Fatalf("second socket of a after the tick: %+v, want position rank 1", m)
		}

		if err := h.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
		stopRun()
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		for i, c := range socks {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				_, _, err := c.ReadMessage()
				if err == nil {
					continue
				}
				var ce *websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != hub.CloseServiceRestart {
					t.Errorf("socket %d after Shutdown: %v, want close %d", i, err, hub.CloseServiceRestart)
				}
				break
			}
			c.Close()
		}
		goleak.VerifyNone(t, before,
			// The in-process Redis serves each client connection on a goroutine of its own; the pool keeps the
			// connections the test opened. They belong to the backend, not to the hub.
			goleak.IgnoreAnyFunction("github.com/alicebob/miniredis/v2/server.(*Server).servePeer"),
			goleak.IgnoreAnyFunction("github.com/alicebob/miniredis/v2/server.(*Server).servePeer.func2"),
		)
	})
}
