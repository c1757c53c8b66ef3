package server_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestSameSeatOverHTTPOneWinner(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		const n = 200
		a := newApp(t, env, nil)
		passes := a.admit(t, "s1", n)

		start := make(chan struct{})
		results := make([]response, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i], errs[i] = a.do(http.MethodPost, "/api/screenings/s1/reservations", "Bearer "+passes[i], `{"seats":["A1"]}`)
			}()
		}
		close(start)
		wg.Wait()

		created, conflicts := 0, map[string]int{}
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Errorf("request %d: %v", i, errs[i])
			case r.status == http.StatusCreated:
				created++
			case r.status == http.StatusConflict:
				e := errorOf(t, r)
				conflicts[e.Error.Code]++
				if !slices.Equal(e.Error.Seats, []string{"A1"}) {
					t.Errorf("409 %s names seats %v, want [A1]", e.Error.Code, e.Error.Seats)
				}
			default:
				t.Errorf("request %d = %d %s, want 201 or 409", i, r.status, r)
			}
		}
		if created != 1 || conflicts["SEAT_TAKEN"]+conflicts["SEAT_LOCKED"] != n-1 {
			t.Errorf("%d requests for A1: %d created, conflicts %v; want 1 created, %d SEAT_TAKEN or SEAT_LOCKED", n, created, conflicts, n-1)
		}
		var rows int
		if err := env.DB.Get(&rows, env.DB.Rebind(`SELECT COUNT(*) FROM reservation_seats WHERE screening_id = ? AND seat_id = ?`), "s1", "A1"); err != nil {
			t.Fatal(err)
		}
		if rows != 1 {
			t.Errorf("reservation_seats rows for A1 = %d, want 1", rows)
		}
	})
}

func TestReservationIsCreated(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		r := a.reserve(t, "s1", a.admit(t, "s1", 1)[0], `{"seats":["B2","A4"]}`)
		if r.status != http.StatusCreated {
			t.Fatalf("POST reservation = %d %s, want 201", r.status, r)
		}
		var got booking.Reservation
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatalf("201 body %s: %v", r, err)
		}
		if got.ID <= 0 || got.Screening != "s1" || !slices.Equal(got.Seats, []string{"A4", "B2"}) || got.CreatedAt.IsZero() {
			t.Errorf("201 body = %+v, want an id, s1, seats [A4 B2], a creation time", got)
		}
		// The body is the order and nothing else: a replay must be able to send the same bytes, so
		// nothing that changes after the sale (seats left) is in it. In instant mode it is confirmed.
		want := []string{"code", "confirmed_at", "created_at", "id", "screening", "seats", "status", "ticket_url"}
		if fields := fieldsOf(t, r); !slices.Equal(fields, want) {
			t.Errorf("201 body fields = %v, want %v (%s)", fields, want, r)
		}
		if got.Status != booking.StatusConfirmed || !booking.ValidOrderCode(got.Code) {
			t.Errorf("201 body = %+v, want a confirmed order with a code", got)
		}
		var v screeningView
		decode(t, "GET /api/screenings/s1", a.get(t, "/api/screenings/s1"), &v)
		if v.SeatsAvailable != 8 {
			t.Errorf("seats available after 2 of 10 sold = %d, want 8", v.SeatsAvailable)
		}
	})
}

// fieldsOf returns the top-level field names of a JSON object body, sorted.
func fieldsOf(t *testing.T, r response) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %s: %v, want a JSON object", r, err)
	}
	return slices.Sorted(maps.Keys(m))
}

