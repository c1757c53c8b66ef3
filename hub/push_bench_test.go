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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// BenchmarkPush is the hub's side of a tick without Redis: one position-sized message queued for each of
// 1,000 sockets on loopback, until every peer has read it (the peers read in this process too, as the
// swarm does beside the server). An op is one such round: its time is the writers' and the readers' CPU
// on the machine's cores, kernel included. It compares ways of writing; bench/hub/run.sh measures the
// whole server.
func BenchmarkPush(b *testing.B) {
	const sockets = 1000
	env := testenv.New(b, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	h := hub.New(q, queue.NewPasses([]byte(strings.Repeat("k", 32))), q, prometheus.NewRegistry(), quiet)
	joined := make(chan *hub.Client, sockets)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := (&websocket.Upgrader{WriteBufferPool: &sync.Pool{}}).Upgrade(w, req, nil)
		if err != nil {
			return
		}
		c := h.Join(conn, "s1", queue.NewToken(), 0, false, nil)
		joined <- c
		h.Serve(req.Context(), c)
	}))
	defer srv.Close()

	var got sync.WaitGroup
	var peers []*websocket.Conn
	clients := make([]*hub.Client, 0, sockets)
	for range sockets {
		conn, resp, err := websocket.DefaultDialer.Dial(strings.Replace(srv.URL, "http://", "ws://", 1), nil)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		peers = append(peers, conn)
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
	msg := hub.PositionMessage(12345, 19000, time.Now().UnixMilli(), 42)
	b.ResetTimer()
	for range b.N {
		got.Add(sockets)
		for _, c := range clients {
			c.Send(msg)
		}
		got.Wait()
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, p := range peers {
		p.Close()
	}
	if err := h.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
}
