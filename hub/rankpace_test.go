package hub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
)

// fakeRankClock is a clock the test moves, and the pushes the hub scheduled on it.
type fakeRankClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	due   []func()
}

func (c *fakeRankClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeRankClock) after(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits, c.due = append(c.waits, d), append(c.due, f)
}

func (c *fakeRankClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// take returns the pushes scheduled so far, and forgets them.
func (c *fakeRankClock) take() (waits []time.Duration, due []func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	waits, due = c.waits, c.due
	c.waits, c.due = nil, nil
	return waits, due
}

// With a rank interval, the waiting are sent their rank at most once per interval: an event within it
// waits for the interval's end, a newer one meanwhile takes its place, and what goes out then is the rank in
// the newest line. The admitted get their pass at once all the same, and an event after a quiet interval is
// pushed at once.
func TestRankPushesKeepTheirIntervalAndSendTheNewestRank(t *testing.T) {
	clock := &fakeRankClock{now: time.Unix(1_000_000, 0)}
	h := quietHub(t, func(h *hub.Hub) {
		h.SetRankInterval(250 * time.Millisecond)
		hub.SetRankClock(h, clock.Now, clock.after)
	})
	ctx := context.Background()
	if err := h.Follow(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	admittedToken := queue.NewToken()
	buyer, _ := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", admittedToken, 2, false, nil)
	})
	waiting, _ := serveOne(t, h, func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 6, false, nil)
	})
	line := &queue.Line{Epoch: 1, Head: 0, LastSeq: 6, Total: 6}
	tick := func(epoch, head int64, admitted ...string) {
		h.Dispatch(ctx, line, queue.Event{Kind: queue.EventTick, Screening: "s1", Epoch: epoch, Head: head, LastSeq: 6,
			Total: 6 - head, TickAtMs: epoch, Admitted: admitted, ExpiresAtMs: time.Now().Add(time.Minute).UnixMilli()})
	}
	type position struct {
		Type   string
		Rank   int64
		TickAt int64 `json:"tick_at"`
	}
	read := func(conn *websocket.Conn, what string) position {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var m position
		if err := conn.ReadJSON(&m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return m
	}

	tick(2, 1) // the first push: at once
	if got := read(waiting, "the first tick's position"); got != (position{"position", 5, 2}) {
		t.Fatalf("after the first tick: %+v, want rank 5 of tick 2", got)
	}
	if got := read(buyer, "the buyer's first position"); got != (position{"position", 1, 2}) {
		t.Fatalf("buyer after the first tick: %+v, want rank 1 of tick 2", got)
	}
	clock.advance(10 * time.Millisecond)
	tick(3, 2, admittedToken) // within the interval: the pass now, the ranks later
	if got := read(buyer, "the pass"); got.Type != "admitted" {
		t.Fatalf("buyer after its admission: %+v, want its pass at once", got)
	}
	clock.advance(10 * time.Millisecond)
	tick(4, 3) // still within it: this line takes the waiting one's place
	waits, due := clock.take()
	if len(due) != 1 || waits[0] != 240*time.Millisecond {
		t.Fatalf("scheduled pushes = %v, want one, at the interval's end (240ms)", waits)
	}
	clock.advance(230 * time.Millisecond)
	due[0]()
	if got := read(waiting, "the paced position"); got != (position{"position", 3, 4}) {
		t.Fatalf("after the interval: %+v, want rank 3 of tick 4 (the newest line), tick 3 never sent", got)
	}
	clock.advance(400 * time.Millisecond)
	tick(5, 4) // the interval is over: at once again
	if got := read(waiting, "the next position"); got != (position{"position", 2, 5}) {
		t.Fatalf("after a quiet interval: %+v, want rank 2 of tick 5 at once", got)
	}
	if waits, _ := clock.take(); len(waits) != 0 {
		t.Errorf("scheduled pushes after a quiet interval = %v, want none", waits)
	}
	shutdown(t, h)
}
