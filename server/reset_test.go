// The admin API's reset and archive: a reset is refused while the sale has orders unless forced, and sells
// again from scratch; an archived screening leaves the public list but not the operator's or the exports.

package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/testenv"
)

// resetAnswer is what POST …/reset answers.
type resetAnswer struct {
	Orders    int64          `json:"orders_deleted"`
	Live      int64          `json:"live_orders_deleted"`
	Screening adminScreening `json:"screening"`
}

func resetOf(t *testing.T, what string, r response) resetAnswer {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s = %d %s, want 200", what, r.status, r)
	}
	var out resetAnswer
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("%s body %s: %v", what, r, err)
	}
	return out
}

func TestAdminResetIsRefusedWithOrdersUnlessForced(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		adminScreeningOf(t, "POST gala", a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "gala", nil)), http.StatusCreated)
		passes := a.admit(t, "gala", 2)
		if r := a.reserve(t, "gala", passes[0], `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Fatalf("reserve A1 = %d %s, want 201", r.status, r)
		}

		wantError(t, "POST reset", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/reset", ""), http.StatusConflict, "SALE_HAS_ORDERS")
		if got := adminScreeningOf(t, "GET gala", a.adminCall(t, http.MethodGet, "/api/admin/screenings/gala", ""), http.StatusOK); got.SeatsSold != 1 {
			t.Errorf("seats sold after a refused reset = %d, want 1", got.SeatsSold)
		}

		// Forced by the query, and by the body.
		res := resetOf(t, "POST reset?force=true", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/reset?force=true", ""))
		if res.Orders != 1 || res.Live != 1 || res.Screening.SeatsSold != 0 || res.Screening.SeatsAvailable != 12 || res.Screening.State != "on_sale" {
			t.Errorf("forced reset = %d orders (%d live) deleted, screening %+v; want 1 (1), 0 sold, 12 available, on_sale", res.Orders, res.Live, res.Screening)
		}
		// An admission of before the reset is over; a new one buys the seat again.
		wantError(t, "reserve with a pass of before the reset", a.reserve(t, "gala", passes[1], `{"seats":["A2"]}`), http.StatusUnauthorized, "INVALID_PASS")
		again := a.admit(t, "gala", 1)
		if r := a.reserve(t, "gala", again[0], `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Errorf("reserve A1 after the reset = %d %s, want 201 (sold again)", r.status, r)
		}
		res = resetOf(t, "POST reset {force}", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/reset", `{"force":true}`))
		if res.Orders != 1 {
			t.Errorf("reset forced by the body deleted %d orders, want 1", res.Orders)
		}
		// Without orders no force is needed.
		resetOf(t, "POST reset of an empty sale", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/reset", ""))

		wantError(t, "POST reset of nope", a.adminCall(t, http.MethodPost, "/api/admin/screenings/nope/reset", ""), http.StatusNotFound, "UNKNOWN_SCREENING")
		wantError(t, "POST reset with a bad body", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/reset", `{"forse":true}`), http.StatusBadRequest, "BAD_REQUEST")
	})
}

func TestAdminResetSendsTheSocketsBackIntoTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		adminScreeningOf(t, "POST gala", a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, "gala", nil)), http.StatusCreated)
		conn, first := openSocket(t, a, "gala")
		if first.Type != "queued" {
			t.Fatalf("first message = %+v, want queued", first)
		}
		waitFollowed(t, a, "gala")

		resetOf(t, "POST reset", a.adminCall(t, http.MethodPost, "/api/admin/screenings/gala/reset", ""))

		if code := conn.CloseCode(t, readWait); code != hub.CloseServiceRestart {
			t.Errorf("close code of a waiting socket at the reset = %d, want %d (come back)", code, hub.CloseServiceRestart)
		}
		if _, m := openSocket(t, a, "gala"); m.Type != "queued" {
			t.Errorf("first message of a socket after the reset = %+v, want queued", m)
		}
	})
}

func TestAdminArchiveHidesFromThePublicListOnly(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		for _, id := range []string{"gala", "test1"} {
			adminScreeningOf(t, "POST "+id, a.adminCall(t, http.MethodPost, "/api/admin/screenings", createBody(t, id, nil)), http.StatusCreated)
		}
		passes := a.admit(t, "test1", 1)
		if r := a.reserve(t, "test1", passes[0], `{"seats":["B2"]}`); r.status != http.StatusCreated {
			t.Fatalf("reserve B2 = %d %s, want 201", r.status, r)
		}

		got := adminScreeningOf(t, "POST archive", a.adminCall(t, http.MethodPost, "/api/admin/screenings/test1/archive", ""), http.StatusOK)
		var marked struct {
			ArchivedAt *string `json:"archived_at"`
		}
		decode(t, "GET test1", a.adminCall(t, http.MethodGet, "/api/admin/screenings/test1", ""), &marked)
		if got.State != "closed" || got.Line == nil || !got.Line.Closed || marked.ArchivedAt == nil {
			t.Errorf("after archive = state %q, line %+v, archived_at %v; want closed, line closed, a time", got.State, got.Line, marked.ArchivedAt)
		}
		if ids := publicIDs(t, a); slices.Contains(ids, "test1") || !slices.Contains(ids, "gala") {
			t.Errorf("GET /api/screenings after archive = %v, want gala without test1", ids)
		}
		var all []adminScreening
		decode(t, "GET admin list", a.adminCall(t, http.MethodGet, "/api/admin/screenings", ""), &all)
		if !slices.ContainsFunc(all, func(s adminScreening) bool { return s.ID == "test1" }) {
			t.Errorf("admin list after archive = %+v, want test1 in it", all)
		}
		csv := a.adminCall(t, http.MethodGet, "/api/admin/screenings/test1/orders?format=csv", "")
		if csv.status != http.StatusOK || !strings.Contains(csv.String(), "B2") {
			t.Errorf("orders CSV of the archived screening = %d %s, want 200 with B2", csv.status, csv)
		}
		wantError(t, "POST reset of the archived", a.adminCall(t, http.MethodPost, "/api/admin/screenings/test1/reset?force=true", ""), http.StatusConflict, "ARCHIVED")

		back := adminScreeningOf(t, "POST unarchive", a.adminCall(t, http.MethodPost, "/api/admin/screenings/test1/unarchive", ""), http.StatusOK)
		if back.State != "closed" {
			t.Errorf("state after unarchive = %q, want closed (a reset opens it)", back.State)
		}
		if ids := publicIDs(t, a); !slices.Contains(ids, "test1") {
			t.Errorf("GET /api/screenings after unarchive = %v, want test1 in it", ids)
		}
		for _, action := range []string{"archive", "unarchive"} {
			path := "/api/admin/screenings/nope/" + action
			wantError(t, "POST "+path, a.adminCall(t, http.MethodPost, path, ""), http.StatusNotFound, "UNKNOWN_SCREENING")
		}
	})
}
