package hub

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/queue"
)

// TestNewerPositionReplacesAnUnsentOne: positions that pile up for a socket collapse to the newest, never
// past a message queued after them, and never into a drop for a full buffer.
func TestNewerPositionReplacesAnUnsentOne(t *testing.T) {
	h := &Hub{}
	c := &client{hub: h, outbox: outbox{pendingPos: -1, scheduled: true}} // scheduled: no writer is started for this test
	tick := func(i int64) *ranks {                                        // the line after tick i: i admitted, 150 has rank 149 - i
		return newRanks(&queue.Line{Head: i, LastSeq: 1000, Total: 1000 - i}, 5000+i, paceRate{})
	}
	for i := range int64(100) {
		if !queuePosition(c, tick(i), 150) {
			t.Fatalf("position %d refused: a backlog of positions must not drop the socket", i)
		}
	}
	if got := queued(c); len(got) != 1 || got[0] != string(PositionMessage(149-99, 901, 5099, -1)) {
		t.Fatalf("queued = %q, want only the newest position", got)
	}
	c.send([]byte(`{"type":"admitted"}`))
	queuePosition(c, tick(100), 150)
	queuePosition(c, tick(101), 150)
	want := []string{string(PositionMessage(50, 901, 5099, -1)), `{"type":"admitted"}`, string(PositionMessage(48, 899, 5101, -1))}
	got := queued(c)
	if len(got) != len(want) {
		t.Fatalf("queued %d messages %q, want %q", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d = %s, want %s", i, got[i], want[i])
		}
	}
}

// queuePosition queues the position after the tick r of the socket numbered seq, as pushRanks does.
func queuePosition(c *client, r *ranks, seq int64) bool {
	rank, ok := r.line.Rank(seq)
	return ok && c.sendPosition(r, rank)
}

// queued renders what is queued for c as the writer would, one payload per frame.
func queued(c *client) []string {
	var out []string
	for _, m := range c.out {
		if m.pos == nil {
			out = append(out, string(m.data))
			continue
		}
		b := m.pos.appendFrame(nil, m.rank)
		if int(b[1]) != len(b)-2 || b[0] != 0x81 {
			out = append(out, "(bad frame header)")
			continue
		}
		out = append(out, string(b[2:]))
	}
	return out
}

// TestPositionFrameOfAnyLength: a position too long for a one-byte length (never at real sizes) still gets a
// correct frame.
func TestPositionFrameOfAnyLength(t *testing.T) {
	const big = 1 << 62
	r := newRanks(&queue.Line{Head: 0, LastSeq: big + 10, Total: big}, big, paceRate{admitted: 1, spanMs: 1})
	b := r.appendFrame([]byte("x"), big)
	want := PositionMessage(big, big, big, etaSeconds(big+1, r.rate))
	if len(want) < 126 {
		t.Fatalf("test position is %d bytes; want one of 126 or more", len(want))
	}
	if string(b) != "x"+string(appendFrame(nil, 1, want)) {
		t.Errorf("frame = %q; want %q", b, appendFrame(nil, 1, want))
	}
}

// TestPositionMessageIsTheJSONOfPosition: the hand-built position message is byte for byte what
// encoding/json makes of Position.
func TestPositionMessageIsTheJSONOfPosition(t *testing.T) {
	for _, c := range [][4]int64{{0, 1, 0, -1}, {41, 19000, 1764480000123, 7}, {-1, 0, -5, 0}, {1 << 40, 1 << 41, 1 << 50, 1 << 30}} {
		got := string(PositionMessage(c[0], c[1], c[2], c[3]))
		p := Position{Type: "position", Rank: c[0] + 1, Total: c[1], TickAt: c[2]}
		if c[3] >= 0 {
			p.ETASeconds = &c[3]
		}
		want := string(mustJSON(p))
		if got != want {
			t.Errorf("PositionMessage(%d, %d, %d, %d) = %s, want %s", c[0], c[1], c[2], c[3], got, want)
		}
	}
}

