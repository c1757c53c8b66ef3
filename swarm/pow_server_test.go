// Tests of whole runs against the real server in this process (apptest, on testenv's backends): users that
// solve the screening's proof of work before they dial, and a run against a screening that asks for none.

package swarm_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/swarm"
	"github.com/waitroom/waitroom/testenv"
)

// powRun sends 20 users at a 20-seat screening of a server whose pow.cost is cost (10 PBKDF2 iterations a
// derivation, so that a solve is quick), and returns the report and the challenges the server issued.
func powRun(t *testing.T, env *testenv.Env, cost string) (swarm.Report, int) {
	t.Helper()
	env.Demo(t, "pow20", 2, 10)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_DEMO_ENABLED":         "false",
		"WAITROOM_ADMISSION_INTERVAL":   "100ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "10",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "20",
		"WAITROOM_POW_COST":             cost,
		"WAITROOM_POW_ITERATIONS":       "10",
	})
	rep, err := swarm.Run(context.Background(), swarm.Config{
		URL: srv.URL, Screening: "pow20", Users: 20, Seats: 1, Retries: 10, Timeout: time.Minute,
	}, nil)
	if err != nil {
		t.Fatalf("swarm.Run = %v", err)
	}
	if !rep.Verification.OK {
		t.Errorf("verification failed: %q", rep.Verification.Problems)
	}
	if want := (swarm.Outcomes{Ticket: 20}); rep.Outcomes != want || len(rep.Errors) != 0 {
		t.Errorf("outcomes = %+v (errors %v), want %+v and no errors", rep.Outcomes, rep.Errors, want)
	}
	if rep.Registration.Registered != 20 {
		t.Errorf("registered = %d, want 20", rep.Registration.Registered)
	}
	issued, _ := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, "waitroom_pow_challenges_total")
	if t.Failed() {
		var table bytes.Buffer
		_ = rep.WriteTable(&table)
		t.Logf("report:\n%s", table.String())
	}
	return rep, issued
}

func TestEveryUserSolvesTheProofOfWorkAndReserves(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		rep, issued := powRun(t, env, "20")
		p := rep.Pow
		if p == nil {
			t.Fatal("report without proof-of-work figures, want them for a screening of cost 20")
		}
		// A user solves once per dial for a new place: 20 users, no reconnect without a token here.
		if p.Cost != 20 || p.Solves.Count != 20 || p.Waits.Count != 20 || p.ChallengeFailures != 0 {
			t.Errorf("pow = %+v, want cost 20, 20 solves, 20 waits, no challenge failure", *p)
		}
		if issued != 20 {
			t.Errorf("the server issued %d challenges, want 20", issued)
		}
		if p.Solves.P50Ms <= 0 || p.Solves.P50Ms > p.Solves.P90Ms || p.Solves.P90Ms > p.Solves.P99Ms || p.Solves.P99Ms > p.Solves.MaxMs {
			t.Errorf("solve figures %+v, want 0 < p50 <= p90 <= p99 <= max", p.Solves)
		}
		if reg := rep.Registration; reg.ArrivalMs < reg.BurstMs || reg.PerSecond <= 0 {
			t.Errorf("registration %+v, want the arrival (from the first challenge) to cover the burst (from the first dial)", reg)
		}
	})
}

func TestWithoutProofOfWorkNoChallengeIsFetched(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		rep, issued := powRun(t, env, "0")
		if rep.Pow != nil {
			t.Errorf("pow = %+v, want none for a screening that asks for no proof of work", *rep.Pow)
		}
		if issued != 0 {
			t.Errorf("the server issued %d challenges, want 0", issued)
		}
		if reg := rep.Registration; reg.ArrivalMs != reg.BurstMs {
			t.Errorf("registration %+v, want the arrival to be the burst from the first dial", reg)
		}
	})
}
