package hub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
)

// benchSockets is how many loopback sockets the push benchmarks hold.
const benchSockets = 1000

// BenchmarkPush is the writers' side of a tick: one position-sized message queued for each of 1,000 sockets
// on loopback, until every peer has read it (the peers read in this process too, as the swarm does beside
// the server). An op is one such round: its time is the writers' and the readers' CPU on the machine's
// cores, kernel included. It compares ways of writing; bench/hub/run.sh measures the whole server.
func BenchmarkPush(b *testing.B) {
	h, clients, got := benchHub(b)
	msg := hub.PositionMessage(12345, 19000, time.Now().UnixMilli(), 42)
	b.ResetTimer()
	for range b.N {
		got.Add(benchSockets)
		for _, c := range clients {
			hub.Send(c, msg)
		}
		got.Wait()
	}
	b.StopTimer()
	stopBenchHub(b, h)
}

// BenchmarkTick is a whole tick's fan-out without Redis: Dispatch of an admission event that moves no one,
// so each of the 1,000 waiting sockets gets its rank computed, its position made and written, until every
// peer has read it.
func BenchmarkTick(b *testing.B) {
	h, _, got := benchHub(b)
	line := &queue.Line{Epoch: 1, Head: 0, LastSeq: benchSockets, Total: benchSockets}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		got.Add(benchSockets)
		h.Dispatch(ctx, line, queue.Event{Kind: queue.EventTick, Screening: "s1", Epoch: line.Epoch + 1,
			Head: 0, LastSeq: benchSockets, Total: benchSockets, TickAtMs: int64(i)})
		got.Wait()
	}
	b.StopTimer()
	stopBenchHub(b, h)
}

// benchHub holds benchSockets sockets in screening s1 with sequence numbers 1…benchSockets, each read by a
// goroutine that counts a message off got.
func benchHub(b *testing.B) (*hub.Hub, []*hub.Client, *sync.WaitGroup) {
	h := quietHub(b)
	var mu sync.Mutex
	next := int64(0)
	joined := make(chan *hub.Client, benchSockets)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := (&websocket.Upgrader{WriteBufferPool: &sync.Pool{}}).Upgrade(w, req, nil)
		if err != nil {
			return
		}
		mu.Lock()
		next++
		seq := next
		mu.Unlock()
		c := hub.Join(h, conn, "s1", queue.NewToken(), seq, false, nil)
		joined <- c
		hub.Serve(h, c)
	}))
	b.Cleanup(srv.Close)
	got := &sync.WaitGroup{}
	clients := make([]*hub.Client, 0, benchSockets)
	for range benchSockets {
		conn, resp, err := websocket.DefaultDialer.Dial(strings.Replace(srv.URL, "http://", "ws://", 1), nil)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		b.Cleanup(func() { conn.Close() })
		clients = append(clients, <-joined)
		go func() {
			for {
				if _, _, err := conn.NextReader(); err != nil {
					return
				}
				got.Done()
			}
		}()
	}
	return h, clients, got
}

func stopBenchHub(b *testing.B, h *hub.Hub) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
}
