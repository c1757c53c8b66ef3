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
	run(t, h)
	returns := func() float64 { return metricValue(t, reg, "waitroom_hub_memory_returns_total") }
	waitReturns := func(want float64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); returns() < want && time.Now().Before(deadline); {
			time.Sleep(every / 5)
		}
		if got := returns(); got != want {
			t.Fatalf("memory returns = %v, want %v", got, want)
		}
	}
	// stays checks that no return follows for several looks.
	stays := func(want float64) {
		t.Helper()
		time.Sleep(6 * every)
		if got := returns(); got != want {
			t.Fatalf("memory returns after %v without a burst = %v, want %v", 6*every, got, want)
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
	waitReturns(1)
	stays(1)

	for range burst / 2 { // half a burst: not worth a collection
		conn, _ := serveOne(t, h, join)
		conns = append(conns, conn)
	}
	stays(1)

	// The crowd leaves: with the half burst before it, a burst of churn since the last return.
	for _, conn := range conns {
		conn.Close()
	}
	waitReturns(2)
	stays(2)
	shutdown(t, h)
}
