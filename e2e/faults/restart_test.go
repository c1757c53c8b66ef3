// Redis restarted empty mid-sale: the line is rebuilt from the sockets still connected.

package faults

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// Redis restarts mid-sale without persistence, losing every line. The server fails closed (nobody is
// admitted while it is away; the sockets stay open and are told), then rebuilds the line from the sockets
// still connected: the waiting keep their order, the admitted keep their slot and their pass still
// reserves, and admission goes on in queue order.
func TestRedisRestartRebuildsTheLineFromConnectedSockets(t *testing.T) {
	rs := testenv.StartRedis(t)
	env := testenv.Standalone(t, rs.Addr)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   "400ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "1",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		"WAITROOM_ADMISSION_ACTIVE_TTL": "1m",
		"WAITROOM_LOG_LEVEL":            "info",
	})
	const users = 6
	clients := make([]*testenv.Socket, users)
	for i := range clients {
		clients[i] = srv.Dial(t, "demo", "")
		if m := clients[i].Next(t, 5*time.Second); m.Type != "queued" {
			t.Fatalf("user %d's first message = %+v, want queued", i, m)
		}
	}
	// User 0 is admitted and holds the only slot: the line stands still until it reserves.
	adm0, _ := clients[0].Until(t, "admitted", 5*time.Second)

	rs.Kill()
	killedAt := time.Now()
	for i, c := range clients {
		if _, before := c.Until(t, "unavailable", 10*time.Second); slices.ContainsFunc(before, func(m testenv.Message) bool { return m.Type == "admitted" }) {
			t.Errorf("user %d was admitted after Redis died", i)
		}
	}
	t.Logf("every socket told within %v of the kill", time.Since(killedAt).Round(time.Millisecond))
	if code, body := srv.Reserve(t, "demo", adm0.Pass, "A1"); code != http.StatusServiceUnavailable || apptest.ErrorCode(body) != "UNAVAILABLE" {
		t.Errorf("reservation while Redis is down = %d %v, want 503 UNAVAILABLE", code, body)
	}

	rs.Start() // empty: the line, the admission and every counter are gone
	restartedAt := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", srv.Out.String())
		}
	})
	// Every socket hears that the line runs again; the waiting get their rank in the rebuilt line.
	// (In either order: the rebuild may push before the health check says so.)
	for i, c := range clients {
		available, ranked := false, i == 0
		deadline := time.Now().Add(15 * time.Second)
		for !available || !ranked {
			m := c.Next(t, time.Until(deadline))
			switch {
			case m.Type == "available":
				available = true
			case m.Type == "position" && m.Rank == int64(i):
				ranked = true
				if m.Total != users-1 {
					t.Errorf("user %d after the rebuild: %+v, want rank %d of %d", i, m, i, users-1)
				}
			case m.Type == "admitted":
				t.Fatalf("user %d admitted before the holder of the only slot reserved: %+v", i, m)
			}
		}
	}
	t.Logf("line rebuilt and pushed %v after Redis came back", time.Since(restartedAt).Round(time.Millisecond))

	// The admitted user's slot came back with it: its pass reserves, which frees the slot for the next.
	if code, body := srv.Reserve(t, "demo", adm0.Pass, "A1"); code != http.StatusCreated {
		t.Fatalf("reservation with the pass from before the restart = %d %v, want 201", code, body)
	}
	for i := 1; i < users; i++ {
		adm, _ := clients[i].Until(t, "admitted", 10*time.Second)
		seat := string(rune('A'+i)) + "1"
		if code, body := srv.Reserve(t, "demo", adm.Pass, seat); code != http.StatusCreated {
			t.Fatalf("user %d reserves %s = %d %v, want 201", i, seat, code, body)
		}
	}
	// A pass is spent once, even though Redis forgot it was spent: the database has the last word.
	if code, body := srv.Reserve(t, "demo", adm0.Pass, "J10"); code != http.StatusGone && code != http.StatusUnauthorized {
		t.Errorf("the first pass again = %d %v, want 410 PASS_SPENT or 401 (its slot is gone)", code, body)
	}
}
