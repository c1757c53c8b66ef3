// The hub through real sockets: pushed ranks match Redis, slow and stalled peers, pings and closes, the
// drain, bad and flooding clients, and events recovered from the line.

package hub_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPushedRankEqualsZRankAfterTick: after each tick every waiting socket is pushed exactly its ZRANK+1 and
// the line's ZCARD, and every admitted socket its pass.
func TestPushedRankEqualsZRankAfterTick(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		settings := queue.Settings{Interval: time.Second, BatchSize: 7, MaxActive: 1000, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)

		const n = 40
		clients := make([]*testenv.Socket, n)
		for i := range clients {
			clients[i] = r.dial(t, "s1", "")
			m := clients[i].Next(t, readWait)
			if m.Type != "queued" || m.Rank != int64(i+1) || m.Total != int64(i+1) {
				t.Fatalf("client %d first message = %+v, want queued rank %d of %d", i, m, i+1, i+1)
			}
			clients[i].Token = m.Token
		}
		waitingKey := queue.Key(env.Prefix, "s1", "waiting")
		admitted := map[string]bool{}
		// Tick times an hour ahead: a catch-up position carries the wall clock, so it can never be mistaken
		// for a tick's message.
		base := time.Now().Add(time.Hour)
		for tick := 0; tick < 3; tick++ {
			// Someone in the middle leaves between ticks: ranks behind them move by one more.
			leaver := clients[20+tick]
			if err := leaver.WriteJSON(map[string]string{"type": "leave"}); err != nil {
				t.Fatal(err)
			}
			waitGone(t, env, waitingKey, leaver.Token)
			leaver.Token = ""

			res, err := r.sched.Tick(context.Background(), "s1", base.Add(time.Duration(tick)*time.Second))
			if err != nil || len(res.Admitted) != settings.BatchSize {
				t.Fatalf("tick %d: %+v, %v; want %d admitted", tick, res, err, settings.BatchSize)
			}
			for _, tok := range res.Admitted {
				admitted[tok] = true
			}
			total := env.Redis.ZCard(context.Background(), waitingKey).Val()
			for i, c := range clients {
				if c.Token == "" || (admitted[c.Token] && tick > 0 && !contains(res.Admitted, c.Token)) {
					continue // left, or admitted at an earlier tick: nothing more is pushed
				}
				m := readTick(t, c, base.Add(time.Duration(tick)*time.Second).UnixMilli())
				if admitted[c.Token] {
					if m.Type != "admitted" || m.Pass == "" {
						t.Fatalf("tick %d client %d = %+v, want admitted with a pass", tick, i, m)
					}
					if _, err := r.passes.Verify(m.Pass, "s1"); err != nil {
						t.Fatalf("pushed pass does not verify: %v", err)
					}
					continue
				}
				zrank, err := env.Redis.ZRank(context.Background(), waitingKey, c.Token).Result()
				if err != nil {
					t.Fatal(err)
				}
				if m.Type != "position" || m.Rank != zrank+1 || m.Total != total {
					t.Fatalf("tick %d client %d pushed %+v, want position rank %d (ZRANK+1) of %d", tick, i, m, zrank+1, total)
				}
				if m.TickAt != base.Add(time.Duration(tick)*time.Second).UnixMilli() {
					t.Errorf("tick_at = %d, want the tick's time %d", m.TickAt, base.Add(time.Duration(tick)*time.Second).UnixMilli())
				}
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func waitGone(t *testing.T, env *testenv.Env, key, token string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := env.Redis.ZRank(context.Background(), key, token).Err(); err != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("token %s still waiting after leave", token)
}

// TestSlowClientIsDisconnectedNotWaitedOn: a socket that does not read is dropped once its send buffer is
// full; Send never blocks the sender.
func TestSlowClientIsDisconnectedNotWaitedOn(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	reg := prometheus.NewRegistry()
	h := hub.New(q, pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), q, reg, quiet)
	run(t, h)
	conn, c := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil)
	})

	big := []byte(`"` + strings.Repeat("x", 256<<10) + `"`)
	start := time.Now()
	dropped := false
	for i := 0; i < 10_000 && !dropped; i++ {
		dropped = !hub.Send(c, big)
	}
	if !dropped {
		t.Fatal("Send accepted 10,000 large messages to a socket that never reads; want it dropped")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("filling a slow client's buffer took %s: Send must never wait on the socket", took)
	}
	if hub.Send(c, []byte(`"after"`)) {
		t.Error("Send after the drop = true, want false")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn.Close()
	if err := h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	if got := metricValue(t, reg, "waitroom_hub_sockets"); got != 0 {
		t.Errorf("sockets gauge = %v after the drop, want 0", got)
	}
}

