// The admin API's access codes through the whole server: issuing, the shared code, the list as JSON and as
// CSV, revoking, and the refusals (a bad count or shared code, an unknown screening or code, no key).

package server_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

// oneTimeCode is a one-time code as the API shows it.
var oneTimeCode = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$`)

// listedCodes is GET /api/admin/screenings/:id/codes.
type listedCodes struct {
	Codes []struct {
		Code      string     `json:"code"`
		State     string     `json:"state"`
		CreatedAt time.Time  `json:"created_at"`
		UsedAt    *time.Time `json:"used_at"`
	} `json:"codes"`
	Shared        bool `json:"shared"`
	CodesRequired bool `json:"codes_required"`
}

// issue posts {"count": n} to s1's codes and returns the codes, wanting 201.
func (a *testServer) issue(t *testing.T, body string) []string {
	t.Helper()
	r := a.adminCall(t, http.MethodPost, "/api/admin/screenings/s1/codes", body)
	if r.status != http.StatusCreated {
		t.Fatalf("POST codes %s = %d %s, want 201", body, r.status, r)
	}
	var out struct {
		Codes []string `json:"codes"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("POST codes body %s: %v", r, err)
	}
	return out.Codes
}

// listCodes reads s1's codes as JSON.
func (a *testServer) listCodes(t *testing.T) listedCodes {
	t.Helper()
	var out listedCodes
	decode(t, "GET codes", a.adminCall(t, http.MethodGet, "/api/admin/screenings/s1/codes", ""), &out)
	return out
}

// csvCodes reads s1's codes as CSV, asked for by query or by Accept, and checks the headers of the answer.
func (a *testServer) csvCodes(t *testing.T, query, accept string) [][]string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.ts.URL+"/api/admin/screenings/s1/codes"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET codes%s (Accept %q) = %d %s, %v; want 200", query, accept, res.StatusCode, b, err)
	}
	if got, want := res.Header.Get("Content-Type"), "text/csv; charset=utf-8"; got != want {
		t.Errorf("CSV Content-Type = %q, want %q", got, want)
	}
	if got, want := res.Header.Get("Content-Disposition"), `attachment; filename="codes-s1.csv"`; got != want {
		t.Errorf("CSV Content-Disposition = %q, want %q", got, want)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatalf("CSV %s: %v", b, err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "code,state,created_at,used_at" {
		t.Fatalf("CSV header = %v, want code,state,created_at,used_at", rows)
	}
	return rows[1:]
}

func TestAdminIssuesListsAndRevokesCodes(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newAdminApp(t, env)
		if l := a.listCodes(t); len(l.Codes) != 0 || l.Shared || l.CodesRequired {
			t.Fatalf("codes of a new screening = %+v, want none, nothing required", l)
		}
		codes := a.issue(t, `{"count": 3}`)
		if len(codes) != 3 {
			t.Fatalf("issued %v, want 3 codes", codes)
		}
		for _, c := range codes {
			if !oneTimeCode.MatchString(c) {
				t.Errorf("issued %q, want XXXX-XXXX-XXXX", c)
			}
		}
		if err := a.store.ClaimCode(ctx, "s1", strings.ToLower(codes[1]), "tokA"); err != nil {
			t.Fatalf("ClaimCode of an issued code = %v", err)
		}
		r := a.adminCall(t, http.MethodDelete, "/api/admin/screenings/s1/codes/"+strings.ToLower(codes[2]), "")
		if r.status != http.StatusNoContent || len(r.body) != 0 {
			t.Errorf("DELETE code = %d %s, want 204 and no body", r.status, r)
		}

		l := a.listCodes(t)
		if !l.CodesRequired || l.Shared || len(l.Codes) != 3 {
			t.Fatalf("codes = %+v, want 3, required, no shared code", l)
		}
		states := map[string]string{}
		for _, c := range l.Codes {
			states[c.Code] = c.State
			if c.CreatedAt.IsZero() || (c.State == booking.CodeUsed) != (c.UsedAt != nil) {
				t.Errorf("listed %+v: want a created_at, and a used_at exactly when used", c)
			}
		}
		want := map[string]string{codes[0]: "unused", codes[1]: "used", codes[2]: "revoked"}
		for c, st := range want {
			if states[c] != st {
				t.Errorf("code %s listed as %q, want %q", c, states[c], st)
			}
		}

		for _, ask := range []struct{ query, accept string }{{"?format=csv", ""}, {"", "text/csv"}} {
			rows := a.csvCodes(t, ask.query, ask.accept)
			if len(rows) != 3 {
				t.Fatalf("CSV rows = %v, want 3", rows)
			}
			for _, row := range rows {
				if len(row) != 4 || want[row[0]] != row[1] {
					t.Errorf("CSV row %v, want code,state,created_at,used_at with %s's state", row, row[0])
					continue
				}
				if _, err := time.Parse(time.RFC3339, row[2]); err != nil {
					t.Errorf("CSV created_at %q: %v", row[2], err)
				}
				if _, err := time.Parse(time.RFC3339, row[3]); (row[1] == "used") != (err == nil) {
					t.Errorf("CSV used_at %q of a %s code", row[3], row[1])
				}
			}
		}
		if strings.Contains(a.log.String(), codes[0]) || strings.Contains(a.log.String(), booking.NormalizeCode(codes[0])) {
			t.Errorf("the log shows a code: %s", a.log)
		}
		if !strings.Contains(a.log.String(), "admin: codes issued") || !strings.Contains(a.log.String(), "admin: code revoked") {
			t.Errorf("the log lacks the admin actions: %s", a.log)
		}
	})
}

