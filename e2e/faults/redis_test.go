// Redis behind a fault proxy: every connection reset mid-sale loses nothing, and Redis unreachable for a
// few seconds fails closed and resumes in queue order.

package faults

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// admissionTime is when the server admitted a user: its expiry less the active_ttl it was started with.
func admissionTime(t *testing.T, m message, ttl time.Duration) time.Time {
	t.Helper()
	exp, err := time.Parse(time.RFC3339, m.ExpiresAt)
	if err != nil {
		t.Fatalf("admitted %+v: expires_at: %v", m, err)
	}
	return exp.Add(-ttl)
}

// joinLine registers n users on demo, one after the other (registration order is their index), and
// checks each was put at the end of the line.
func joinLine(t *testing.T, srv *apptest.Server, n int) []*socket {
	t.Helper()
	users := make([]*socket, n)
	for i := range users {
		users[i] = watch(t, srv, fmt.Sprintf("user %d", i), "demo", "")
		first := users[i].await(t, "queued", time.Time{}, 5*time.Second)
		if !first.Inserted {
			t.Fatalf("user %d's first message = %+v, want queued, inserted", i, first.Message)
		}
	}
	return users
}

// admittedCount is how many of users have received an admission.
func admittedCount(users []*socket) int {
	n := 0
	for _, u := range users {
		if len(ofType(u.messages(), "admitted")) > 0 {
			n++
		}
	}
	return n
}

// waitAdmitted waits until at least n of users were admitted.
func waitAdmitted(t *testing.T, users []*socket, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for admittedCount(users) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d users admitted within %v, want %d", admittedCount(users), len(users), timeout, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// admittedOnceInOrder checks every user received exactly one admission, that admissions followed
// registration order (one per tick: each expiry later than the previous user's), and that no socket
// was closed.
func admittedOnceInOrder(t *testing.T, users []*socket, ttl time.Duration) []time.Time {
	t.Helper()
	at := make([]time.Time, len(users))
	for i, u := range users {
		adm := ofType(u.messages(), "admitted")
		if len(adm) != 1 {
			t.Errorf("user %d received %d admitted messages, want exactly 1: %s", i, len(adm), u)
			if len(adm) == 0 {
				continue
			}
		}
		at[i] = admissionTime(t, adm[0], ttl)
		if i > 0 && !at[i-1].IsZero() && !at[i].After(at[i-1]) {
			t.Errorf("user %d admitted at %s, not after user %d (%s): admission out of registration order",
				i, at[i].Format("15:04:05.000"), i-1, at[i-1].Format("15:04:05.000"))
		}
		if err := u.ended(); err != nil {
			t.Errorf("user %d's socket ended: %v", i, err)
		}
	}
	return at
}

// interval is the admission interval of the Redis fault tests.
const interval = 300 * time.Millisecond

// proxiedRedis starts a redis-server of the test's own, a proxy in front of it, and the server on the
// proxy.
func proxiedRedis(t *testing.T, ttl time.Duration) (*apptest.Server, *testenv.Proxy) {
	t.Helper()
	rs := testenv.StartRedis(t)
	env := testenv.Standalone(t, rs.Addr)
	px := testenv.NewProxy(t, rs.Addr)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_REDIS_ADDR":           px.Addr(),
		"WAITROOM_ADMISSION_INTERVAL":   interval.String(),
		"WAITROOM_ADMISSION_BATCH_SIZE": "1",
		"WAITROOM_ADMISSION_ACTIVE_TTL": ttl.String(),
	})
	return srv, px
}

// ticksPass waits until srv has run n more admission ticks of demo to their end (the tick's duration is
// observed once it has published), failing the test if they do not come within a few seconds.
func ticksPass(t *testing.T, srv *apptest.Server, n int) {
	t.Helper()
	const series = `waitroom_admission_tick_duration_seconds_count{screening="demo"}`
	ticks := func() int { v, _ := apptest.MetricSeries(t, http.DefaultClient, srv.OpsURL, series); return v }
	want := ticks() + n
	for deadline := time.Now().Add(10*interval + 5*time.Second); ticks() < want; time.Sleep(interval / 10) {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d: the ticks stopped", series, ticks(), want)
		}
	}
}

