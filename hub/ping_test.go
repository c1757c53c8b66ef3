package hub_test

import (
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

// TestEverySocketIsPingedEachPeriodASliceAtATime: the pinger splits the sockets into equal slices and pings
// one slice per step, so no step pings them all, and every socket is still pinged once a period.
func TestEverySocketIsPingedEachPeriodASliceAtATime(t *testing.T) {
	const period, sockets, periods = 540 * time.Millisecond, 108, 3
	const perSlice = sockets / 54
	var step func(time.Duration)
	h := quietHub(t, func(h *hub.Hub) {
		hub.SetPingPeriod(h, period)
		step = hub.TakePingSteps(h)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, req, nil)
		if err != nil {
			return
		}
		hub.Serve(h, hub.Join(h, conn, "s1", queue.NewToken(), 0, false, nil))
	}))
	defer srv.Close()

	var mu sync.Mutex
	pings := make([]int, sockets)
	total := 0
	var readers sync.WaitGroup
	conns := make([]*websocket.Conn, sockets)
	for i := range conns {
		conn, resp, err := websocket.DefaultDialer.Dial(strings.Replace(srv.URL, "http://", "ws://", 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conns[i] = conn
		conn.SetPingHandler(func(string) error {
			mu.Lock()
			defer mu.Unlock()
			pings[i]++
			total++
			return nil
		})
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if n := h.Counts()["s1"]; n == sockets {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d sockets joined, want %d", n, sockets)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for slice, n := range hub.PingSliceSizes(h) {
		if want := perSlice; n != want {
			t.Errorf("ping slice %d holds %d sockets, want %d: the sockets are not split evenly", slice, n, want)
		}
	}

	// The test takes every step of periods periods itself, and waits after each for its slice's pings: a
	// step pings one slice, no more, and a period pings each socket once.
	pinged := func() int {
		mu.Lock()
		defer mu.Unlock()
		return total
	}
	for k := 1; k <= periods*54; k++ {
		step(time.Duration(k) * period / 54)
		want := k * perSlice
		for deadline := time.Now().Add(10 * time.Second); pinged() < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := pinged(); got != want {
			t.Fatalf("after step %d the sockets got %d pings, want %d: one slice of %d a step", k, got, want, perSlice)
		}
	}
	mu.Lock()
	got := append([]int(nil), pings...)
	mu.Unlock()
	for i, n := range got {
		if n != periods {
			t.Errorf("socket %d pinged %d times in %d periods, want %d", i, n, periods, periods)
		}
	}
	for _, conn := range conns {
		conn.Close()
	}
	readers.Wait()
	shutdown(t, h)
}