// TestStalledPeerDoesNotHoldAWriter: a peer that stops reading blocks the write to it once the kernel's
// buffers are full; the writers' watchdog closes its connection after the flush timeout, so the writer is
// freed and the hub can shut down, though the peer never reads nor closes.
func TestStalledPeerDoesNotHoldAWriter(t *testing.T) {
	h := quietHub(t, func(h *hub.Hub) { hub.SetFlushTimeout(h, 400*time.Millisecond) })
	_, c := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil)
	})
	// 15 MiB in fewer messages than the send buffer holds: more than loopback's socket buffers take, so the
	// write blocks, and the socket is not dropped as too slow before it does.
	big := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	for i := range 15 {
		if !hub.Send(c, big) {
			t.Fatalf("Send %d refused before the buffer was full", i)
		}
	}
	// The peer (the dialled conn) is left open and never read: only the watchdog can end the write.
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown with a stalled peer = %v: its write still holds a writer", err)
	}
	if hub.Send(c, []byte(`"after"`)) {
		t.Error("Send after the stalled write was cut = true, want false")
	}
}

// TestPeerPingIsAnswered: the writers are a socket's only writers, so the hub answers a peer's ping through
// them, with a pong carrying the ping's payload.
func TestPeerPingIsAnswered(t *testing.T) {
	h := quietHub(t)
	conn, c := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil)
	})
	pongs := make(chan string, 1)
	conn.SetPongHandler(func(data string) error { pongs <- data; return nil })
	if err := conn.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	hub.Send(c, []byte(`"hello"`))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, data, err := conn.ReadMessage(); err != nil || string(data) != `"hello"` {
		t.Fatalf("read = %q, %v; want the queued message", data, err)
	}
	// The pong comes before the message or after it; reading on handles it if it is still to come.
	go func() { _, _, _ = conn.ReadMessage() }()
	select {
	case p := <-pongs:
		if p != "are you there" {
			t.Errorf("pong payload = %q, want the ping's", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no pong for the peer's ping")
	}
	shutdown(t, h)
}

// TestMissedIsFalseOnceATickReachedTheSocket: a socket that was sent a tick's position after it joined has
// missed nothing, however old the epoch of its registration; one that joined after the tick may have.
func TestMissedIsFalseOnceATickReachedTheSocket(t *testing.T) {
	h := quietHub(t)
	ctx := context.Background()
	if err := h.Follow(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	conn, before := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 2, false, nil)
	})
	line := &queue.Line{Epoch: 1, Head: 0, LastSeq: 2, Total: 2}
	h.Dispatch(ctx, line, queue.Event{Kind: queue.EventTick, Screening: "s1", Epoch: 2, Head: 1, LastSeq: 2, Total: 1, TickAtMs: 1})
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m struct{ Type string }
	if err := conn.ReadJSON(&m); err != nil || m.Type != "position" {
		t.Fatalf("first message = %+v, %v; want the tick's position", m, err)
	}
	if hub.Missed(h, before, 1) {
		t.Error("Missed = true for a socket the tick after its registration reached")
	}
	_, after := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 2, false, nil)
	})
	if !hub.Missed(h, after, 1) {
		t.Error("Missed = false for a socket that joined after a tick newer than its registration")
	}
	shutdown(t, h)
}

// TestPeerCloseIsEchoed: a peer's close frame is answered with one close frame of the same code, the last
// frame on the connection, which then ends.
func TestPeerCloseIsEchoed(t *testing.T) {
	h := quietHub(t)
	conn, _ := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil)
	})
	if err := conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4000, "bye"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Everything the server sends from here to the end of the connection, frame by frame (server frames are
	// not masked).
	raw := conn.NetConn()
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	stream, err := io.ReadAll(raw)
	if err != nil {
		t.Fatalf("reading to the end of the connection: %v", err)
	}
	var closes []int
	for len(stream) >= 2 {
		op, n := stream[0]&0x0f, int(stream[1]&0x7f)
		stream = stream[2:]
		if n >= 126 || n > len(stream) {
			t.Fatalf("unexpected frame length %d", n)
		}
		payload := stream[:n]
		stream = stream[n:]
		if op == websocket.CloseMessage {
			code := 1005
			if n >= 2 {
				code = int(payload[0])<<8 | int(payload[1])
			}
			closes = append(closes, code)
		} else if len(closes) > 0 {
			t.Errorf("a frame (opcode %d) after the close frame", op)
		}
	}
	if len(closes) != 1 || closes[0] != 4000 {
		t.Errorf("close frames sent = %v, want one, echoing 4000", closes)
	}
	shutdown(t, h)
}

