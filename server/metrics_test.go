// The server's metrics move with real requests: reservations by outcome and their duration, every answer by
// route pattern, method and status, and a made-up URL adds no series of its own.

package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/testenv"
)

// sample returns the value of one series as /metrics shows it (labels in name order), 0 if it is absent.
func (a *testServer) sample(t *testing.T, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(a.metrics(t), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics %q: %v", line, err)
			}
			return f
		}
	}
	return 0
}

func TestReservationsCountedByOutcome(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		passes := a.admit(t, "s1", 2)
		if r := a.reserve(t, "s1", passes[0], `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Fatalf("first reservation of A1 = %d %s, want 201", r.status, r)
		}
		wantError(t, "second reservation of A1", a.reserve(t, "s1", passes[1], `{"seats":["A1"]}`), http.StatusConflict, "SEAT_TAKEN")
		wantError(t, "reservation without a pass", a.reserve(t, "s1", "", `{"seats":["A2"]}`), http.StatusUnauthorized, "INVALID_PASS")
		wantError(t, "reservation with a forged pass", a.reserve(t, "s1", "forged", `{"seats":["A2"]}`), http.StatusUnauthorized, "INVALID_PASS")
		wantError(t, "reservation of a seat that is not there", a.reserve(t, "s1", passes[1], `{"seats":["Z9"]}`), http.StatusBadRequest, "BAD_REQUEST")

		for series, want := range map[string]float64{
			`waitroom_reservations_total{outcome="ok"}`:                                                                         1,
			`waitroom_reservations_total{outcome="SEAT_TAKEN"}`:                                                                 1,
			`waitroom_reservations_total{outcome="INVALID_PASS"}`:                                                               2,
			`waitroom_reservations_total{outcome="BAD_REQUEST"}`:                                                                1,
			`waitroom_reservation_duration_seconds_count`:                                                                       5,
			`waitroom_reservation_duration_seconds_bucket{le="+Inf"}`:                                                           5,
			`waitroom_http_request_duration_seconds_count{method="POST",route="/api/screenings/:id/reservations",status="201"}`: 1,
			`waitroom_http_request_duration_seconds_count{method="POST",route="/api/screenings/:id/reservations",status="409"}`: 1,
			`waitroom_http_request_duration_seconds_count{method="POST",route="/api/screenings/:id/reservations",status="401"}`: 2,
			`waitroom_http_request_duration_seconds_count{method="POST",route="/api/screenings/:id/reservations",status="400"}`: 1,
		} {
			if got := a.sample(t, series); got != want {
				t.Errorf("%s = %v, want %v", series, got, want)
			}
		}
		if got := a.sample(t, `waitroom_reservation_duration_seconds_sum`); got <= 0 {
			t.Errorf("waitroom_reservation_duration_seconds_sum = %v, want > 0", got)
		}
	})
}

func TestRequestsLabelledByRoutePatternNeverTheURL(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		a.get(t, "/api/screenings/s1")
		a.get(t, "/api/screenings/s1")
		a.get(t, "/api/screenings/nope")
		a.get(t, "/no/such/page")
		a.get(t, "/api/no/such/call") // the API group's catch-all answers it: still unmatched
		for _, m := range []string{http.MethodPut, "BREW"} {
			if _, err := a.do(m, "/healthz", "", ""); err != nil {
				t.Fatalf("%s /healthz: %v", m, err)
			}
		}

		for series, want := range map[string]float64{
			`waitroom_http_request_duration_seconds_count{method="GET",route="/api/screenings/:id",status="200"}`: 2,
			`waitroom_http_request_duration_seconds_count{method="GET",route="/api/screenings/:id",status="404"}`: 1,
			`waitroom_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}`:           2,
			`waitroom_http_request_duration_seconds_count{method="PUT",route="/healthz",status="405"}`:            1,
			`waitroom_http_request_duration_seconds_count{method="OTHER",route="/healthz",status="405"}`:          1,
		} {
			if got := a.sample(t, series); got != want {
				t.Errorf("%s = %v, want %v", series, got, want)
			}
		}
		body := a.metrics(t)
		for _, leak := range []string{`route="/api/screenings/s1"`, `route="/no/such/page"`, `method="BREW"`, `route="/api/*"`} {
			if strings.Contains(body, leak) {
				t.Errorf("/metrics shows %s, want route patterns and standard methods only", leak)
			}
		}
		// The scrapes are the ops listener's: they are not the public API's requests.
		if strings.Contains(a.metrics(t), `route="/metrics"`) {
			t.Errorf("/metrics shows the scrapes as public requests, want them absent")
		}
	})
}
