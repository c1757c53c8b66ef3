// Tests of the access code a screening asks of a socket: none, a wrong or revoked one refused with nothing
// registered, a one-time code giving one place (and again to its own token), a shared code for many, the
// operator lifting the requirement; with a proof of work too, a refused code spends no solution, and a
// registration that fails takes back both.

package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// codeSocket opens a socket of s1 with the code (none when "") and the payload (none when "").
func (a *testServer) codeSocket(t *testing.T, code, payload, token string) *testenv.Socket {
	t.Helper()
	q := url.Values{}
	if code != "" {
		q.Set("code", code)
	}
	if payload != "" {
		q.Set("altcha", payload)
	}
	return testenv.Dial(t, a.ts.URL+"/ws/screenings/s1?"+q.Encode(), token)
}

// issueCodes has the operator issue n one-time codes of s1.
func (a *testServer) issueCodes(t *testing.T, n int) []string {
	t.Helper()
	r := a.adminCall(t, http.MethodPost, "/api/admin/screenings/s1/codes", `{"count": `+jsonInt(n)+`}`)
	var body struct{ Codes []string }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &body) != nil || len(body.Codes) != n {
		t.Fatalf("issue %d codes = %d %s", n, r.status, r)
	}
	return body.Codes
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// wantPlace reads a new place (or a kept one, inserted false) from s.
func wantPlace(t *testing.T, what string, s *testenv.Socket, inserted bool) testenv.Message {
	t.Helper()
	m, err := s.Read(5 * time.Second)
	if err != nil || m.Type != "queued" || m.Inserted != inserted {
		t.Fatalf("%s: got %+v, %v; want queued (inserted %v)", what, m, err, inserted)
	}
	return m
}

func TestAOneTimeCodeGivesOnePlaceAndASharedOneMany(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		codes := a.issueCodes(t, 3)
		wantRefused(t, "no code", a.codeSocket(t, "", "", ""), "CODE_REQUIRED")
		wantRefused(t, "a made-up code", a.codeSocket(t, "ZZZZ-ZZZZ-ZZZZ", "", ""), "CODE_INVALID")
		if n := a.waitingIn(t, "s1"); n != 0 {
			t.Fatalf("%d wait after refusals only, want 0", n)
		}
		first := wantPlace(t, "the first code", a.codeSocket(t, codes[0], "", ""), true)
		wantRefused(t, "the first code again, for a new place", a.codeSocket(t, codes[0], "", ""), "CODE_USED")
		wantPlace(t, "the first code's own token, reconnecting", a.codeSocket(t, "", "", first.Token), false)
		wantPlace(t, "the second code, typed lower-case without dashes",
			a.codeSocket(t, "  "+lowerNoDashes(codes[1]), "", ""), true)
		if r := a.adminCall(t, http.MethodDelete, "/api/admin/screenings/s1/codes/"+codes[2], ""); r.status != http.StatusNoContent {
			t.Fatalf("revoke = %d %s", r.status, r)
		}
		wantRefused(t, "a revoked code", a.codeSocket(t, codes[2], "", ""), "CODE_INVALID")
		if n := a.waitingIn(t, "s1"); n != 2 {
			t.Errorf("%d wait, want the two places the codes bought", n)
		}
		if r := a.adminCall(t, http.MethodPost, "/api/admin/screenings/s1/codes", `{"shared": "FRIENDS2026"}`); r.status != http.StatusOK {
			t.Fatalf("shared code = %d %s", r.status, r)
		}
		for i := range 3 {
			wantPlace(t, "the shared code #"+jsonInt(i), a.codeSocket(t, "friends2026", "", ""), true)
		}
		var view struct {
			CodeRequired bool `json:"code_required"`
		}
		decode(t, "GET screening", a.get(t, "/api/screenings/s1"), &view)
		if !view.CodeRequired {
			t.Error("the public view does not say a code is required")
		}
		r := a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", `{"codes_required": false}`)
		var eff struct {
			CodesRequired *bool `json:"codes_required"`
		}
		decode(t, "PATCH codes_required", r, &eff)
		if eff.CodesRequired == nil || *eff.CodesRequired {
			t.Errorf("PATCH codes_required false answered %s", r)
		}
		wantPlace(t, "no code once the operator lifted the requirement", a.codeSocket(t, "", "", ""), true)
	})
}

func lowerNoDashes(code string) string {
	out := []byte{}
	for _, c := range []byte(code) {
		if c != '-' {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			out = append(out, c)
		}
	}
	return string(out)
}

func TestARefusedCodeSpendsNoSolution(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Admin.Key = adminKey
		})
		codes := a.issueCodes(t, 2)
		wantPlace(t, "the first code", a.codeSocket(t, codes[0], solved(t, a.challengeOf(t, "s1")), ""), true)
		payload := solved(t, a.challengeOf(t, "s1"))
		wantRefused(t, "a used code with a good solution", a.codeSocket(t, codes[0], payload, ""), "CODE_USED")
		wantRefused(t, "a good code without a solution", a.codeSocket(t, codes[1], "", ""), "POW_REQUIRED")
		wantPlace(t, "the same solution with a good code", a.codeSocket(t, codes[1], payload, ""), true)
		if n := a.waitingIn(t, "s1"); n != 2 {
			t.Errorf("%d wait, want 2", n)
		}
	})
}

// A code refused its place because the solution that came with it was spent already is not used up: it
// takes a place with a fresh solution.
func TestACodeRefusedForASpentSolutionStaysUnused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Admin.Key = adminKey
		})
		codes := a.issueCodes(t, 2)
		payload := solved(t, a.challengeOf(t, "s1"))
		wantPlace(t, "the first code", a.codeSocket(t, codes[0], payload, ""), true)
		wantRefused(t, "the second code with the spent solution", a.codeSocket(t, codes[1], payload, ""), "POW_INVALID")
		wantPlace(t, "the second code with a fresh solution", a.codeSocket(t, codes[1], solved(t, a.challengeOf(t, "s1")), ""), true)
		if n := a.waitingIn(t, "s1"); n != 2 {
			t.Errorf("%d wait, want 2", n)
		}
	})
}

func TestARegistrationThatFailsTakesBackTheSolutionAndTheCode(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Admin.Key = adminKey
		})
		codes := a.issueCodes(t, 1)
		ch := a.challengeOf(t, "s1")
		payload := solved(t, ch)
		if r := a.adminCall(t, http.MethodPost, "/api/admin/screenings/s1/close", ""); r.status != http.StatusOK {
			t.Fatalf("close = %d %s", r.status, r)
		}
		s := a.codeSocket(t, codes[0], payload, "")
		if m, err := s.Read(5 * time.Second); err != nil || m.Type != "sold_out" {
			t.Fatalf("a socket of a closed line got %+v, %v; want sold_out", m, err)
		}
		mark := queue.Key(env.Prefix, "s1", "pow:"+ch.Signature)
		if n, err := env.Redis.Exists(t.Context(), mark).Result(); err != nil || n != 0 {
			t.Errorf("the solution's spend is still in Redis (%d, %v) after the registration failed", n, err)
		}
		var list struct {
			Codes []struct{ State string } `json:"codes"`
		}
		decode(t, "GET codes", a.adminCall(t, http.MethodGet, "/api/admin/screenings/s1/codes", ""), &list)
		if len(list.Codes) != 1 || list.Codes[0].State != "unused" {
			t.Errorf("the code after the failed registration: %+v, want unused", list.Codes)
		}
	})
}