// A reset of every Redis connection mid-sale (the hub's subscription, the scheduler's, the pool's) loses
// nothing: Redis kept the line, and every user is admitted exactly once, in the order they came, on the
// sockets they opened before the reset.
func TestFaultRedisResetKeepsEveryPlace(t *testing.T) {
	const ttl = time.Minute
	srv, px := proxiedRedis(t, ttl)
	const n = 10
	users := joinLine(t, srv, n)

	waitAdmitted(t, users, 2, 10*time.Second)
	px.Reset()
	firstReset := time.Now()
	waitAdmitted(t, users, 5, 15*time.Second)
	px.Reset()
	secondReset := time.Now()
	waitAdmitted(t, users, n, 20*time.Second)
	ticksPass(t, srv, 3) // three more ticks: room for a duplicate admission to show

	at := admittedOnceInOrder(t, users, ttl)
	var st map[string]any
	if code := srv.GetJSON(t, "/api/screenings/demo", &st); code != http.StatusOK || st["waiting"] != float64(0) || st["active"] != float64(n) {
		t.Errorf("GET /api/screenings/demo = %d %v, want waiting 0, active %d", code, st, n)
	}
	notes := 0
	for _, u := range users {
		notes += len(ofType(u.messages(), "unavailable"))
	}
	for i := range at {
		t.Logf("user %d admitted at %s", i, at[i].Format("15:04:05.000"))
	}
	t.Logf("resets at %s and %s; %d sockets were told unavailable (a reset the hub's check does not notice tells nobody)",
		firstReset.Format("15:04:05.000"), secondReset.Format("15:04:05.000"), notes)
}