// TestShutdownClosesSocketsWithServiceRestart: draining tells every socket 1012 so clients reconnect
// elsewhere with their token, and refuses new sockets.
func TestShutdownClosesSocketsWithServiceRestart(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	r := newRig(t, env, queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute, LockTTL: time.Second})
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	for i := 0; i < 3; i++ {
		c := r.dial(t, "s1", "")
		c.Next(t, readWait)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					var ce *websocket.CloseError
					if ok := asClose(err, &ce); ok {
						codes <- ce.Code
					} else {
						codes <- -1
					}
					return
				}
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.hub.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != hub.CloseServiceRestart {
			t.Errorf("close code = %d, want %d", code, hub.CloseServiceRestart)
		}
	}
	// A socket arriving while draining is turned away with the same code.
	c := r.dial(t, "s1", "")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !asClose(err, &ce) || ce.Code != hub.CloseServiceRestart {
				t.Errorf("socket while draining: %v, want close %d", err, hub.CloseServiceRestart)
			}
			break
		}
	}
}

// A socket that arrives while the hub drains was registered before the hub turned it away, and is counted
// off again: its token counts no open socket, and is noted gone so the grace drops it unless it comes back
// (to another instance) in time.
func TestSocketTurnedAwayWhileDrainingIsCountedOff(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		r := newRig(t, env, queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute, LockTTL: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.hub.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		token := queue.NewToken()
		c := r.dialQuery(t, "s1", token) // the token in the URL: registered before the hub looks at it
		if code := c.CloseCode(t, readWait); code != hub.CloseServiceRestart {
			t.Errorf("socket while draining closed %d, want %d", code, hub.CloseServiceRestart)
		}
		conns, gone := queue.Key(env.Prefix, "s1", "conns"), queue.Key(env.Prefix, "s1", "gone")
		if err := env.Redis.ZScore(ctx, queue.Key(env.Prefix, "s1", "waiting"), token).Err(); err != nil {
			t.Fatalf("the token is not in line (%v): the socket was turned away before it registered, not after", err)
		}
		for {
			n, err := env.Redis.HGet(ctx, conns, token).Int64()
			if (errors.Is(err, redis.Nil) || (err == nil && n == 0)) && env.Redis.ZScore(ctx, gone, token).Err() == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("the token turned away still counts %d open sockets (%v), or is not noted gone", n, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func asClose(err error, target **websocket.CloseError) bool {
	ce, ok := err.(*websocket.CloseError)
	if ok {
		*target = ce
	}
	return ok
}

// TestBadClientMessageGetsAnError: anything but {"type":"leave"} is answered with BAD_MESSAGE and the socket
// stays open.
func TestBadClientMessageGetsAnError(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	r := newRig(t, env, queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute, LockTTL: time.Second})
	for _, bad := range []string{`nonsense`, `{"type":"dance"}`, `[]`} {
		c := r.dial(t, "s1", "")
		q := c.Next(t, readWait)
		// The first bad message is answered; the second closes the socket with 1008.
		for i := range 2 {
			if err := c.WriteMessage(websocket.TextMessage, []byte(bad)); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if err := c.ReadJSON(&m); err != nil {
				t.Fatalf("after %q #%d: %v", bad, i+1, err)
			}
			if m["type"] != "error" || m["code"] != "BAD_MESSAGE" {
				t.Errorf("after %q #%d got %v, want error BAD_MESSAGE", bad, i+1, m)
			}
		}
		_, _, err := c.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
			t.Errorf("after a second %q: %v, want close 1008", bad, err)
		}
		// Still in line: a bad client loses its socket, not its place.
		e, err := r.q.Status(context.Background(), "s1", q.Token)
		if err != nil || e.State != queue.Waiting {
			t.Errorf("Status after bad messages = %+v, %v; want waiting", e, err)
		}
	}
}

// TestCatchUpNeverFollowsNewerTickNews: a catch-up computed before a tick is dropped once that tick's
// message is queued, so a socket never shows older news after newer.
func TestCatchUpNeverFollowsNewerTickNews(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	h := hub.New(q, pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), q, prometheus.NewRegistry(), quiet)
	run(t, h)
	token := queue.NewToken()
	conn, c := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", token, 0, false, nil)
	})

	stale := hub.Mark(c)
	h.Dispatch(context.Background(), &queue.Line{}, queue.Event{Kind: queue.EventTick, Screening: "s1", TickAtMs: 1,
		Admitted: []string{token}, ExpiresAtMs: time.Now().Add(time.Minute).UnixMilli()})
	if hub.SendUnlessTicked(c, stale, hub.PositionMessage(3, 9, 0, -1)) {
		t.Error("SendUnlessTicked with a mark from before the tick = true, want the stale catch-up dropped")
	}
	if !hub.SendUnlessTicked(c, hub.Mark(c), hub.PositionMessage(3, 9, 0, -1)) {
		t.Error("SendUnlessTicked with a current mark = false, want it sent")
	}
	var first testenv.Message
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := conn.ReadJSON(&first); err != nil || first.Type != "admitted" {
		t.Errorf("first message = %+v, %v; want the tick's admitted", first, err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
}

// TestMissedEventIsRecoveredFromTheLine: an instance that never heard of an admission (its event lost in
// pub/sub) still hands that user its pass, and pushes exact ranks, once the next event shows the gap.
func TestMissedEventIsRecoveredFromTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 10, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		clients := make([]*testenv.Socket, 3)
		for i := range clients {
			clients[i] = r.dial(t, "s1", "")
			clients[i].Token = clients[i].Next(t, readWait).Token
		}
		ctx := context.Background()
		base := time.Now().Add(time.Hour)
		// Two admissions; neither is published, and only the second event reaches the hub.
		lost, err := r.q.Admit(ctx, "s1", base, settings)
		if err != nil || len(lost.Admitted) != 1 || lost.Admitted[0] != clients[0].Token {
			t.Fatalf("first admission = %+v, %v; want the first client", lost, err)
		}
		next, err := r.q.Admit(ctx, "s1", base.Add(time.Second), settings)
		if err != nil || len(next.Admitted) != 1 || next.Admitted[0] != clients[1].Token {
			t.Fatalf("second admission = %+v, %v; want the second client", next, err)
		}
		r.hub.Dispatch(ctx, &queue.Line{Epoch: lost.Epoch - 1}, next.Event())

		for i := range 2 {
			m := readTick(t, clients[i], next.TickAt.UnixMilli())
			if m.Type != "admitted" || m.Pass == "" {
				t.Fatalf("client %d after the gap = %+v, want its pass", i, m)
			}
		}
		if m := readTick(t, clients[2], next.TickAt.UnixMilli()); m.Type != "position" || m.Rank != 1 || m.Total != 1 {
			t.Fatalf("client 2 after the gap = %+v, want position 1 of 1", m)
		}
	})
}