func TestCatchUpMessageIsTheJSONOfAMarkedPosition(t *testing.T) {
	got := string(catchUpMessage(41, 19000, 1764480000123))
	want := string(mustJSON(Position{Type: "position", Rank: 42, Total: 19000, TickAt: 1764480000123, CatchUp: true}))
	if got != want {
		t.Errorf("CatchUpMessage = %s, want %s", got, want)
	}
}

// TestWritersQueueThatNeverEmptiesStaysSmall: the writers' queue keeps its array between bursts; a queue
// that is taken from and added to without ever emptying must not grow with everything that passed through.
func TestWritersQueueThatNeverEmptiesStaysSmall(t *testing.T) {
	w := &writers{} // no writer started: schedule only queues
	var batch [writerBatch]*client
	for range 20 {
		w.schedule(&client{})
	}
	for range 10_000 {
		for range writerBatch {
			w.schedule(&client{})
		}
		w.mu.Lock()
		if n := w.takeLocked(&batch); n != writerBatch {
			t.Fatalf("took %d clients, want %d", n, writerBatch)
		}
		w.mu.Unlock()
	}
	if waiting := len(w.queue) - w.head; waiting != 20 {
		t.Fatalf("%d clients waiting, want 20", waiting)
	}
	if c := cap(w.queue); c > 128 {
		t.Errorf("queue array holds %d after 160,000 clients passed with at most 36 waiting; want a small one", c)
	}
}

// TestPositionIsRenderedWithTheNumberItWasQueuedWith: a rebuild may renumber a socket between the tick
// that queued its position and the writer; the position is the one for the number the tick saw.
func TestPositionIsRenderedWithTheNumberItWasQueuedWith(t *testing.T) {
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, req, nil)
		if err != nil {
			return
		}
		conns <- conn
	}))
	defer srv.Close()
	peer, resp, err := websocket.DefaultDialer.Dial(strings.Replace(srv.URL, "http://", "ws://", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer peer.Close()
	c := &client{hub: &Hub{}, conn: <-conns, outbox: outbox{pendingPos: -1, scheduled: true}} // scheduled: flushed by hand
	defer c.conn.Close()

	c.seq.Store(150)
	queuePosition(c, newRanks(&queue.Line{Head: 100, LastSeq: 1000, Total: 900}, 7000, paceRate{}), 150)
	c.seq.Store(990) // a rebuild moved it to the end before the writer came
	var buf []byte
	c.flush(&buf)
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, got, err := peer.ReadMessage()
	if want := PositionMessage(49, 900, 7000, -1); err != nil || string(got) != string(want) {
		t.Errorf("position = %s, %v; want %s (rank 50 of seq 150 at that tick)", got, err, want)
	}
}

// TestBurstIsOverOnlyWhenItWasOneAndHasCalmed: the trimmer collects after a burst of sockets, once, and not
// during one (even one that stalls for a look), nor for a trickle however long.
func TestBurstIsOverOnlyWhenItWasOneAndHasCalmed(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []int64 // sockets opened or closed between looks
		want  []int64 // the churn of each burst reported over, in order
	}{
		{"a sale's crowd, then nobody", []int64{9000, 10000, 0, 0, 0, 0}, []int64{19000}},
		{"stragglers do not hold it open", []int64{19000, 19, 19}, []int64{19038}},
		{"still arriving at a fiftieth of a burst a look", []int64{19000, 20, 20, 20}, nil},
		{"a stall of one look mid-burst", []int64{5000, 0, 5000, 0, 0}, []int64{10000}},
		{"not a burst", []int64{999, 0, 0, 0}, nil},
		{"exactly one", []int64{1000, 0, 0}, []int64{1000}},
		{"a trickle of 100 a look, for ever", []int64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100}, nil},
		{"a burst in, later a burst out", []int64{19000, 0, 0, 0, 0, 19000, 0, 0}, []int64{19000, 19000}},
		{"the churn of calm looks adds up", []int64{600, 0, 19, 19, 900, 0, 0}, []int64{1538}},
	} {
		b := burst{size: trimBurst}
		var got []int64
		for _, step := range c.steps {
			if churn, over := b.look(step); over {
				got = append(got, churn)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: bursts over %v, want %v", c.name, got, c.want)
		}
	}
}
