package hub_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// TestBurstOfSocketsIsFollowedByOneMemoryReturn: once a burst of sockets opening (or closing) is over, the
// hub hands its memory back to the OS once; churn below a burst, or none, does not make it collect again.
func TestBurstOfSocketsIsFollowedByOneMemoryReturn(t *testing.T) {
	const every, burst = 50 * time.Millisecond, 10
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	reg := prometheus.NewRegistry()
	h := hub.New(q, pass.NewSecretIssuer([]byte(strings.Repeat("k", 32))), q, reg, quiet)
	hub.SetTrim(h, every, burst)
	look := hub.TakeTrimLooks(h) // the test takes each look and counts exact returns
	run(t, h)
	returns := func() float64 { return metricValue(t, reg, "waitroom_hub_memory_returns_total") }
	// looks takes n looks and checks the returns after them.
	looks := func(n int, want float64) {
		t.Helper()
		for range n {
			look()
		}
		if got := returns(); got != want {
			t.Fatalf("memory returns after %d more looks = %v, want %v", n, got, want)
		}
	}
	// settle waits until the hub has counted churn sockets opening and closing: a socket's close reaches
	// it through its reader.
	settle := func(churn int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); hub.Churn(h) < churn && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := hub.Churn(h); got != churn {
			t.Fatalf("the hub counted %d sockets opening or closing, want %d", got, churn)
		}
	}
	join := func(conn *websocket.Conn) *hub.Client {
		return hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil)
	}

	var conns []*websocket.Conn
	for range burst {
		conn, _ := serveOne(t, h, join)
		conns = append(conns, conn)
	}
	settle(burst)
	looks(2, 0) // the look that sees the burst, then one calm look: not over yet
	looks(1, 1) // the second calm look in a row ends it
	looks(6, 1) // no churn: no return

	for range burst / 2 { // half a burst: not worth a collection
		conn, _ := serveOne(t, h, join)
		conns = append(conns, conn)
	}
	settle(burst + burst/2)
	looks(6, 1)

	// The crowd leaves: with the half burst before it, a burst of churn since the last return.
	for _, conn := range conns {
		conn.Close()
	}
	settle(2 * (burst + burst/2))
	looks(2, 1)
	looks(1, 2)
	looks(6, 2)
	shutdown(t, h)
}
