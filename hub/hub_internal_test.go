package hub

import "testing"

// TestNewerPositionReplacesAnUnsentOne: positions that pile up for a socket collapse to the newest, never
// past a message queued after them, and never into a drop for a full buffer.
func TestNewerPositionReplacesAnUnsentOne(t *testing.T) {
	h := &Hub{}
	c := &Client{hub: h, pendingPos: -1, scheduled: true} // scheduled: no writer is started for this test
	for i := range 100 {
		if !c.sendPosition(PositionMessage(int64(100-i), 200, int64(i), -1)) {
			t.Fatalf("position %d refused: a backlog of positions must not drop the socket", i)
		}
	}
	if len(c.out) != 1 || string(c.out[0]) != string(PositionMessage(1, 200, 99, -1)) {
		t.Fatalf("queued = %q, want only the newest position", c.out)
	}
	c.Send([]byte(`{"type":"admitted"}`))
	c.sendPosition(PositionMessage(5, 200, 100, -1))
	c.sendPosition(PositionMessage(4, 200, 101, -1))
	want := []string{string(PositionMessage(1, 200, 99, -1)), `{"type":"admitted"}`, string(PositionMessage(4, 200, 101, -1))}
	if len(c.out) != len(want) {
		t.Fatalf("queued %d messages %q, want %q", len(c.out), c.out, want)
	}
	for i := range want {
		if string(c.out[i]) != want[i] {
			t.Errorf("message %d = %s, want %s", i, c.out[i], want[i])
		}
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
