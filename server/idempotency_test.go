package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// reserveWithKey posts body to a screening's reservations with the pass and an Idempotency-Key header. It
// is safe from any goroutine.
func (a *testServer) reserveWithKey(screening, pass, key, body string) (response, error) {
	req, err := http.NewRequest(http.MethodPost, a.ts.URL+"/api/screenings/"+screening+"/reservations", strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+pass)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := a.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, body: b}, err
}

func reservationRows(t *testing.T, env *testenv.Env, screening string) int {
	t.Helper()
	var n int
	if err := env.DB.Get(&n, env.DB.Rebind(`SELECT COUNT(*) FROM reservations WHERE screening_id = ?`), screening); err != nil {
		t.Fatal(err)
	}
	return n
}

// A retry with the same Idempotency-Key gets the very same answer; the key with another body is 422; a key
// that is not 1 to 255 visible ASCII characters is 400 and spends nothing.
func TestIdempotentRetryReturnsTheSameReservation(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		passes := a.admit(t, "s1", 7)

		t.Run("one after the other", func(t *testing.T) {
			const key = "0b7e6f0c-5d1e-4c4b-9a52-2f3f4f6d7a10"
			first, err := a.reserveWithKey("s1", passes[0], key, `{"seats":["A2","A1"]}`)
			if err != nil || first.status != http.StatusCreated {
				t.Fatalf("POST with Idempotency-Key = %d %s (%v), want 201", first.status, first, err)
			}
			again, err := a.reserveWithKey("s1", passes[0], key, `{"seats":["A2","A1"]}`)
			if err != nil || again.status != http.StatusCreated || !bytes.Equal(again.body, first.body) {
				t.Errorf("the same POST again = %d %s (%v), want 201 %s", again.status, again, err, first)
			}
			if got := reservationRows(t, env, "s1"); got != 1 {
				t.Errorf("reservations after a request and its retry = %d, want 1", got)
			}

			other, err := a.reserveWithKey("s1", passes[0], key, `{"seats":["A3"]}`)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "POST with the key and other seats", other, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED")
			wantError(t, "POST without a key, the pass spent", a.reserve(t, "s1", passes[0], `{"seats":["A1","A2"]}`), http.StatusGone, "PASS_SPENT")
		})

		t.Run("side by side", func(t *testing.T) {
			const pairs = 3
			var wg sync.WaitGroup
			replies := make([]response, 2*pairs)
			errs := make([]error, 2*pairs)
			for i := range 2 * pairs {
				wg.Go(func() {
					body := `{"seats":["B` + string(rune('1'+i/2)) + `"]}`
					replies[i], errs[i] = a.reserveWithKey("s1", passes[1+i/2], "pair-"+string(rune('a'+i/2)), body)
				})
			}
			wg.Wait()
			for p := range pairs {
				x, y := replies[2*p], replies[2*p+1]
				if errs[2*p] != nil || errs[2*p+1] != nil || x.status != http.StatusCreated || y.status != http.StatusCreated || !bytes.Equal(x.body, y.body) {
					t.Errorf("pair %d: one POST sent twice at once = %d %s (%v) and %d %s (%v); want 201 twice, the same body",
						p, x.status, x, errs[2*p], y.status, y, errs[2*p+1])
				}
			}
		})

		t.Run("malformed keys", func(t *testing.T) {
			pass := passes[4]
			for name, key := range map[string]string{
				"300 characters":  strings.Repeat("k", 300),
				"256 characters":  strings.Repeat("k", 256),
				"not ASCII":       "clé-ключ",
				"with a space":    "two words",
				"a tab inside":    "tab\tkey",
				"Latin-1 e-acute": "caf\xe9",
			} {
				r, err := a.reserveWithKey("s1", pass, key, `{"seats":["A5"]}`)
				if err != nil {
					t.Fatal(err)
				}
				e := wantError(t, "POST with an Idempotency-Key of "+name, r, http.StatusBadRequest, "BAD_REQUEST")
				if !strings.Contains(e.Error.Message, "Idempotency-Key") {
					t.Errorf("400 message for a key of %s = %q, want it to name the Idempotency-Key", name, e.Error.Message)
				}
			}
			// None of them booked or spent anything; the longest key allowed is fine.
			r, err := a.reserveWithKey("s1", pass, strings.Repeat("k", 255), `{"seats":["A5"]}`)
			if err != nil || r.status != http.StatusCreated {
				t.Errorf("POST with a 255-character key after the refusals = %d %s (%v), want 201", r.status, r, err)
			}
		})
	})
}

// blockWrites holds a write lock the reservation transaction must wait for, until release: on PostgreSQL the
// row of seat A1 of screening, on SQLite the database's write lock, taken from a second connection.
func blockWrites(t *testing.T, env *testenv.Env, screening string) (release func()) {
	t.Helper()
	ctx := context.Background()
	var conn *sql.Conn
	var err error
	if env.Kind == testenv.Real {
		if conn, err = env.DB.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(ctx, `BEGIN; SELECT seat_id FROM seats WHERE screening_id = '`+screening+`' AND seat_id = 'A1' FOR UPDATE`)
	} else {
		db, oerr := booking.Open(ctx, env.DatabaseURL, "")
		if oerr != nil {
			t.Fatal(oerr)
		}
		t.Cleanup(func() { db.Close() })
		if conn, err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	}
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
				t.Errorf("release the write lock: %v", err)
			}
			conn.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// A request whose seat hold lapses before it can commit (here: it waits for a write lock past its lease)
// books nothing and is told so: 409 LOCK_EXPIRED. Its pass is not spent, and it may try again.
func TestLapsedHoldIsConflictLockExpired(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		const lease = 200 * time.Millisecond
		a := newApp(t, env, func(c *config.Config) { c.Booking.LockWait, c.Booking.LockLease = time.Second, lease })
		pass := a.admit(t, "s1", 1)[0]
		lock := queue.Key(env.Prefix, "s1", "seat:A1")
		locked := func() bool {
			n, err := env.Redis.Exists(context.Background(), lock).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		}
		release := blockWrites(t, env, "s1")

		done := make(chan response, 1)
		go func() {
			r, err := a.do(http.MethodPost, "/api/screenings/s1/reservations", "Bearer "+pass, `{"seats":["A1"]}`)
			if err != nil {
				t.Errorf("POST reservation: %v", err)
			}
			done <- r
		}()
		// The request holds A1, then waits in SQL until its hold has lapsed.
		for _, step := range []struct {
			what string
			want bool
		}{{"the request to lock A1", true}, {"its hold on A1 to lapse", false}} {
			deadline := time.Now().Add(5 * time.Second)
			for locked() != step.want {
				if time.Now().After(deadline) {
					release()
					<-done
					t.Fatalf("gave up after 5s waiting for %s", step.what)
				}
				time.Sleep(time.Millisecond)
			}
		}
		release()
		var r response
		select {
		case r = <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("POST reservation did not return within 15s of the write lock's release")
		}

		wantError(t, "POST reservation whose hold lapsed", r, http.StatusConflict, "LOCK_EXPIRED")
		if got := reservationRows(t, env, "s1"); got != 0 {
			t.Errorf("reservations after LOCK_EXPIRED = %d, want 0", got)
		}
		if r := a.reserve(t, "s1", pass, `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Errorf("retry after LOCK_EXPIRED = %d %s, want 201", r.status, r)
		}
	})
}