func TestReservationErrorsHaveStatusAndCode(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newApp(t, env, nil)
		passes := a.admit(t, "s1", 3)
		valid, spent, left := passes[0], passes[1], passes[2]

		if r := a.reserve(t, "s1", spent, `{"seats":["B5"]}`); r.status != http.StatusCreated {
			t.Fatalf("first reservation = %d %s, want 201", r.status, r)
		}
		leftClaims, err := a.passes.Verify(left, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.q.Leave(ctx, "s1", leftClaims.Token); err != nil {
			t.Fatal(err)
		}
		forged, err := pass.NewSecretIssuer([]byte("not-the-secret-0123456789abcdef")).Issue("s1", leftClaims.Token, leftClaims.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		elsewhere, err := a.passes.Issue("s2", leftClaims.Token, leftClaims.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Redis.Set(ctx, queue.Key(env.Prefix, "s1", "seat:A2"), "someone-else", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}

		cases := []struct {
			name   string
			auth   string // the whole Authorization header; "" sends none
			body   string
			status int
			code   string
			seats  []string
		}{
			{"no Authorization", "", `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"not a bearer", "Basic " + valid, `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"lower-case bearer", "bearer " + valid, `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"empty bearer", "Bearer ", `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"forged pass", "Bearer " + forged, `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"garbage pass", "Bearer garbage", `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"other screening's pass", "Bearer " + elsewhere, `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"left admission", "Bearer " + left, `{"seats":["A1"]}`, 401, "INVALID_PASS", nil},
			{"spent pass", "Bearer " + spent, `{"seats":["A1"]}`, 410, "PASS_SPENT", nil},
			{"bad JSON", "Bearer " + valid, `{"seats":`, 400, "BAD_REQUEST", nil},
			{"not JSON", "Bearer " + valid, `seats=A1`, 400, "BAD_REQUEST", nil},
			{"unknown field", "Bearer " + valid, `{"seats":["A1"],"price":0}`, 400, "BAD_REQUEST", nil},
			{"wrong type", "Bearer " + valid, `{"seats":"A1"}`, 400, "BAD_REQUEST", nil},
			{"trailing value", "Bearer " + valid, `{"seats":["A1"]} {"seats":["A3"]}`, 400, "BAD_REQUEST", nil},
			{"no body", "Bearer " + valid, ``, 400, "BAD_REQUEST", nil},
			{"null body", "Bearer " + valid, `null`, 400, "BAD_REQUEST", nil},
			{"empty seats", "Bearer " + valid, `{"seats":[]}`, 400, "BAD_REQUEST", nil},
			{"unknown seat", "Bearer " + valid, `{"seats":["Z9"]}`, 400, "BAD_REQUEST", nil},
			{"duplicate seat", "Bearer " + valid, `{"seats":["A1","A1"]}`, 400, "BAD_REQUEST", nil},
			{"too many seats", "Bearer " + valid, `{"seats":["A1","A3","A4","A5","B1"]}`, 400, "BAD_REQUEST", nil},
			{"body over 4 KiB", "Bearer " + valid, `{"seats":["` + strings.Repeat("A", 5000) + `"]}`, 413, "BODY_TOO_LARGE", nil},
			{"taken seat", "Bearer " + valid, `{"seats":["A1","B5"]}`, 409, "SEAT_TAKEN", []string{"B5"}},
			{"locked seat", "Bearer " + valid, `{"seats":["A1","A2"]}`, 409, "SEAT_LOCKED", []string{"A2"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r, err := a.do(http.MethodPost, "/api/screenings/s1/reservations", c.auth, c.body)
				if err != nil {
					t.Fatal(err)
				}
				e := wantError(t, "POST reservation ("+c.name+")", r, c.status, c.code)
				if c.seats != nil && !slices.Equal(e.Error.Seats, c.seats) {
					t.Errorf("%s names seats %v, want %v", c.code, e.Error.Seats, c.seats)
				}
			})
		}

		// None of the refusals spent the valid pass or sold anything.
		if r := a.reserve(t, "s1", valid, `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Errorf("reservation with the valid pass after the refusals = %d %s, want 201", r.status, r)
		}
	})
}

func TestBadRequestMessageNamesTheSeat(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		r := a.reserve(t, "s1", a.admit(t, "s1", 1)[0], `{"seats":["Z9"]}`)
		e := wantError(t, "POST reservation (unknown seat)", r, 400, "BAD_REQUEST")
		if !strings.Contains(e.Error.Message, `"Z9"`) || strings.Contains(e.Error.Message, "booking:") {
			t.Errorf("BAD_REQUEST message = %q, want it to name \"Z9\" without the package prefix", e.Error.Message)
		}
	})
}

func TestUnknownScreeningIsNotFound(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		tok := queue.NewToken()
		pass, err := a.passes.Issue("nope", tok, time.Now().Add(time.Minute).Truncate(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "POST /api/screenings/nope/reservations", a.reserve(t, "nope", pass, `{"seats":["A1"]}`), 404, "UNKNOWN_SCREENING")
		for _, path := range []string{
			"/api/screenings/nope",
			"/api/screenings/nope/seats",
			"/api/screenings/nope/queue/" + tok,
			"/api/screenings/bad%20id/seats",
			"/api/screenings/" + strings.Repeat("x", 100) + "/queue/" + tok,
		} {
			wantError(t, "GET "+path, a.get(t, path), 404, "UNKNOWN_SCREENING")
		}
		wantError(t, "GET /api/nothing", a.get(t, "/api/nothing"), 404, "NOT_FOUND")
		r, err := a.do(http.MethodDelete, "/api/screenings/s1", "", "")
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "DELETE /api/screenings/s1", r, 405, "METHOD_NOT_ALLOWED")
	})
}