func TestAdminSetsAndRemovesTheSharedCode(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		a := newAdminApp(t, env)
		r := a.adminCall(t, http.MethodPost, "/api/admin/screenings/s1/codes", `{"shared": "presale-2026"}`)
		var set struct {
			Shared        string `json:"shared"`
			CodesRequired bool   `json:"codes_required"`
		}
		decode(t, "POST shared code", r, &set)
		if set.Shared != "PRESALE2026" || !set.CodesRequired {
			t.Errorf("POST shared code = %+v, want PRESALE2026, required", set)
		}
		if l := a.listCodes(t); !l.Shared || !l.CodesRequired || len(l.Codes) != 0 {
			t.Errorf("codes after the shared one = %+v, want shared, required, no one-time codes", l)
		}
		if err := a.store.ClaimCode(ctx, "s1", "Presale 2026", "tokA"); err != nil {
			t.Errorf("ClaimCode of the shared code = %v", err)
		}
		if strings.Contains(strings.ToUpper(a.log.String()), "PRESALE") {
			t.Errorf("the log shows the shared code: %s", a.log)
		}
		r = a.adminCall(t, http.MethodDelete, "/api/admin/screenings/s1/codes/PRESALE-2026", "")
		if r.status != http.StatusNoContent {
			t.Errorf("DELETE shared code = %d %s, want 204", r.status, r)
		}
		if l := a.listCodes(t); l.Shared || !l.CodesRequired {
			t.Errorf("codes after removing the shared one = %+v, want none shared, still required", l)
		}
	})
}

func TestAdminCodesRefusals(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		for _, c := range []struct {
			body, code string
		}{
			{`{"count": 0}`, "BAD_SCREENING"},
			{`{"count": -3}`, "BAD_SCREENING"},
			{`{"count": 10001}`, "BAD_SCREENING"},
			{`{"shared": "abc"}`, "BAD_SCREENING"},
			{`{"shared": "no!pe"}`, "BAD_SCREENING"},
			{`{"shared": "PRESALE26"}`, "BAD_SCREENING"}, // nine: a shared code has at least ten
			{`{"count": 2, "shared": "PRESALE2026"}`, "BAD_SCREENING"},
			{`{}`, "BAD_SCREENING"},
			{`{"count": "2"}`, "BAD_REQUEST"},
			{`{"codes": 2}`, "BAD_REQUEST"},
			{`not json`, "BAD_REQUEST"},
		} {
			r := a.adminCall(t, http.MethodPost, "/api/admin/screenings/s1/codes", c.body)
			wantError(t, "POST codes "+c.body, r, http.StatusBadRequest, c.code)
		}
		if l := a.listCodes(t); len(l.Codes) != 0 || l.Shared || l.CodesRequired {
			t.Errorf("codes after the refusals = %+v, want nothing changed", l)
		}

		for _, c := range []struct{ method, path, body string }{
			{http.MethodPost, "/api/admin/screenings/nope/codes", `{"count": 1}`},
			{http.MethodPost, "/api/admin/screenings/nope/codes", `{"shared": "PRESALE2026"}`},
			{http.MethodGet, "/api/admin/screenings/nope/codes", ""},
			{http.MethodGet, "/api/admin/screenings/nope/codes?format=csv", ""},
			{http.MethodDelete, "/api/admin/screenings/nope/codes/ABCD-EFGH-JKMN", ""},
		} {
			wantError(t, c.method+" "+c.path, a.adminCall(t, c.method, c.path, c.body), http.StatusNotFound, "UNKNOWN_SCREENING")
		}
		r := a.adminCall(t, http.MethodDelete, "/api/admin/screenings/s1/codes/ABCD-EFGH-JKMN", "")
		wantError(t, "DELETE an unknown code", r, http.StatusNotFound, "UNKNOWN_CODE")

		for _, auth := range []string{"", "Bearer wrong-key"} {
			for _, c := range []struct{ method, path, body string }{
				{http.MethodPost, "/api/admin/screenings/s1/codes", `{"count": 1}`},
				{http.MethodGet, "/api/admin/screenings/s1/codes", ""},
				{http.MethodDelete, "/api/admin/screenings/s1/codes/ABCD-EFGH-JKMN", ""},
			} {
				r, err := a.do(c.method, c.path, auth, c.body)
				if err != nil {
					t.Fatal(err)
				}
				wantError(t, c.method+" "+c.path+" with Authorization "+auth, r, http.StatusUnauthorized, "UNAUTHORIZED")
			}
		}
		if l := a.listCodes(t); len(l.Codes) != 0 || l.CodesRequired {
			t.Errorf("codes after the unauthorized calls = %+v, want none", l)
		}
	})
}
