// Catch-up: a socket whose rank moved between its registration and its joining the hub is sent its true
// place, marked as a catch-up, and a line read during a registration is no loss.

package hub_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// A socket that registered in the pre-queue gets its place in the line from its catch-up read, and the hub
// pushes nothing to a socket without a place. When the opening and then a tick are both dispatched in the
// gap (the opening between its registration and its joining the hub, the tick between its catch-up read and
// its place), the last rank it is sent is still its true rank after that tick, not the read's.
func TestSocketPlacedAfterTheOpeningGetsTheRankOfTheTickItMissed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1000, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		r.setSaleTime("p1", time.Now().UTC().Truncate(time.Second).Add(time.Hour)) // p1's line opens in an hour

		// b waits in the pre-queue, joined: it shows when the hub has dispatched each event.
		b := r.dial(t, "p1", "")
		if m := b.Next(t, readWait); m.Type != "prequeue" {
			t.Fatalf("first message = %+v, want prequeue", m)
		}
		if err := r.hub.Follow(ctx, "p1"); err != nil { // subscribed: the opening's event reaches the hub
			t.Fatal(err)
		}
		tickAt := time.Now().Add(time.Hour)
		// a's handler is held twice: once its registration came back from Redis (registered), and once the
		// first read of its standing, a ZRANK of its token, did (read).
		token, done := queue.NewToken(), make(chan struct{})
		registered := func() {
			// a is shuffled behind b, so the tick admits b and moves a up by one.
			if err := env.Redis.ZAddXX(ctx, queue.Key(env.Prefix, "p1", "pre"), redis.Z{Score: 1<<53 - 1, Member: token}).Err(); err != nil {
				t.Errorf("ZADD pre: %v", err)
			}
			if _, err := r.q.Open(ctx, "p1", time.Now(), settings); err != nil {
				t.Errorf("Open: %v", err)
			}
			if m, err := b.ReadUntil(func(m testenv.Message) bool { return m.Type == "position" }, readWait); err != nil {
				t.Errorf("b after the opening: %+v, %v; want a position", m, err)
			}
		}
		read := func() {
			defer close(done)
			res, err := r.sched.Tick(ctx, "p1", tickAt)
			if err != nil || len(res.Admitted) != 1 || res.Admitted[0] == token {
				t.Errorf("Tick = %+v, %v; want b admitted", res, err)
				return
			}
			if m, err := b.ReadUntil(func(m testenv.Message) bool { return m.Type != "position" }, readWait); err != nil || m.Type != "admitted" {
				t.Errorf("b after the tick = %+v, %v; want admitted", m, err)
			}
			// The dispatch goes on after b's admission (the line applies the tick) with no socket left to
			// tell, so nothing shows its end: the sleep lets it finish before a joins, so that a's join, not
			// the tick's push, is what places a. Were it short, a would be told its rank by the tick and the
			// test would pass without reaching the gap; it cannot make the test fail.
			time.Sleep(100 * time.Millisecond)
		}
		var stage atomic.Int32
		testenv.OnReply(env.Redis, func(c redis.Cmder) {
			if !slices.Contains(c.Args(), any(token)) {
				return
			}
			switch {
			case strings.HasPrefix(c.Name(), "eval") && stage.CompareAndSwap(0, 1):
				registered()
			case c.Name() == "zrank" && stage.CompareAndSwap(1, 2):
				read()
			}
		})

		a := r.dial(t, "p1", token)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the gap was not reached (stage %d)", stage.Load())
		}
		var last testenv.Message
		for {
			_ = a.SetReadDeadline(time.Now().Add(time.Second))
			var m testenv.Message
			if err := a.ReadJSON(&m); err != nil {
				break
			}
			if m.Type == "position" {
				last = m
			}
		}
		waiting := queue.Key(env.Prefix, "p1", "waiting")
		zrank, err := env.Redis.ZRank(ctx, waiting, token).Result()
		if err != nil {
			t.Fatal(err)
		}
		total := env.Redis.ZCard(ctx, waiting).Val()
		if last.Rank != zrank+1 || last.Total != total {
			t.Errorf("last position = %+v, want rank %d (ZRANK+1) of %d", last, zrank+1, total)
		}
	})
}

