// A reservation hands its slot to the next in line at once.

package flow

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// A reservation hands its slot to the next in line at once, through the whole server: with one slot and a
// tick every 3 s, the second client is admitted well before the tick after the first client's admission.
func TestReservationRefillsTheSlotAtOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		const interval = 3 * time.Second
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMISSION_INTERVAL":   interval.String(),
			"WAITROOM_ADMISSION_BATCH_SIZE": "1",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		})
		a := srv.Dial(t, "demo", "")
		if m := a.Next(t, 5*time.Second); m.Type != "queued" {
			t.Fatalf("first client's first message = %+v, want queued", m)
		}
		b := srv.Dial(t, "demo", "")
		if m := b.Next(t, 5*time.Second); m.Type != "queued" {
			t.Fatalf("second client's first message = %+v, want queued", m)
		}

		admA, _ := a.Until(t, "admitted", 2*interval)
		admittedA := time.Now() // within milliseconds of a tick: the next one is an interval away
		if code, body := srv.Reserve(t, "demo", admA.Pass, "A1"); code != http.StatusCreated {
			t.Fatalf("first client reserves: %d %v, want 201", code, body)
		}
		admB, _ := b.Until(t, "admitted", 2*interval)
		took := time.Since(admittedA)
		t.Logf("second client admitted %v after the first", took)
		if admB.Pass == "" {
			t.Errorf("second client's admission = %+v, want a pass", admB)
		}
		if limit := interval * 2 / 3; took > limit {
			t.Errorf("second client admitted %v after the first reserved its slot's seats, want within %v (before the next tick)", took, limit)
		}
	})
}
