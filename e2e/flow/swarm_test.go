// A swarm of virtual users (package swarm) against one server sells each seat once.

package flow

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/swarm"
	"github.com/waitroom/waitroom/testenv"
)

// TestSwarmSellsEachSeatOnceAndTellsEveryoneElse sends 300 virtual users at a 30-seat screening: exactly 30
// get a ticket, the other 270 are told sold_out (none left hanging, none failing), and the seat map holds
// exactly the tickets' seats, none sold twice.
func TestSwarmSellsEachSeatOnceAndTellsEveryoneElse(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s30", 3, 10)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_DEMO_ENABLED":         "false",
			"WAITROOM_ADMISSION_INTERVAL":   "100ms",
			"WAITROOM_ADMISSION_BATCH_SIZE": "10",
			"WAITROOM_ADMISSION_MAX_ACTIVE": "30",
		})
		rep, err := swarm.Run(context.Background(), swarm.Config{
			URL: srv.URL, Screening: "s30", Users: 300, Concurrency: 300, Seats: 1,
			// The last batch of ten races for the last ten seats; a user who loses four draws in a row
			// (about 1 run in 600) would give up. Ten retries make that vanishingly rare: the counts
			// below must be exact.
			Retries: 10,
			Timeout: time.Minute,
		}, nil)
		if err != nil {
			t.Fatalf("swarm.Run = %v", err)
		}
		var table bytes.Buffer
		_ = rep.WriteTable(&table)
		if want := (swarm.Outcomes{Ticket: 30, SoldOut: 270}); rep.Outcomes != want {
			t.Errorf("outcomes = %+v, want %+v", rep.Outcomes, want)
		}
		if !rep.Verification.OK {
			t.Errorf("verification failed: %q", rep.Verification.Problems)
		}
		if rep.Verification.SoldDuring != 30 || rep.Verification.TicketSeats != 30 {
			t.Errorf("sold during the run %d, seats in tickets %d; want 30 and 30", rep.Verification.SoldDuring, rep.Verification.TicketSeats)
		}
		if rep.Stopped != "" {
			t.Errorf("run stopped early (%s), want it to finish by itself", rep.Stopped)
		}
		if rep.Latency.Connect.Count != 300 || rep.Latency.Queue.Count < 30 || rep.Latency.Reservation.Count < 30 {
			t.Errorf("latency counts connect %d, queue %d, reservation %d; want 300, ≥30, ≥30",
				rep.Latency.Connect.Count, rep.Latency.Queue.Count, rep.Latency.Reservation.Count)
		}
		if t.Failed() {
			t.Logf("report:\n%s", table.String())
		} else {
			t.Logf("swarm done in %dms, %d reconnects", rep.ElapsedMs, rep.Reconnects)
		}
	})
}
