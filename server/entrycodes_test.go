// Tests of the access code a screening asks of a socket: none, a wrong or revoked one refused with nothing
// registered, a one-time code giving one place (and again to its own token, until it reserved), a shared
// code for many, the operator lifting the requirement; an address over its wrong codes stopped; with a
// proof of work too, a refused code burns its solution, a spent solution is refused whatever the code, and a
// registration that fails takes back both.

package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// codeSocket opens a socket of s1 with the code (none when "") and the payload (none when "") in its hello.
func (a *testServer) codeSocket(t *testing.T, code, payload, token string) *testenv.Socket {
	t.Helper()
	return testenv.DialHello(t, a.ts.URL+"/ws/screenings/s1", token, map[string]string{"code": code, "altcha": payload})
}

// codeSocketInURL opens a socket of s1 as clients before the hello carried them did: the code and the
// payload in the URL.
func (a *testServer) codeSocketInURL(t *testing.T, code, payload string) *testenv.Socket {
	t.Helper()
	q := url.Values{}
	q.Set("code", code)
	q.Set("altcha", payload)
	return testenv.Dial(t, a.ts.URL+"/ws/screenings/s1?"+q.Encode(), "")
}

// The code and the solution travel in the hello, out of the URL that proxies log; the URL form of older
// clients still works, and a hello's code wins over the URL's.
func TestTheCodeAndTheSolutionTravelInTheHelloOrTheURL(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Admin.Key = adminKey
		})
		codes := a.issueCodes(t, 3)
		wantPlace(t, "code and solution in the hello", a.codeSocket(t, codes[0], solved(t, a.challengeOf(t, "s1")), ""), true)
		wantPlace(t, "code and solution in the URL", a.codeSocketInURL(t, codes[1], solved(t, a.challengeOf(t, "s1"))), true)
		q := url.Values{"code": {"ZZZZ-ZZZZ-ZZZZ"}}
		both := testenv.DialHello(t, a.ts.URL+"/ws/screenings/s1?"+q.Encode(), "",
			map[string]string{"code": codes[2], "altcha": solved(t, a.challengeOf(t, "s1"))})
		wantPlace(t, "a good code in the hello, a wrong one in the URL", both, true)
		if strings.Contains(a.log.String(), codes[0]) || strings.Contains(a.log.String(), lowerNoDashes(codes[0])) {
			t.Error("the log shows a code sent in the hello")
		}
	})
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

// A wrong code burns the solution that came with it: one solution pays for one guess, and the same solution
// with a good code is refused as spent.
func TestAWrongCodeBurnsItsSolution(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Admin.Key = adminKey
		})
		codes := a.issueCodes(t, 2)
		wantPlace(t, "the first code", a.codeSocket(t, codes[0], solved(t, a.challengeOf(t, "s1")), ""), true)
		payload := solved(t, a.challengeOf(t, "s1"))
		wantRefused(t, "a used code with a good solution", a.codeSocket(t, codes[0], payload, ""), "CODE_USED")
		wantRefused(t, "the same solution with a good code", a.codeSocket(t, codes[1], payload, ""), "POW_INVALID")
		payload = solved(t, a.challengeOf(t, "s1"))
		wantRefused(t, "a made-up code with a good solution", a.codeSocket(t, "ZZZZ-ZZZZ-ZZZZ", payload, ""), "CODE_INVALID")
		wantRefused(t, "that solution again with a good code", a.codeSocket(t, codes[1], payload, ""), "POW_INVALID")
		wantRefused(t, "a good code without a solution", a.codeSocket(t, codes[1], "", ""), "POW_REQUIRED")
		wantPlace(t, "a good code with a fresh solution", a.codeSocket(t, codes[1], solved(t, a.challengeOf(t, "s1")), ""), true)
		if n := a.waitingIn(t, "s1"); n != 2 {
			t.Errorf("%d wait, want 2", n)
		}
	})
}

