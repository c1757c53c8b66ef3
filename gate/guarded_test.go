// Tests of a room whose new places need a proof of work or an access code: nobody goes straight through,
// a browser goes to the room's page, and a JSON client is told to take its place on the socket, with no
// place registered for it. Each way a room becomes guarded is tried on its own: the screening's own cost,
// the server-wide default cost, and required access codes.

package gate_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/testenv"
)

func TestAGuardedRoomLetsNobodyStraightThroughAndRegistersNothing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 100, booking.GateAuto)
		advance := f.movableClock()
		cost := 50
		if err := f.store.SetPowCost(t.Context(), room, &cost); err != nil {
			t.Fatal(err)
		}
		advance(gate.RoomTTL) // the gate reads the room again after its TTL
		wantGuarded(t, f, "a room with a proof of work")
		zero := 0
		if err := f.store.SetPowCost(t.Context(), room, &zero); err != nil {
			t.Fatal(err)
		}
		advance(gate.RoomTTL)
		f.admitDirect(t) // with the proof of work off, straight through again
	})
}

func TestARoomRequiringCodesLetsNobodyStraightThroughAndRegistersNothing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 100, booking.GateAuto)
		advance := f.movableClock()
		zero := 0 // no proof of work, of its own nor by default: the codes alone guard the room
		if err := f.store.SetPowCost(t.Context(), room, &zero); err != nil {
			t.Fatal(err)
		}
		if err := f.store.SetCodesRequired(t.Context(), room, true); err != nil {
			t.Fatal(err)
		}
		wantGuarded(t, f, "a room requiring access codes")
		if err := f.store.SetCodesRequired(t.Context(), room, false); err != nil {
			t.Fatal(err)
		}
		advance(gate.RoomTTL) // the gate reads the room again after its TTL
		f.admitDirect(t)      // with the codes off, straight through again
	})
}

func TestTheDefaultProofOfWorkGuardsARoomWithoutACostOfItsOwn(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixtureCost(t, env, 100, booking.GateAuto, 50)
		advance := f.movableClock()
		wantGuarded(t, f, "a room under the default proof of work")
		zero := 0 // the room's own cost of none wins over the default
		if err := f.store.SetPowCost(t.Context(), room, &zero); err != nil {
			t.Fatal(err)
		}
		advance(gate.RoomTTL) // the gate reads the room again after its TTL
		f.admitDirect(t)
	})
}

// wantGuarded checks that f's room, guarded, sends a browser to its page and tells a JSON client to take
// its place on the socket (429, state entry, no token), registering nobody and forwarding nothing.
func wantGuarded(t *testing.T, f *fixture, what string) {
	t.Helper()
	resp, _ := f.get(t, "/checkout", "")
	wantLine(t, "a browser at "+what, resp, "/checkout")
	resp, body := f.get(t, "/checkout", "", "Accept", "application/json")
	b := []byte(body)
	var a struct {
		Error                struct{ Code string }
		Token, State, Socket string
	}
	if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal(b, &a) != nil || a.Error.Code != "WAITING_ROOM" ||
		a.Token != "" || a.State != "entry" || a.Socket == "" {
		t.Errorf("a JSON client at %s = %d %s, want 429 WAITING_ROOM, state entry, no token, the socket", what, resp.StatusCode, b)
	}
	if n, _, err := f.q.Counts(t.Context(), room); err != nil || n != 0 {
		t.Errorf("at %s: %d wait (%v), want nobody registered by the gate", what, n, err)
	}
	if n := len(f.origin.requests()); n != 0 {
		t.Errorf("at %s: the origin saw %d requests, want none", what, n)
	}
}