// Redis unreachable for about 3 s (every connection reset, new ones refused) fails closed and recovers:
// sockets stay open and are told unavailable then available; nobody is admitted meanwhile; new sockets get
// UNAVAILABLE and close 1013, a reservation 503, /readyz 503; afterwards admission goes on in queue order,
// and a pass from before the cut still reserves.
func TestFaultRedisUnreachableFailsClosedAndResumes(t *testing.T) {
	const ttl = time.Minute
	srv, px := proxiedRedis(t, ttl)
	const n = 8
	users := joinLine(t, srv, n)
	waitAdmitted(t, users, 2, 10*time.Second)
	pass := ofType(users[0].messages(), "admitted")[0].Pass

	px.Cut()
	cutAt := time.Now()
	for i, u := range users {
		u.await(t, "unavailable", cutAt, 10*time.Second)
		if i == 0 {
			t.Logf("first socket told unavailable %v after the cut", time.Since(cutAt).Round(time.Millisecond))
		}
	}
	told := time.Since(cutAt)

	newcomer := watch(t, srv, "newcomer", "demo", "")
	select {
	case <-newcomer.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("a socket opened during the cut is still open after 10s: %s", newcomer)
	}
	var ce *websocket.CloseError
	if got := newcomer.messages(); len(got) != 1 || got[0].Type != "error" || got[0].Code != "UNAVAILABLE" {
		t.Errorf("a socket opened during the cut got %+v, want one error UNAVAILABLE", got)
	}
	if err := newcomer.ended(); !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Errorf("a socket opened during the cut ended with %v, want close 1013", err)
	}
	if code, body := srv.Reserve(t, "demo", pass, "A1"); code != http.StatusServiceUnavailable || apptest.ErrorCode(body) != "UNAVAILABLE" {
		t.Errorf("reservation during the cut = %d %v, want 503 UNAVAILABLE; server log:\n%s", code, body, serverLog(srv, "reservations"))
	}
	var ready map[string]string
	if code := srv.GetJSON(t, "/readyz", &ready); code != http.StatusServiceUnavailable || ready["redis"] == "ok" {
		t.Errorf("/readyz during the cut = %d %v, want 503 with the redis check failing", code, ready)
	}
	if ready["database"] != "ok" {
		// The checks share one deadline: a Redis check that uses it up fails the database's too.
		t.Logf("/readyz during the cut blamed the database as well: %v", ready)
	}
	// The cut lasts 3 s whatever happens meanwhile: the fault's length is the scenario, not an event.
	time.Sleep(time.Until(cutAt.Add(3 * time.Second)))

	admittedBefore := admittedCount(users)
	px.Restore()
	restoredAt := time.Now()
	for i, u := range users {
		u.await(t, "available", restoredAt, 15*time.Second)
		if i == 0 {
			t.Logf("first socket told available %v after the restore", time.Since(restoredAt).Round(time.Millisecond))
		}
	}
	waitAdmitted(t, users, n, 20*time.Second)
	ticksPass(t, srv, 3)

	at := admittedOnceInOrder(t, users, ttl)
	var firstAfter time.Time
	for i, u := range users {
		msgs := u.messages()
		// Told once each way, in that order.
		if un, av := ofType(msgs, "unavailable"), ofType(msgs, "available"); len(un) != 1 || len(av) != 1 || av[0].At.Before(un[0].At) {
			t.Errorf("user %d: %d unavailable and %d available, want one of each in that order: %s", i, len(un), len(av), u)
		}
		adm := ofType(msgs, "admitted")
		// An admission told during the cut must have been made before it (in flight at the cut). A tick due
		// during the cut may run once Redis is back (its Redis client retries), keeping its due time: that
		// is no admission during the cut, as long as it was told after the restore.
		if len(adm) > 0 && at[i].After(cutAt) && at[i].Before(restoredAt) {
			if adm[0].At.Before(restoredAt) {
				t.Errorf("user %d admitted at %s and told at %s, during the cut (%s to %s)", i, at[i].Format("15:04:05.000"),
					adm[0].At.Format("15:04:05.000"), cutAt.Format("15:04:05.000"), restoredAt.Format("15:04:05.000"))
			} else {
				t.Logf("user %d: a tick due at %s, during the cut, admitted it after the restore (told at %s)", i,
					at[i].Format("15:04:05.000"), adm[0].At.Format("15:04:05.000"))
			}
		}
		if len(adm) == 0 || adm[0].At.Before(restoredAt) {
			continue
		}
		if firstAfter.IsZero() || adm[0].At.Before(firstAfter) {
			firstAfter = adm[0].At
		}
		// Still waiting two intervals after the line ran again: the subscription was restored and the line
		// moved meanwhile, so a fresh position came before its own admission. (A user admitted sooner may
		// get its admission first: a tick due during the cut and the next one can run back to back.)
		fresh := slices.ContainsFunc(ofType(msgs, "position"), func(m message) bool {
			return !m.At.Before(restoredAt) && m.At.Before(adm[0].At)
		})
		if av := ofType(msgs, "available"); len(av) > 0 && adm[0].At.Sub(av[0].At) > 2*interval && !fresh {
			t.Errorf("user %d, waiting at the restore: no position between the restore and its admission: %s", i, u)
		}
	}
	if code, body := srv.Reserve(t, "demo", pass, "A1"); code != http.StatusCreated {
		t.Errorf("reservation after the restore with a pass from before the cut = %d %v, want 201", code, body)
	}
	t.Logf("cut %s–%s; every socket told unavailable within %v; %d admitted before the cut; first admission %v after the restore",
		cutAt.Format("15:04:05.000"), restoredAt.Format("15:04:05.000"), told.Round(time.Millisecond), admittedBefore,
		firstAfter.Sub(restoredAt).Round(time.Millisecond))
}