// A hub that begins to follow a screening after its latest admission (it heard nothing of it) starts its
// measure of the pace there, read with the line: the first tick it hears already carries a wait estimate,
// the one it would carry had the hub heard that admission.
func TestWaitEstimateFromTheFirstTickHeard(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 10, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		ctx := context.Background()
		for range 2 {
			if _, err := r.q.Register(ctx, "s2", queue.NewToken()); err != nil {
				t.Fatal(err)
			}
		}
		base := time.Now().Add(time.Hour)
		if first, err := r.sched.Tick(ctx, "s2", base); err != nil || len(first.Admitted) != 1 {
			t.Fatalf("first admission in s2 = %+v, %v; want one admitted", first, err)
		}
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := r.hub.Follow(fctx, "s2"); err != nil {
			t.Fatalf("Follow(s2) = %v", err)
		}
		c := r.dial(t, "s2", "")
		if m := c.Next(t, readWait); m.Type != "queued" {
			t.Fatalf("first message = %+v, want queued", m)
		}
		next, err := r.sched.Tick(ctx, "s2", base.Add(4*time.Second))
		if err != nil || len(next.Admitted) != 1 {
			t.Fatalf("second admission in s2 = %+v, %v; want one admitted", next, err)
		}
		// One admitted 4 s after the one before: the first in line waits 4 s.
		m := readTick(t, c, next.TickAt.UnixMilli())
		if m.Type != "position" || m.Rank != 1 || m.ETASeconds == nil || *m.ETASeconds != 4 {
			eta := "none"
			if m.ETASeconds != nil {
				eta = strconv.FormatInt(*m.ETASeconds, 10)
			}
			t.Fatalf("first tick heard = %+v (eta_seconds %s), want position 1 with eta_seconds 4", m, eta)
		}
	})
}

