// Tests of a room whose new places need a proof of work or an access code: nobody goes straight through,
// a browser goes to the room's page, and a JSON client is told to take its place on the socket, with no
// place registered for it.

package gate_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

func TestAGuardedRoomLetsNobodyStraightThroughAndRegistersNothing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 100, booking.GateAuto)
		cost := 50
		if err := f.store.SetPowCost(t.Context(), room, &cost); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // the gate reads the room again after a second
		resp, _ := f.get(t, "/checkout", "")
		wantLine(t, "a browser at a room with a proof of work", resp, "/checkout")
		resp, body := f.get(t, "/checkout", "", "Accept", "application/json")
		b := []byte(body)
		var a struct {
			Error                struct{ Code string }
			Token, State, Socket string
		}
		if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal(b, &a) != nil || a.Error.Code != "WAITING_ROOM" ||
			a.Token != "" || a.State != "entry" || a.Socket == "" {
			t.Errorf("a JSON client = %d %s, want 429 WAITING_ROOM, state entry, no token, the socket", resp.StatusCode, b)
		}
		if n, _, err := f.q.Counts(t.Context(), room); err != nil || n != 0 {
			t.Errorf("%d wait (%v), want nobody registered by the gate", n, err)
		}
		if n := len(f.origin.requests()); n != 0 {
			t.Errorf("the origin saw %d requests, want none", n)
		}
		zero := 0
		if err := f.store.SetPowCost(t.Context(), room, &zero); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		f.admitDirect(t) // with the proof of work off, straight through again
	})
}
