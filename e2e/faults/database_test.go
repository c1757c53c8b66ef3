// PostgreSQL unreachable: a reservation fails closed, and the same pass reserves once it is back.

package faults

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// viaProxy returns databaseURL with its host:port replaced by a proxy's (the database, search_path and
// other parameters kept), and the proxy.
func viaProxy(t *testing.T, databaseURL string) (string, *testenv.Proxy) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	px := testenv.NewProxy(t, u.Host)
	u.Host = px.Addr()
	return u.String(), px
}

// With PostgreSQL unreachable, a reservation fails closed: 503 UNAVAILABLE, no seat lock left behind in
// Redis, and the pass not spent, so the same pass reserves once the database is back. Meanwhile the
// waiting room goes on (sockets stay open) and /readyz says the database is down.
func TestFaultDatabaseUnreachableReservationFailsClosed(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	proxied, px := viaProxy(t, env.DatabaseURL)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_DATABASE_URL":         proxied,
		"WAITROOM_ADMISSION_INTERVAL":   "300ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "1",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		"WAITROOM_ADMISSION_ACTIVE_TTL": "1m",
	})
	admitted := watch(t, srv, "admitted user", "demo", "")
	admitted.await(t, "queued", time.Time{}, 5*time.Second) // first in line: max_active 1 admits it alone
	waiting := watch(t, srv, "waiting user", "demo", "")
	waiting.await(t, "queued", time.Time{}, 5*time.Second)
	pass := admitted.await(t, "admitted", time.Time{}, 10*time.Second).Pass

	px.Cut()
	cutAt := time.Now()
	code, body := srv.Reserve(t, "demo", pass, "A1", "A2")
	if code != http.StatusServiceUnavailable || apptest.ErrorCode(body) != "UNAVAILABLE" {
		t.Errorf("reservation with the database cut = %d %v, want 503 UNAVAILABLE; server log:\n%s", code, body, serverLog(srv, "reservations"))
	}
	t.Logf("reservation refused %v after the cut", time.Since(cutAt).Round(time.Millisecond))

	locks, err := env.Redis.Keys(context.Background(), queue.Key(env.Prefix, "demo", "seat:*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Errorf("seat locks left in Redis after the refused reservation: %v", locks)
	}
	var ready map[string]string
	if code := srv.GetJSON(t, "/readyz", &ready); code != http.StatusServiceUnavailable || ready["database"] == "ok" || ready["redis"] != "ok" {
		t.Errorf("/readyz with the database cut = %d %v, want 503 with the database check failing", code, ready)
	}
	// The waiting room does not need the database once it knows the screening: a newcomer joins.
	newcomer := watch(t, srv, "newcomer", "demo", "")
	first := newcomer.await(t, "queued", time.Time{}, 5*time.Second)
	t.Logf("a socket opened with the database cut got %s (rank %d)", first.Type, first.Rank)
	// The cut lasts 2 s: what is checked is that the sockets outlive it, so nothing can be awaited but
	// its length.
	time.Sleep(time.Until(cutAt.Add(2 * time.Second)))
	for _, s := range []*socket{admitted, waiting, newcomer} {
		if err := s.ended(); err != nil {
			t.Errorf("%s: socket ended during the database cut: %v", s.name, err)
		}
	}

	px.Restore()
	restoredAt := time.Now()
	// The pool reconnects on demand: the same pass reserves, perhaps after a refusal or two.
	var refusals []int
	deadline := restoredAt.Add(15 * time.Second)
	for {
		code, body = srv.Reserve(t, "demo", pass, "A1", "A2")
		if code == http.StatusCreated {
			break
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("reservation after the restore = %d %v, want 201 (or 503 while the pool reconnects)", code, body)
		}
		refusals = append(refusals, code)
		if time.Now().After(deadline) {
			t.Fatalf("no 201 within 15s of the restore: %d refusals, last %d %v", len(refusals), code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("first 201 %v after the restore, after %d refusals", time.Since(restoredAt).Round(time.Millisecond), len(refusals))
	for {
		ready = nil
		code := srv.GetJSON(t, "/readyz", &ready)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %v 15s after the restore, want 200", code, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The reservation freed the only slot: the line moves on.
	waiting.await(t, "admitted", restoredAt, 10*time.Second)
	for _, s := range []*socket{admitted, waiting, newcomer} {
		if err := s.ended(); err != nil {
			t.Errorf("%s: socket ended: %v", s.name, err)
		}
	}
}
