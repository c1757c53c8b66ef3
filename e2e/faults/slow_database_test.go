// A slow PostgreSQL: a reservation fails closed within booking.db_timeout.

package faults

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// With a slow PostgreSQL (a second each way per round trip), a reservation fails closed after
// booking.db_timeout rather than after minutes: 503 UNAVAILABLE, no seat lock left, and the pass not spent,
// so it reserves once the database is quick again.
func TestFaultSlowDatabaseReservationFailsClosedInTime(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	proxied, px := viaProxy(t, env.DatabaseURL)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_DATABASE_URL":         proxied,
		"WAITROOM_BOOKING_DB_TIMEOUT":   "1500ms",
		"WAITROOM_ADMISSION_INTERVAL":   "300ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "1",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "1",
		"WAITROOM_ADMISSION_ACTIVE_TTL": "1m",
	})
	// The first user warms the pool and the seat catalog while the database is quick; its reservation frees
	// the only slot for the second, whose pass meets the slow database.
	// (One after the other: a socket is in line once its first message arrives, not when its dial returns.)
	a := srv.Dial(t, "demo", "")
	a.Next(t, 5*time.Second)
	b := srv.Dial(t, "demo", "")
	b.Next(t, 5*time.Second)
	first, _ := a.Until(t, "admitted", 10*time.Second)
	if code, body := srv.Reserve(t, "demo", first.Pass, "J9"); code != http.StatusCreated {
		t.Fatalf("warm-up reservation = %d %v, want 201", code, body)
	}
	adm, _ := b.Until(t, "admitted", 10*time.Second)

	px.Delay(time.Second)
	began := time.Now()
	code, body := srv.Reserve(t, "demo", adm.Pass, "A1")
	t.Logf("reservation with a slow database answered %d %s after %v", code, apptest.ErrorCode(body), time.Since(began).Round(time.Millisecond))
	if code != http.StatusServiceUnavailable || apptest.ErrorCode(body) != "UNAVAILABLE" {
		t.Errorf("reservation with a slow database = %d %v, want 503 UNAVAILABLE", code, body)
	}
	px.Delay(0)
	locks, err := env.Redis.Keys(context.Background(), queue.Key(env.Prefix, "demo", "seat:*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Errorf("seat locks left in Redis after the refused reservation: %v", locks)
	}
	var got int
	deadline := time.Now().Add(15 * time.Second)
	for got != http.StatusCreated && time.Now().Before(deadline) {
		got, body = srv.Reserve(t, "demo", adm.Pass, "A1")
		if got != http.StatusCreated {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if got != http.StatusCreated {
		t.Errorf("the same pass once the database is quick again = %d %v, want 201 (it was not spent)", got, body)
	}
}