// A connect's catch-up position says it is one (catch_up), a tick's does not: a client counting ticks by
// their tick_at (the swarm) must not take the catch-up's read time for a tick.
func TestCatchUpPositionIsMarked(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		// One active slot: once b holds it, a tick admits nobody, and a waits on.
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		b := r.dial(t, "s1", "")
		if m := b.Next(t, readWait); m.Type != "queued" || m.Rank != 1 {
			t.Fatalf("b's first message = %+v, want queued at rank 1", m)
		}
		// a registers behind b; before it joins the hub, a tick admits b, and a moves up unseen.
		token, base := queue.NewToken(), time.Now()
		var once atomic.Bool
		testenv.OnReply(env.Redis, func(c redis.Cmder) {
			if !strings.HasPrefix(c.Name(), "eval") || !slices.Contains(c.Args(), any(token)) || !once.CompareAndSwap(false, true) {
				return
			}
			if res, err := r.sched.Tick(ctx, "s1", base); err != nil || len(res.Admitted) != 1 {
				t.Errorf("Tick = %+v, %v; want b admitted", res, err)
			}
			if m, err := b.ReadUntil(func(m testenv.Message) bool { return m.Type == "admitted" }, readWait); err != nil {
				t.Errorf("b after the tick: %+v, %v; want admitted", m, err)
			}
		})
		a := r.dial(t, "s1", token)
		if m := a.Next(t, readWait); m.Type != "queued" || m.Rank != 2 {
			t.Fatalf("a's first message = %+v, want queued at rank 2 (registered before the tick)", m)
		}
		if m := a.Next(t, readWait); m.Type != "position" || m.Rank != 1 || !m.CatchUp || m.ETASeconds != nil {
			t.Fatalf("a's second message = %+v, want the catch-up: position at rank 1, catch_up, no estimate", m)
		}
		// A newcomer changes the line: the next tick (b still holds the slot) sends a a tick's position.
		c := r.dial(t, "s1", "")
		if m := c.Next(t, readWait); m.Type != "queued" {
			t.Fatalf("c's first message = %+v, want queued", m)
		}
		next, err := r.sched.Tick(ctx, "s1", base.Add(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if m := readTick(t, a, next.TickAt.UnixMilli()); m.Type != "position" || m.Rank != 1 || m.Total != 2 || m.CatchUp {
			t.Errorf("a's message of the next tick = %+v, want a position at rank 1 of 2, no catch_up", m)
		}
	})
}

// A socket that registers while the hub reads a screening's line for the first time has a number that
// read may not know. That is no sign that Redis lost the line: the hub must not rebuild it (a rebuild holds
// admission for a few seconds: rebuildHold in queue/restore.go).
func TestSocketRegisteringDuringTheLineReadIsNoLoss(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		settings := queue.Settings{Interval: time.Second, BatchSize: 2, MaxActive: 10, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		url := strings.Replace(r.url, "http://", "ws://", 1) + "/ws/screenings/s2"
		var second *websocket.Conn
		head, done := queue.Key(env.Prefix, "s2", "head"), make(chan struct{})
		var once atomic.Bool
		during := func() {
			// The line is read: a second socket registers and joins before the hub looks at its sockets.
			conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
			if err != nil {
				t.Errorf("second dial: %v", err)
				return
			}
			resp.Body.Close()
			second = conn
			var m testenv.Message
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := conn.ReadJSON(&m); err != nil || m.Type != "queued" || m.Rank != 2 {
				t.Errorf("second socket's first message = %+v, %v; want queued at rank 2", m, err)
			}
		}
		// The hub's first read of s2's line (the only script whose keys include its head) waits for during.
		testenv.OnReply(env.Redis, func(c redis.Cmder) {
			if strings.HasPrefix(c.Name(), "eval") && slices.Contains(c.Args(), any(head)) && once.CompareAndSwap(false, true) {
				during()
				close(done)
			}
		})

		first := r.dial(t, "s2", "") // its joining makes the hub follow s2 and read its line
		if m := first.Next(t, readWait); m.Type != "queued" || m.Rank != 1 {
			t.Fatalf("first socket's first message = %+v, want queued at rank 1", m)
		}
		if err := r.hub.Follow(ctx, "s2"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the line was not read")
		}
		if second != nil {
			defer second.Close()
		}
		if n := env.Redis.Exists(ctx, queue.Key(env.Prefix, "s2", "hold")).Val(); n != 0 {
			t.Errorf("the hub rebuilt a line Redis had not lost: admission is held")
		}
		res, err := r.q.Admit(ctx, "s2", time.Now(), settings)
		if err != nil || len(res.Admitted) != 2 {
			t.Errorf("Admit = %v (skip %q), %v; want both sockets' users", res.Admitted, res.Skip, err)
		}
	})
}