// A sold-out message that never reached this instance (another closed the line, and its publish failed)
// still ends the wait of the sockets here: the closing is numbered like the line's events, the hub finds
// the number missing, reads the line, and finds it closed.
func TestLostSoldOutIsRecoveredFromTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 10, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		c := r.dial(t, "s1", "")
		if m := c.Next(t, readWait); m.Type != "queued" {
			t.Fatalf("first message = %+v, want queued", m)
		}
		other := redis.NewClient(env.Redis.(*redis.Client).Options())
		t.Cleanup(func() { other.Close() })
		// Its PUBLISH and SPUBLISH fail without reaching Redis: an instance whose connection broke right after
		// its script ran.
		other.AddHook(testenv.Refuse{Names: []string{"publish", "spublish"}, Err: errors.New("connection reset")})
		if err := queue.New(other, env.Prefix).Close(context.Background(), "s1"); err == nil {
			t.Fatal("Close with its publish dropped = nil, want the publish's error")
		}
		for {
			m := c.Next(t, readWait) // fails the test after 10 s without a message
			if m.Type == "sold_out" {
				break
			}
			if m.Type != "position" && m.Type != "unavailable" && m.Type != "available" {
				t.Fatalf("message while the sold out is lost = %+v, want sold_out in the end", m)
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var ce *websocket.CloseError
		if _, _, err := c.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
			t.Errorf("after sold_out: %v, want a normal close", err)
		}
	})
}

// failingLeaver cannot take anyone out of a line (its Redis is down).
type failingLeaver struct{}

func (failingLeaver) Leave(context.Context, string, string) (bool, error) {
	return false, errors.New("redis: connection refused")
}

// A client that sends more messages than the protocol could need is closed with 1008, even when every one is
// well formed: here a leave retried in a tight loop while leaving fails.
func TestMessageFloodIsClosed(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	h := hub.New(q, pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), failingLeaver{}, prometheus.NewRegistry(), quiet)
	run(t, h)
	conn, _ := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil)
	})
	for range 50 {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"leave"}`)); err != nil {
			break // closed before all were written
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	code := 0
	for code == 0 {
		_, data, err := conn.ReadMessage()
		var ce *websocket.CloseError
		switch {
		case errors.As(err, &ce):
			code = ce.Code
		case err != nil:
			t.Fatalf("reading until the close: %v", err)
		case !strings.Contains(string(data), "UNAVAILABLE") && !strings.Contains(string(data), "TOO_MANY_MESSAGES"):
			t.Errorf("message during the flood: %s, want UNAVAILABLE answers, then TOO_MANY_MESSAGES", data)
		}
	}
	if code != websocket.ClosePolicyViolation {
		t.Errorf("after 50 leaves at once: close %d, want 1008", code)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn.Close()
	if err := h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
}

// A pause dispatched between a socket's registration (which said "not paused") and its joining the hub is
// still told to that socket, and a pause lost by the subscription is told when the line is read again.
func TestPauseBetweenRegisteringAndJoiningIsTold(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	h := hub.New(q, pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), q, prometheus.NewRegistry(), quiet)
	run(t, h)
	ctx := context.Background()
	if err := h.Follow(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	// The pause is set in Redis and its event dispatched before the socket joins.
	if err := env.Redis.Set(ctx, queue.Key(env.Prefix, "s1", "paused"), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	h.Dispatch(ctx, &queue.Line{}, queue.Event{Kind: queue.EventPaused, Screening: "s1", TickAtMs: 1})

	conn, _ := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, []byte(`{"type":"queued"}`))
	})
	var got []string
	for range 2 {
		var m testenv.Message
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := conn.ReadJSON(&m); err != nil {
			t.Fatalf("messages so far %v: %v", got, err)
		}
		got = append(got, m.Type)
	}
	if want := []string{"queued", "paused"}; !slices.Equal(got, want) {
		t.Errorf("messages = %v, want %v", got, want)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn.Close()
	if err := h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
}
