// Tests of the pace of the places the gate registers for JSON clients: per client address, the pace of new
// sockets; over it, 429 RATE_LIMITED and nothing registered, or with the infinite queue on a place that is
// registered nowhere and never moves. The gate's clock is the test's, so the pace refills only when the
// test says.

package gate_test

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// place is the JSON answer as these tests read it.
type place struct {
	Error           struct{ Code string }
	Token, State    string
	Position, Total int64
}

// paced is a fixture whose JSON clients go to the line (queue_all), their places paced by rate, each
// client named by its X-Test-Client header, on a clock that moves only by advance.
func paced(t *testing.T, env *testenv.Env, rate *limit.Rate, infinite bool) (*fixture, func(time.Duration)) {
	t.Helper()
	f := newFixture(t, env, 1, booking.GateQueueAll, func(s *gate.Settings) {
		s.Registrations, s.InfiniteQueue = rate, infinite
		s.ClientAddress = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
		s.ReadTimeout = 0 // its deadline would be set by the test's clock
	})
	var offset atomic.Int64
	start := time.Now()
	f.g.SetClock(func() time.Time { return start.Add(time.Duration(offset.Load())) })
	return f, func(d time.Duration) { offset.Add(int64(d)) }
}

// ask is one JSON client's visit of /checkout from addr.
func (f *fixture) ask(t *testing.T, addr string) (*http.Response, place) {
	t.Helper()
	resp, body := f.get(t, "/checkout", "", "Accept", "application/json", "X-Test-Client", addr)
	var p place
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("JSON answer %q: %v", body, err)
	}
	return resp, p
}

func (f *fixture) waiting(t *testing.T) int64 {
	t.Helper()
	n, _, err := f.q.Counts(t.Context(), room)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAJSONClientsPlacesArePacedPerAddress(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f, advance := paced(t, env, limit.NewRate(2, 5), false)
		for i := range 5 {
			if resp, p := f.ask(t, "198.51.100.7"); resp.StatusCode != http.StatusTooManyRequests || p.Error.Code != "WAITING_ROOM" ||
				!queue.ValidToken(p.Token) || p.Position != int64(i+1) {
				t.Fatalf("place %d from one address = %d %+v, want 429 WAITING_ROOM with a token at %d (within the burst of 5)", i+1, resp.StatusCode, p, i+1)
			}
		}
		resp, p := f.ask(t, "198.51.100.7")
		if resp.StatusCode != http.StatusTooManyRequests || p.Error.Code != "RATE_LIMITED" || p.Token != "" || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("a 6th place from the address = %d %+v, Retry-After %q, want 429 RATE_LIMITED, no token, Retry-After 1",
				resp.StatusCode, p, resp.Header.Get("Retry-After"))
		}
		if n := f.waiting(t); n != 5 {
			t.Errorf("%d wait after the refused place, want the 5 registered", n)
		}
		if resp, p := f.ask(t, "203.0.113.9"); p.Error.Code != "WAITING_ROOM" || p.Position != 6 {
			t.Errorf("another address = %d %+v, want a place at 6: the pace is per address", resp.StatusCode, p)
		}
		// A browser is sent to the room's page, which registers nothing here: not paced.
		resp, _ = f.get(t, "/checkout", "", "X-Test-Client", "198.51.100.7")
		wantLine(t, "a browser from the paced address", resp, "/checkout")

		// A second later the address has two more (2/s), and no third.
		advance(time.Second)
		for i := range 2 {
			if _, p := f.ask(t, "198.51.100.7"); p.Error.Code != "WAITING_ROOM" {
				t.Errorf("place %d from the address a second later = %+v, want a place", i+1, p)
			}
		}
		if _, p := f.ask(t, "198.51.100.7"); p.Error.Code != "RATE_LIMITED" {
			t.Errorf("a third place from the address a second later = %+v, want RATE_LIMITED", p)
		}
		if n := f.waiting(t); n != 8 {
			t.Errorf("%d wait, want 8 (5, 1 and 2 places)", n)
		}
		if got := f.count(t, room, "rate_limited"); got != 2 {
			t.Errorf("rate_limited = %v, want 2", got)
		}
	})
}

func TestAnAddressOverItsPaceIsHeldInTheInfiniteQueue(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f, _ := paced(t, env, limit.NewRate(0.001, 2), true)
		for range 2 {
			if _, p := f.ask(t, "198.51.100.7"); p.Error.Code != "WAITING_ROOM" || !queue.ValidToken(p.Token) {
				t.Fatalf("a place within the burst = %+v, want a place", p)
			}
		}
		seen := map[string]bool{}
		for i := range 3 {
			resp, p := f.ask(t, "198.51.100.7")
			if resp.StatusCode != http.StatusTooManyRequests || p.Error.Code != "WAITING_ROOM" || p.State != "waiting" ||
				!queue.ValidToken(p.Token) || seen[p.Token] || p.Position != 3 || p.Total != 3 {
				t.Errorf("held answer %d = %d %+v, want what a new place behind the 2 waiting looks like (429 WAITING_ROOM, waiting, a new token, 3 of 3)",
					i+1, resp.StatusCode, p)
			}
			seen[p.Token] = true
			if e, err := f.q.Status(t.Context(), room, p.Token); err == nil && e.State != queue.Unknown {
				t.Errorf("the held token %s stands %+v, want it registered nowhere", p.Token, e)
			}
			if rank, ok, err := f.q.Decoy(t.Context(), room, p.Token); err != nil || !ok || rank != 2 {
				t.Errorf("the held token's decoy place = %d, %v, %v; want 2 (shown 3rd), so the status route answers it as waiting", rank, ok, err)
			}
		}
		if n := f.waiting(t); n != 2 {
			t.Errorf("%d wait, want the 2 registered places only", n)
		}
		if got := f.count(t, room, "held"); got != 3 {
			t.Errorf("held = %v, want 3", got)
		}
	})
}
