// The classes of work under overload: the payment backend's confirm gets a database connection while the
// buyers hold every connection they may; a socket that finds every handshake slot taken is told BUSY with
// its wait, keeps its place, and comes back to it, while confirms and reservations go on.

package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/overload"
	"github.com/waitroom/waitroom/testenv"
)

// holdAll takes every slot of g that class c may take and returns what gives them back (also run when the
// test ends).
func holdAll(t *testing.T, g *overload.Gate, c overload.Class) (release func()) {
	t.Helper()
	var dones []func()
	release = func() {
		for _, done := range dones {
			done()
		}
	}
	t.Cleanup(release)
	for range g.Limit(c) { // a slot still held by the server's own work (a closing socket's) comes back soon
		ctx, cancel := context.WithTimeout(overload.With(context.Background(), c), time.Second)
		done, err := g.Take(ctx)
		cancel()
		if err != nil {
			t.Fatalf("holding the %s slots: %v", c, err)
		}
		dones = append(dones, done)
	}
	return release
}

func TestAConfirmGetsAConnectionWhileBuyersHoldAllTheirs(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			holdMode(c)
			c.Booking.DBTimeout = 300 * time.Millisecond // a reservation with no connection gives up soon
		})
		g := a.app.DBGate
		if g.Size() == 1 {
			t.Skipf("a pool of %d connection(s) keeps no room for payments; the real database's does", g.Size())
		}
		passes := a.admit(t, "s1", 3)
		var first, held orderView
		created(t, a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`), &first)
		created(t, a.reserve(t, "s1", passes[2], `{"seats":["A3"]}`), &held)
		// A first confirm: payments come, so their room is kept (it is lent while none do).
		if r := a.post(t, "/api/orders/"+first.Code+"/confirm", "Bearer "+confirmKey); r.status != http.StatusOK {
			t.Fatalf("first confirm = %d %s", r.status, r)
		}

		holdAll(t, g, overload.Buyer)
		// A buyer now waits for a connection it does not get within the reservation's bound...
		if r := a.reserve(t, "s1", passes[1], `{"seats":["A2"]}`); r.status != http.StatusServiceUnavailable {
			t.Errorf("a reservation while buyers hold every connection they may = %d %s, want 503", r.status, r)
		}
		// /readyz asks whether the database answers, not whether requests queue for it: its ping passes no
		// gate, so a saturated instance stays in its load balancer.
		if r := a.get(t, "/readyz"); r.status != http.StatusOK {
			t.Errorf("GET /readyz while buyers hold every connection they may = %d %s, want 200", r.status, r)
		}
		// ...and the payment backend's confirm takes the room kept for it, at once.
		r := a.post(t, "/api/orders/"+held.Code+"/confirm", "Bearer "+confirmKey)
		var got orderView
		decode(t, "confirm", r, &got)
		if r.status != http.StatusOK || got.Status != "confirmed" {
			t.Fatalf("confirm while buyers hold every connection they may = %d %s, want 200 confirmed", r.status, r)
		}
		m := a.metrics(t)
		for _, want := range []string{`waitroom_work_wait_seconds_count{class="payment",resource="database"}`,
			`waitroom_work_refused_total{class="buyer",resource="database"} 1`} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

func TestASocketRefusedAHandshakeSlotKeepsItsPlaceWhileBuyersGoOn(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			holdMode(c)
			c.Overload.Handshakes, c.Overload.HandshakeWait, c.Overload.RetryAfter = 2, 100*time.Millisecond, 3*time.Second
		})
		passes := a.admit(t, "s1", 1)
		first := a.helloSocket(t, []byte(`{"type":"hello"}`))
		placed := first.Next(t, readWait)
		if placed.Type != "queued" || placed.Rank != 1 {
			t.Fatalf("first message = %+v, want queued rank 1", placed)
		}
		first.Close()

		release := holdAll(t, a.app.Handshakes, overload.Arrival)
		for _, hello := range []string{`{"type":"hello","token":"` + placed.Token + `"}`, `{"type":"hello"}`} {
			s := a.helloSocket(t, []byte(hello))
			m := s.Next(t, readWait)
			if m.Type != "error" || m.Code != "BUSY" || m.RetryAfterMs != 3000 {
				t.Errorf("socket with every handshake slot taken = %+v, want error BUSY, retry_after_ms 3000", m)
			}
			if code := s.CloseCode(t, readWait); code != 1013 {
				t.Errorf("close after BUSY = %d, want 1013", code)
			}
		}
		// Buyers are not arrivals: a reservation and a confirm go through.
		var held orderView
		created(t, a.reserve(t, "s1", passes[0], `{"seats":["B1"]}`), &held)
		if r := a.post(t, "/api/orders/"+held.Code+"/confirm", "Bearer "+confirmKey); r.status != http.StatusOK {
			t.Errorf("confirm while the handshakes are saturated = %d %s, want 200", r.status, r)
		}
		if !strings.Contains(a.metrics(t), `waitroom_work_refused_total{class="arrival",resource="handshake"} 2`) {
			t.Error(`/metrics lacks waitroom_work_refused_total{class="arrival",resource="handshake"} 2`)
		}
		// The refused token comes back to its place; the refused newcomer registered nothing.
		release()
		again := a.helloSocket(t, []byte(`{"type":"hello","token":"`+placed.Token+`"}`))
		if m := again.Next(t, readWait); m.Type != "queued" || m.Token != placed.Token || m.Rank != 1 || m.Inserted {
			t.Errorf("reconnect after BUSY = %+v, want queued, the same token, rank 1, not inserted", m)
		}
		if n, _, err := a.q.Counts(context.Background(), "s1"); err != nil || n != 1 {
			t.Errorf("the line holds %d (%v), want 1: the refused newcomer took no place", n, err)
		}
	})
}

// takes reads how many slots class took at the database's gate so far, from /metrics.
func (a *testServer) takes(t *testing.T, class string) int {
	t.Helper()
	prefix := `waitroom_work_wait_seconds_count{class="` + class + `",resource="database"} `
	for _, line := range strings.Split(a.metrics(t), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("%s%s: %v", prefix, rest, err)
			}
			return n
		}
	}
	return 0
}

// A request that has begun keeps its database slot for its statements in turn: a reservation from its
// transaction to the count after its commit, a confirm for its read, its write and its count. Each takes
// one slot, so none queues again behind other requests while its locks and its hold's clock run.
func TestAReservationAndAConfirmEachTakeOneDatabaseSlot(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, holdMode)
		passes := a.admit(t, "s1", 2)
		var warm, held orderView
		created(t, a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`), &warm) // the catalog is read once, here
		buyers, payments := a.takes(t, "buyer"), a.takes(t, "payment")
		created(t, a.reserve(t, "s1", passes[1], `{"seats":["A2"]}`), &held)
		if got := a.takes(t, "buyer") - buyers; got != 1 {
			t.Errorf("a reservation took %d database slots, want 1", got)
		}
		if r := a.post(t, "/api/orders/"+held.Code+"/confirm", "Bearer "+confirmKey); r.status != http.StatusOK {
			t.Fatalf("confirm = %d %s", r.status, r)
		}
		if got := a.takes(t, "payment") - payments; got != 1 {
			t.Errorf("a confirm took %d database slots, want 1", got)
		}
	})
}
