// The gate's JSON places and the waiting room's sockets draw on one pace of new places per client address
// (limits.registrations_per_second and registration_burst): an address cannot get a burst from each.

package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestTheGatesJSONPlacesAndTheSocketsShareOnePacePerAddress(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "origin")
		}))
		t.Cleanup(origin.Close)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_GATE_UPSTREAM": origin.URL, "WAITROOM_GATE_ADDR": "127.0.0.1:0", "WAITROOM_GATE_PATHS": "/checkout=demo",
			"WAITROOM_GATE_MODE":                       "queue_all", // every JSON client is given a place
			"WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND": "0.001",     // a burst of 3, then one in about 17 minutes
			"WAITROOM_LIMITS_REGISTRATION_BURST":       "3",
		})
		gateURL := gateOf(t, srv)
		place := func() string {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, gateURL+"/checkout", nil)
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var a struct{ Error struct{ Code string } }
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				t.Fatalf("the gate's JSON answer: %v", err)
			}
			return a.Error.Code
		}
		socket := func() string {
			t.Helper()
			m := srv.Dial(t, "demo", "").Next(t, 5*time.Second)
			if m.Type == "error" {
				return m.Code
			}
			return m.Type
		}
		// From one address (127.0.0.1): a socket, two JSON places, then neither.
		for i, c := range []struct {
			what, when string
			take       func() string
			want       string
		}{
			{"a new socket", "the burst's first", socket, "queued"},
			{"a JSON place at the gate", "the burst's second", place, "WAITING_ROOM"},
			{"a JSON place at the gate", "the burst's third", place, "WAITING_ROOM"},
			{"a JSON place at the gate", "past the burst, which a socket shared", place, "RATE_LIMITED"},
			{"a new socket", "past the burst, which the gate shared", socket, "RATE_LIMITED"},
		} {
			if got := c.take(); got != c.want {
				t.Errorf("%d. %s (%s) = %s, want %s", i+1, c.what, c.when, got, c.want)
			}
		}
	})
}

// With bots.infinite_queue on, a JSON client over the pace is shown a place as a held socket is: nothing
// is registered for it, and the status route answers its token as a waiting one's, as it does a held
// socket's. (The demo's line moves while the test runs: a token's standing is read, not
// the line's length.)
func TestTheGateHoldsAJSONClientOverThePaceWithTheInfiniteQueueOn(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(origin.Close)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_GATE_UPSTREAM": origin.URL, "WAITROOM_GATE_ADDR": "127.0.0.1:0", "WAITROOM_GATE_PATHS": "/checkout=demo",
			"WAITROOM_GATE_MODE": "queue_all", "WAITROOM_BOTS_INFINITE_QUEUE": "true",
			"WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND": "0.001", "WAITROOM_LIMITS_REGISTRATION_BURST": "1",
		})
		gateURL := gateOf(t, srv)
		for i := range 3 {
			req, _ := http.NewRequest(http.MethodGet, gateURL+"/checkout", nil)
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var a struct {
				Error           struct{ Code string }
				Token, State    string
				Position, Total int64
			}
			err = json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusTooManyRequests || a.Error.Code != "WAITING_ROOM" || a.Token == "" {
				t.Fatalf("JSON client %d = %d %+v (%v), want 429 WAITING_ROOM with a token", i+1, resp.StatusCode, a, err)
			}
			var standing struct{ Status string }
			if code := srv.GetJSON(t, "/api/screenings/demo/queue/"+a.Token, &standing); code != http.StatusOK {
				t.Fatalf("GET the standing of client %d's token = %d, want 200", i+1, code)
			}
			if i == 0 {
				if standing.Status != "waiting" && standing.Status != "admitted" {
					t.Errorf("the first client's token (within the burst) stands %q, want it registered", standing.Status)
				}
				continue
			}
			if a.State != "waiting" || a.Position < 1 || a.Position != a.Total || standing.Status != "waiting" {
				t.Errorf("JSON client %d over the pace = %+v, its token %q, want waiting behind everyone (position = total), "+
					"its token answered as a waiting one's", i+1, a, standing.Status)
			}
		}
	})
}

// gateOf is the URL of srv's gate, once it has printed it.
func gateOf(t *testing.T, srv *apptest.Server) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if u := printed(srv.Out, "waitroom: gate "); u != "" {
			return u
		}
	}
	t.Fatalf("the gate's URL was not printed; output:\n%s", srv.Out)
	return ""
}
