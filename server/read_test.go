// The read routes: screenings, a seat map, a token's standing, health and metrics, and what a broken
// dependency makes of them.

package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// screeningView is the JSON of a screening.
type screeningView struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	StartsAt       time.Time `json:"starts_at"`
	SaleOpensAt    time.Time `json:"sale_opens_at"`
	SeatsTotal     int       `json:"seats_total"`
	SeatsAvailable int       `json:"seats_available"`
	State          string    `json:"state"`
	Waiting        *int64    `json:"waiting"`
	Active         *int64    `json:"active"`
}

func TestListScreenings(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newApp(t, env, nil)
		now := time.Now().UTC().Truncate(time.Second)
		later := booking.Screening{ID: "later", Name: "Later", StartsAt: now.Add(3 * time.Hour), SaleOpensAt: now.Add(time.Hour)}
		if _, err := a.store.EnsureScreening(ctx, later, booking.Grid(1, 3)); err != nil {
			t.Fatal(err)
		}
		if r := a.reserve(t, "s1", a.admit(t, "s1", 1)[0], `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Fatalf("reservation = %d %s, want 201", r.status, r)
		}

		var list []screeningView
		decode(t, "GET /api/screenings", a.get(t, "/api/screenings"), &list)
		if len(list) != 2 {
			t.Fatalf("GET /api/screenings = %d screenings, want 2", len(list))
		}
		s1, l := list[0], list[1]
		if s1.ID != "s1" || s1.State != "on_sale" || s1.SeatsTotal != 10 || s1.SeatsAvailable != 9 || s1.Name == "" {
			t.Errorf("screenings[0] = %+v, want s1 on_sale with 10 seats, 9 available", s1)
		}
		if l.ID != "later" || l.State != "upcoming" || l.SeatsTotal != 3 || l.SeatsAvailable != 3 || !l.StartsAt.Equal(later.StartsAt) || !l.SaleOpensAt.Equal(later.SaleOpensAt) {
			t.Errorf("screenings[1] = %+v, want later, upcoming, 3 of 3 seats, starting %v, on sale %v", l, later.StartsAt, later.SaleOpensAt)
		}
		if s1.Waiting != nil || s1.Active != nil {
			t.Errorf("the list shows queue counts %v/%v, want them only on one screening", s1.Waiting, s1.Active)
		}
	})
}

func TestGetScreeningCountsTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		a.admit(t, "s1", 1)
		for range 2 {
			if _, err := a.q.Register(context.Background(), "s1", ""); err != nil {
				t.Fatal(err)
			}
		}
		var v screeningView
		decode(t, "GET /api/screenings/s1", a.get(t, "/api/screenings/s1"), &v)
		if v.ID != "s1" || v.State != "on_sale" || v.SeatsTotal != 10 || v.Waiting == nil || *v.Waiting != 2 || v.Active == nil || *v.Active != 1 {
			t.Errorf("GET /api/screenings/s1 = %+v (waiting %v, active %v), want s1 on_sale, 10 seats, 2 waiting, 1 active", v, deref(v.Waiting), deref(v.Active))
		}
	})
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestSeatMap(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		if r := a.reserve(t, "s1", a.admit(t, "s1", 1)[0], `{"seats":["B3"]}`); r.status != http.StatusCreated {
			t.Fatalf("reservation = %d %s, want 201", r.status, r)
		}
		var seats []struct {
			ID     string `json:"id"`
			Row    string `json:"row"`
			Number int    `json:"number"`
			Status string `json:"status"`
		}
		decode(t, "GET /api/screenings/s1/seats", a.get(t, "/api/screenings/s1/seats"), &seats)
		if len(seats) != 10 {
			t.Fatalf("GET seats = %d seats, want 10", len(seats))
		}
		for i, s := range seats {
			wantID := string(rune('A'+i/5)) + string(rune('1'+i%5))
			wantStatus := "available"
			if wantID == "B3" {
				wantStatus = "sold"
			}
			if s.ID != wantID || s.Row != wantID[:1] || s.Number != i%5+1 || s.Status != wantStatus {
				t.Errorf("seats[%d] = %+v, want %s row %s number %d %s", i, s, wantID, wantID[:1], i%5+1, wantStatus)
			}
		}
	})
}

func TestQueueStatus(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newApp(t, env, nil)
		var tokens []string
		for range 3 {
			e, err := a.q.Register(ctx, "s1", "")
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, e.Token)
		}
		res, err := a.q.Admit(ctx, "s1", time.Now(), queue.Settings{BatchSize: 1, MaxActive: 1, ActiveTTL: time.Minute})
		if err != nil || len(res.Admitted) != 1 || res.Admitted[0] != tokens[0] {
			t.Fatalf("Admit = %v, %v; want the first token", res.Admitted, err)
		}

		type status struct {
			Status    string `json:"status"`
			Rank      int64  `json:"rank"`
			Total     int64  `json:"total"`
			ExpiresAt string `json:"expires_at"`
		}
		for _, c := range []struct {
			name  string
			token string
			want  status
		}{
			{"admitted", tokens[0], status{Status: "admitted", Total: 2, ExpiresAt: res.ExpiresAt.UTC().Format(hub.TimeFormat)}},
			{"first waiting", tokens[1], status{Status: "waiting", Rank: 1, Total: 2}},
			{"second waiting", tokens[2], status{Status: "waiting", Rank: 2, Total: 2}},
			{"unknown", queue.NewToken(), status{Status: "unknown", Total: 2}},
		} {
			var got status
			decode(t, "GET queue status ("+c.name+")", a.get(t, "/api/screenings/s1/queue/"+c.token), &got)
			if got != c.want {
				t.Errorf("queue status of the %s token = %+v, want %+v", c.name, got, c.want)
			}
		}
		for _, bad := range []string{"xyz", strings.ToUpper(queue.NewToken()), queue.NewToken() + "0"} {
			wantError(t, "GET queue status of "+bad, a.get(t, "/api/screenings/s1/queue/"+bad), 400, "BAD_TOKEN")
		}
	})
}

func TestHealthReadinessAndMetrics(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		if r := a.get(t, "/healthz"); r.status != 200 || strings.TrimSpace(r.String()) != `{"status":"ok"}` {
			t.Errorf("GET /healthz = %d %s, want 200 {\"status\":\"ok\"}", r.status, r)
		}
		var ready map[string]string
		decode(t, "GET /readyz", a.get(t, "/readyz"), &ready)
		if ready["status"] != "ok" || ready["redis"] != "ok" || ready["database"] != "ok" {
			t.Errorf("GET /readyz = %v, want status, redis and database ok", ready)
		}
		if m := a.metrics(t); !strings.Contains(m, "waitroom_hub_sockets") {
			t.Errorf("GET ops /metrics lacks waitroom_hub_sockets")
		}
	})
}

// With the database and Redis gone, /readyz says which failed, a request that needs them answers
// "internal error" while the log gets the cause, and a socket is told to come back later.
func TestBrokenDependenciesAreUnreadyAndInternal(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		db, err := booking.Open(context.Background(), env.DatabaseURL, "")
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		// Redis answers the queue's scripts (the test admits with them) but never a PING: to /readyz it is down.
		unready := redis.NewClient(env.Redis.(*redis.Client).Options())
		unready.AddHook(testenv.Refuse{Names: []string{"ping"}, Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")})
		t.Cleanup(func() { unready.Close() })
		a := newAppOn(t, env, app.Backends{Redis: unready, DB: db}, func(c *config.Config) {
			c.Booking.LockWait, c.Booking.LockLease = time.Second, time.Second
		})

		r := a.get(t, "/readyz")
		var ready map[string]string
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("GET /readyz with both down = %d %s, want 503", r.status, r)
		}
		decodeAny(t, r, &ready)
		if want := map[string]string{"status": "unavailable", "redis": "down", "database": "down"}; !maps.Equal(ready, want) {
			t.Errorf("GET /readyz with both down = %v, want %v (which is down, never why)", ready, want)
		}
		if strings.Contains(r.String(), "connection refused") || strings.Contains(r.String(), "closed") {
			t.Errorf("GET /readyz = %s, want no internal error text", r)
		}
		if !strings.Contains(a.log.String(), "connection refused") {
			t.Errorf("the log lacks the cause of the Redis check's failure:\n%s", a.log.String())
		}

		r = a.get(t, "/api/screenings")
		e := wantError(t, "GET /api/screenings with the database closed", r, 500, "INTERNAL")
		if e.Error.Message != "internal error" {
			t.Errorf("500 message = %q, want %q", e.Error.Message, "internal error")
		}
		if strings.Contains(r.String(), "closed") {
			t.Errorf("500 body %s leaks the cause, want only \"internal error\"", r)
		}
		if log := a.log.String(); !strings.Contains(log, "database is closed") {
			t.Errorf("log = %q, want the full cause (database is closed)", log)
		}

		r = a.reserve(t, "s1", a.admit(t, "s1", 1)[0], `{"seats":["A1"]}`)
		if e := wantError(t, "POST reservation with the database closed", r, 500, "INTERNAL"); e.Error.Message != "internal error" {
			t.Errorf("500 message = %q, want %q", e.Error.Message, "internal error")
		}

		conn, res, err := a.dial(t, "/ws/screenings/s1", "")
		if err != nil {
			t.Fatalf("socket with the database closed = %v (%v), want it open, then refused", status(res), err)
		}
		defer conn.Close()
		if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "UNAVAILABLE" {
			t.Errorf("socket message with the database closed = %+v, want error UNAVAILABLE", m)
		}
		if code := conn.CloseCode(t, readWait); code != 1011 && code != 1013 {
			t.Errorf("socket close code with the database closed = %d, want 1011 or 1013 (retry later)", code)
		}
	})
}

func decodeAny(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %s: %v", r, err)
	}
}
