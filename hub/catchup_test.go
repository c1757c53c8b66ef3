package hub_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
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
		env.Demo(t, "s1", 1, 1)
		settings := queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 1000, ActiveTTL: time.Minute, LockTTL: 5 * time.Second}
		r := newRig(t, env, settings)
		now := time.Now().UTC().Truncate(time.Second)
		later := booking.Screening{ID: "p1", Name: "Later", StartsAt: now.Add(3 * time.Hour), SaleOpensAt: now.Add(time.Hour)}
		if _, err := booking.NewStore(env.DB).EnsureScreening(ctx, later, booking.Grid(1, 3)); err != nil {
			t.Fatal(err)
		}

		// b waits in the pre-queue, joined: it shows when the hub has dispatched each event.
		b := r.dial(t, "p1", "")
		if m := b.read(t); m.Type != "prequeue" {
			t.Fatalf("first message = %+v, want prequeue", m)
		}
		if err := r.hub.Follow(ctx, "p1"); err != nil { // subscribed: the opening's event reaches the hub
			t.Fatal(err)
		}
		tickAt := time.Now().Add(time.Hour)
		hook := &gapHook{token: queue.NewToken(), done: make(chan struct{})}
		hook.registered = func() {
			// a is shuffled behind b, so the tick admits b and moves a up by one.
			if err := env.Redis.ZAddXX(ctx, queue.Key(env.Prefix, "p1", "pre"), redis.Z{Score: 1<<53 - 1, Member: hook.token}).Err(); err != nil {
				t.Errorf("ZADD pre: %v", err)
			}
			if _, err := r.q.Open(ctx, "p1", time.Now(), settings); err != nil {
				t.Errorf("Open: %v", err)
			}
			if m, err := b.until(func(m message) bool { return m.Type == "position" }); err != nil {
				t.Errorf("b after the opening: %+v, %v; want a position", m, err)
			}
		}
		hook.read = func() {
			defer close(hook.done)
			res, err := r.sched.Tick(ctx, "p1", tickAt)
			if err != nil || len(res.Admitted) != 1 || res.Admitted[0] == hook.token {
				t.Errorf("Tick = %+v, %v; want b admitted", res, err)
				return
			}
			if m, err := b.until(func(m message) bool { return m.Type != "position" }); err != nil || m.Type != "admitted" {
				t.Errorf("b after the tick = %+v, %v; want admitted", m, err)
			}
			time.Sleep(100 * time.Millisecond) // the dispatch goes on to the other sockets after b
		}
		env.Redis.AddHook(hook)

		a := r.dial(t, "p1", hook.token)
		select {
		case <-hook.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the gap was not reached (stage %d)", hook.stage.Load())
		}
		var last message
		for {
			_ = a.conn.SetReadDeadline(time.Now().Add(time.Second))
			var m message
			if err := a.conn.ReadJSON(&m); err != nil {
				break
			}
			if m.Type == "position" {
				last = m
			}
		}
		waiting := queue.Key(env.Prefix, "p1", "waiting")
		zrank, err := env.Redis.ZRank(ctx, waiting, hook.token).Result()
		if err != nil {
			t.Fatal(err)
		}
		total := env.Redis.ZCard(ctx, waiting).Val()
		if last.Rank != zrank+1 || last.Total != total {
			t.Errorf("last position = %+v, want rank %d (ZRANK+1) of %d", last, zrank+1, total)
		}
	})
}

// until reads until a message that done accepts. Unlike read, it may run on any goroutine.
func (c *wsClient) until(done func(message) bool) (message, error) {
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var m message
		if err := c.conn.ReadJSON(&m); err != nil || done(m) {
			return m, err
		}
	}
}

// gapHook runs registered once the registration of token came back from Redis, and read once the first
// read of its standing (a ZRANK of the token) did: the socket's handler waits meanwhile.
type gapHook struct {
	token            string
	registered, read func()
	stage            atomic.Int32
	done             chan struct{}
}

func (h *gapHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gapHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *gapHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Err() != nil || !slices.Contains(c.Args(), any(h.token)) {
				continue
			}
			switch {
			case strings.HasPrefix(c.Name(), "eval") && h.stage.CompareAndSwap(0, 1):
				h.registered()
			case c.Name() == "zrank" && h.stage.CompareAndSwap(1, 2):
				h.read()
			}
		}
		return err
	}
}