func TestSoldOutIsConflict(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newApp(t, env, nil)
		env.Demo(t, "tiny", 1, 2)
		passes := a.admit(t, "tiny", 3)
		waiting, err := a.q.Register(ctx, "tiny", "")
		if err != nil {
			t.Fatal(err)
		}

		r := a.reserve(t, "tiny", passes[0], `{"seats":["A1","A2"]}`)
		if r.status != http.StatusCreated {
			t.Fatalf("reservation of the last seats = %d %s, want 201", r.status, r)
		}

		wantError(t, "POST reservation after the last seat", a.reserve(t, "tiny", passes[1], `{"seats":["A1"]}`), 409, "SOLD_OUT")
		var view struct {
			State          string `json:"state"`
			SeatsAvailable int    `json:"seats_available"`
		}
		decode(t, "GET /api/screenings/tiny", a.get(t, "/api/screenings/tiny"), &view)
		if view.State != "sold_out" || view.SeatsAvailable != 0 {
			t.Errorf("GET /api/screenings/tiny = %+v, want state sold_out, 0 available", view)
		}
		var status struct {
			Status string `json:"status"`
		}
		decode(t, "GET queue status of a waiting token", a.get(t, "/api/screenings/tiny/queue/"+waiting.Token), &status)
		if status.Status != "sold_out" {
			t.Errorf("queue status of a token waiting at the close = %q, want sold_out", status.Status)
		}
	})
}

// Sold out in SQL while this instance's Redis never heard of it: SQL says so, and the line closes.
func TestSoldOutInSQLIsConflict(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newApp(t, env, nil)
		env.Demo(t, "tiny", 1, 1)
		elsewhere := queue.New(env.Redis, env.Prefix+"other:")
		other := booking.New(a.store, elsewhere, elsewhere, a.passes, booking.Settings{LockWait: time.Second, LockLease: time.Second, MaxSeats: 4})
		e, err := elsewhere.Register(ctx, "tiny", "")
		if err != nil {
			t.Fatal(err)
		}
		res, err := elsewhere.Admit(ctx, "tiny", time.Now(), queue.Settings{BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute})
		if err != nil || len(res.Admitted) != 1 {
			t.Fatalf("Admit elsewhere = %v, %v", res.Admitted, err)
		}
		pass, err := a.passes.Issue("tiny", e.Token, res.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Reserve(ctx, "tiny", pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}

		wantError(t, "POST reservation of a screening sold out in SQL", a.reserve(t, "tiny", a.admit(t, "tiny", 1)[0], `{"seats":["A1"]}`), 409, "SOLD_OUT")
		if closed, err := a.q.Closed(ctx, "tiny"); err != nil || !closed {
			t.Errorf("Closed after SOLD_OUT = %v (%v), want true", closed, err)
		}
	})
}

func TestBodyLimitIsFourKiB(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		pass := a.admit(t, "s1", 1)[0]
		const body = `{"seats":["A1"]}`
		over := strings.Repeat(" ", 4097-len(body)) + body
		wantError(t, "POST reservation of 4097 bytes", a.reserve(t, "s1", pass, over), 413, "BODY_TOO_LARGE")
		exact := strings.Repeat(" ", 4096-len(body)) + body
		if r := a.reserve(t, "s1", pass, exact); r.status != http.StatusCreated {
			t.Errorf("POST reservation of exactly 4096 bytes = %d %s, want 201", r.status, r)
		}
	})
}

// The body must be exactly one JSON object (docs/protocol.md 7.6: trailing data is 400). A stray closing
// brace or bracket after it is trailing data too, and must not reserve or spend the pass.
func TestTrailingCloserIsBadRequest(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		pass := a.admit(t, "s1", 1)[0]
		for _, body := range []string{`{"seats":["A1"]}}`, `{"seats":["A1"]}]`} {
			wantError(t, "POST reservation "+body, a.reserve(t, "s1", pass, body), 400, "BAD_REQUEST")
		}
	})
}