// An address that tried limits.wrong_codes_per_minute wrong codes tries no more, with or without a
// solution, and its right code waits too: it is refused RATE_LIMITED (or held by the infinite queue),
// while another address is not.
func TestAnAddressOverItsWrongCodesTriesNoMore(t *testing.T) {
	for _, infinite := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "held"}[infinite], func(t *testing.T) {
			testenv.Each(t, func(t *testing.T, env *testenv.Env) {
				a := newApp(t, env, func(c *config.Config) {
					powConfig(c)
					c.Admin.Key = adminKey
					c.Limits.WrongCodesPerMinute = 3
					c.Bots = config.Bots{InfiniteQueue: infinite, FailureLimit: 100, Hold: time.Minute, MaxHeld: 10}
				})
				codes := a.issueCodes(t, 1)
				for i := range 3 {
					wantRefused(t, "wrong code #"+jsonInt(i+1), a.codeSocket(t, "ZZZZ-ZZZZ-ZZZ"+jsonInt(i), solved(t, a.challengeOf(t, "s1")), ""), "CODE_INVALID")
				}
				s := a.codeSocket(t, codes[0], solved(t, a.challengeOf(t, "s1")), "")
				if infinite {
					wantHeld(t, "the right code with a solution, past the wrong ones", s, 0)
					if !strings.Contains(a.metrics(t), `waitroom_bots_held_total{reason="wrong_codes"} 1`) {
						t.Error("/metrics does not count the held socket as wrong_codes")
					}
					s.Close()
				} else {
					m, err := s.Read(5 * time.Second)
					if err != nil || m.Type != "error" || m.Code != "RATE_LIMITED" {
						t.Fatalf("the right code with a solution, past the wrong ones, got %+v, %v; want RATE_LIMITED", m, err)
					}
					if code := s.CloseCode(t, 5*time.Second); code != websocket.CloseTryAgainLater {
						t.Errorf("closed with %d, want 1013", code)
					}
				}
				if n := a.waitingIn(t, "s1"); n != 0 {
					t.Errorf("%d wait, want none", n)
				}
				var list struct {
					Codes []struct{ State string } `json:"codes"`
				}
				decode(t, "GET codes", a.adminCall(t, http.MethodGet, "/api/admin/screenings/s1/codes", ""), &list)
				if len(list.Codes) != 1 || list.Codes[0].State != "unused" {
					t.Errorf("the right code after the address was stopped: %+v, want unused", list.Codes)
				}
			})
		})
	}
}

// A one-time code buys once: after its place ended in a reservation, its own token reconnecting with it is
// refused as another token is, and nothing is registered.
func TestAOneTimeCodeBuysOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		codes := a.issueCodes(t, 1)
		place := wantPlace(t, "the code", a.codeSocket(t, codes[0], "", ""), true)
		admitted := testenv.Admit(t, a.q, a.passes, "s1", time.Now(), place.Token)
		if r := a.reserve(t, "s1", admitted[0].Pass, `{"seats":["A1"]}`); r.status != http.StatusCreated {
			t.Fatalf("reserve = %d %s", r.status, r)
		}
		wantRefused(t, "the code's own token again, after it reserved", a.codeSocket(t, codes[0], "", place.Token), "CODE_USED")
		wantRefused(t, "the code for a new place", a.codeSocket(t, codes[0], "", ""), "CODE_USED")
		if n := a.waitingIn(t, "s1"); n != 0 {
			t.Errorf("%d wait, want none: the code bought its seats", n)
		}
	})
}

// A spent solution is refused alike whatever code comes with it (the answer is no oracle for the code), and
// a code refused its place because its solution was spent already is not used up: it takes a place with a
// fresh solution.
func TestASpentSolutionIsRefusedAlikeWhateverTheCodeAndSpendsNone(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Admin.Key = adminKey
		})
		codes := a.issueCodes(t, 2)
		payload := solved(t, a.challengeOf(t, "s1"))
		wantPlace(t, "the first code", a.codeSocket(t, codes[0], payload, ""), true)
		wantRefused(t, "the second code with the spent solution", a.codeSocket(t, codes[1], payload, ""), "POW_INVALID")
		wantRefused(t, "a wrong code with the spent solution", a.codeSocket(t, "ZZZZ-ZZZZ-ZZZZ", payload, ""), "POW_INVALID")
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
