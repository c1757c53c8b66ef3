// Tests of the proof of work a screening asks of a socket: the challenge route, a missing, forged,
// expired, replayed or other screening's solution refused with nothing registered, a correct one taking
// one place once, a reconnect keeping its place without a new one, and the operator's cost, live.

package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/altcha"
	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/testenv"
)

// powConfig asks every screening for a cheap proof of work: a mean of 20 derivations of 10 iterations.
func powConfig(c *config.Config) {
	c.Pow.Cost, c.Pow.Iterations = 20, 10
}

// challengeOf asks the server for a challenge of the screening.
func (a *testServer) challengeOf(t *testing.T, screening string) altcha.Challenge {
	t.Helper()
	var ch altcha.Challenge
	decode(t, "GET challenge", a.get(t, "/api/screenings/"+screening+"/challenge"), &ch)
	return ch
}

// solved is the widget's payload of a solution of ch.
func solved(t *testing.T, ch altcha.Challenge) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sol, err := altcha.Solve(ctx, ch, 2)
	if err != nil {
		t.Fatalf("solve: %v", err)
	}
	return altcha.Payload{Challenge: ch, Solution: sol}.Encode()
}

// mustDecode is the JSON inside a payload.
func mustDecode(t *testing.T, payload string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// powSocket opens a socket of the screening with the payload (none when "") and token in its hello.
func (a *testServer) powSocket(t *testing.T, screening, payload, token string) *testenv.Socket {
	t.Helper()
	return testenv.DialHello(t, a.ts.URL+"/ws/screenings/"+screening, token, map[string]string{"altcha": payload})
}

// wantRefused reads an error with code from s and its close 1008.
func wantRefused(t *testing.T, what string, s *testenv.Socket, code string) {
	t.Helper()
	m, err := s.Read(5 * time.Second)
	if err != nil || m.Type != "error" || m.Code != code {
		t.Fatalf("%s: first message %+v, %v; want an error %s", what, m, err, code)
	}
	if got := s.CloseCode(t, 5*time.Second); got != websocket.ClosePolicyViolation {
		t.Errorf("%s: closed with %d, want 1008", what, got)
	}
}

// waitingIn is how many tokens wait in the screening's line.
func (a *testServer) waitingIn(t *testing.T, screening string) int64 {
	t.Helper()
	n, _, err := a.q.Counts(context.Background(), screening)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAChallengeIsWhatTheWidgetExpects(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, powConfig)
		r := a.get(t, "/api/screenings/s1/challenge")
		if cc := r.header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control = %q, want no-store", cc)
		}
		var raw struct {
			Parameters map[string]any `json:"parameters"`
			Signature  string         `json:"signature"`
		}
		decode(t, "GET challenge", r, &raw)
		p := raw.Parameters
		if p["algorithm"] != altcha.AlgorithmPBKDF2SHA256 || p["cost"] != 10.0 || p["keyLength"] != 32.0 {
			t.Errorf("parameters %v: want PBKDF2/SHA-256, cost 10 (pow.iterations), keyLength 32", p)
		}
		if data, _ := p["data"].(map[string]any); data["screening"] != "s1" {
			t.Errorf("data %v, want the screening s1", p["data"])
		}
		exp, _ := p["expiresAt"].(float64)
		if d := time.Until(time.Unix(int64(exp), 0)); d < 4*time.Minute || d > 5*time.Minute+time.Second {
			t.Errorf("expiresAt in %v, want pow.expires (5m)", d)
		}
		if pre, _ := p["keyPrefix"].(string); len(pre) != 32 || p["keySignature"] == nil || len(raw.Signature) != 64 {
			t.Errorf("keyPrefix %v, keySignature %v, signature %q: want 16 bytes of hex, a key signature, an HMAC", p["keyPrefix"], p["keySignature"], raw.Signature)
		}
		wantError(t, "challenge of an unknown screening", a.get(t, "/api/screenings/nope/challenge"), http.StatusNotFound, "UNKNOWN_SCREENING")
	})
}

// Challenges are paced per address like new sockets: one over the pace is refused with 429 RATE_LIMITED
// and told when to come back.
func TestChallengesArePacedPerAddress(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			powConfig(c)
			c.Limits = config.Limits{RegistrationsPerSecond: 0.01, RegistrationBurst: 1}
		})
		if r := a.get(t, "/api/screenings/s1/challenge"); r.status != http.StatusOK {
			t.Fatalf("the first challenge = %d %s, want 200", r.status, r)
		}
		r := a.get(t, "/api/screenings/s1/challenge")
		if r.status != http.StatusTooManyRequests || !strings.Contains(r.String(), `"RATE_LIMITED"`) || r.header.Get("Retry-After") == "" {
			t.Errorf("a second challenge at once = %d %s (Retry-After %q), want 429 RATE_LIMITED with a Retry-After", r.status, r, r.header.Get("Retry-After"))
		}
	})
}

func TestASocketWithoutAGoodSolutionTakesNoPlace(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		var cfg config.Config
		a := newApp(t, env, func(c *config.Config) { powConfig(c); cfg = *c })
		env.Demo(t, "s2", 1, 5)
		good := a.challengeOf(t, "s1")
		var forged altcha.Payload
		if err := json.Unmarshal(mustDecode(t, solved(t, a.challengeOf(t, "s1"))), &forged); err != nil {
			t.Fatal(err)
		}
		forged.Challenge.Parameters.Cost = 1 // cheaper work than was signed
		pow, err := app.PowSettings(cfg)
		if err != nil {
			t.Fatal(err)
		}
		expired, err := altcha.Create(altcha.Options{Cost: 10, Counter: 3, ExpiresAt: time.Now().Add(-time.Minute),
			Data: map[string]string{"screening": "s1"}}, pow.Secrets)
		if err != nil {
			t.Fatal(err)
		}
		unsolved := altcha.Payload{Challenge: good, Solution: altcha.Solution{Counter: 1, DerivedKey: strings.Repeat("ab", 32)}}.Encode()
		cases := []struct{ what, payload, code string }{
			{"no solution", "", "POW_REQUIRED"},
			{"not a payload", "bm90IGpzb24=", "POW_INVALID"},
			{"a forged challenge", forged.Encode(), "POW_INVALID"},
			{"an expired challenge", solved(t, expired), "POW_INVALID"},
			{"another screening's challenge", solved(t, a.challengeOf(t, "s2")), "POW_INVALID"},
			{"a wrong key", unsolved, "POW_INVALID"},
		}
		for _, c := range cases {
			wantRefused(t, c.what, a.powSocket(t, "s1", c.payload, ""), c.code)
		}
		if n := a.waitingIn(t, "s1"); n != 0 {
			t.Fatalf("%d tokens wait after refusals only, want 0", n)
		}
		payload := solved(t, good)
		first := a.powSocket(t, "s1", payload, "")
		m, _ := first.Until(t, "queued", 5*time.Second)
		if !m.Inserted || m.Rank != 1 {
			t.Fatalf("a good solution's socket got %+v, want a new place, rank 1", m)
		}
		wantRefused(t, "the same solution again", a.powSocket(t, "s1", payload, ""), "POW_INVALID")
		if n := a.waitingIn(t, "s1"); n != 1 {
			t.Errorf("%d tokens wait, want the one place the solution bought", n)
		}
		first.Close()
		again := a.powSocket(t, "s1", "", m.Token)
		if back, _ := again.Until(t, "queued", 5*time.Second); back.Inserted || back.Token != m.Token || back.Rank != 1 {
			t.Errorf("a reconnect without a solution got %+v, want its own place kept", back)
		}
		metrics := a.metrics(t)
		for _, want := range []string{`waitroom_entry_checks_total{outcome="POW_INVALID"} 6`, `waitroom_entry_checks_total{outcome="POW_REQUIRED"} 1`,
			`waitroom_entry_checks_total{outcome="ok"} 1`, `waitroom_entry_checks_total{outcome="kept"} 1`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

func TestTheOperatorSetsAScreeningsCostLive(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newAdminApp(t, env)
		costOf := func(r response) int {
			t.Helper()
			var v struct {
				PowCost *int `json:"pow_cost"`
			}
			decode(t, "PATCH admission", r, &v)
			if v.PowCost == nil {
				t.Fatalf("%s has no pow_cost", r)
			}
			return *v.PowCost
		}
		publicCost := func() int {
			var v struct {
				PowCost int `json:"pow_cost"`
			}
			decode(t, "GET screening", a.get(t, "/api/screenings/s1"), &v)
			return v.PowCost
		}
		if publicCost() != 0 {
			t.Fatal("a screening asks for a proof of work with pow.cost 0")
		}
		patch := func(body string) response {
			return a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", body)
		}
		if got := costOf(patch(`{"pow_cost": 30}`)); got != 30 || publicCost() != 30 {
			t.Errorf("after pow_cost 30: the admin view says %d, the public one %d", got, publicCost())
		}
		wantRefused(t, "a socket once the operator asked for a proof of work", a.powSocket(t, "s1", "", ""), "POW_REQUIRED")
		if got := costOf(patch(`{"pow_cost": 0}`)); got != 0 {
			t.Errorf("after pow_cost 0: %d", got)
		}
		s := a.powSocket(t, "s1", "", "")
		if m, _ := s.Until(t, "queued", 5*time.Second); !m.Inserted {
			t.Errorf("with the cost back to 0 a socket got %+v, want a place", m)
		}
		if got := costOf(patch(`{"pow_cost": "default"}`)); got != 0 {
			t.Errorf(`after pow_cost "default" with pow.cost 0: %d`, got)
		}
		wantError(t, "PATCH a negative cost", patch(`{"pow_cost": -1}`), http.StatusBadRequest, "BAD_SCREENING")
		for _, bad := range []string{`{"pow_cost": "lots"}`, `{"pow_cost": 1.5}`} {
			wantError(t, "PATCH "+bad, patch(bad), http.StatusBadRequest, "BAD_REQUEST")
		}
		var list []map[string]json.RawMessage
		decode(t, "GET admin screenings", a.adminCall(t, http.MethodGet, "/api/admin/screenings", ""), &list)
		if len(list) == 0 || !strings.Contains(string(list[0]["admission"]), `"pow_cost":0`) {
			t.Errorf("the operator's list %s does not show the cost", list)
		}
	})
}

// A challenge says the cost it was drawn for: one drawn while the line asked for less (none, say) buys no
// place once the operator raised the cost, while one drawn at a higher cost stays good when it is lowered.
func TestAChallengeDrawnAtALowerCostBuysNoPlaceOnceTheCostIsRaised(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			c.Pow.Iterations = 10
			c.Admin.Key = adminKey
		})
		patch := func(body string) {
			t.Helper()
			if r := a.adminCall(t, http.MethodPatch, "/api/admin/screenings/s1/admission", body); r.status != http.StatusOK {
				t.Fatalf("PATCH %s = %d %s", body, r.status, r)
			}
		}
		cheap := solved(t, a.challengeOf(t, "s1")) // drawn at cost 0
		patch(`{"pow_cost": 30}`)
		wantRefused(t, "a solution of a challenge drawn at cost 0", a.powSocket(t, "s1", cheap, ""), "POW_INVALID")
		dear := solved(t, a.challengeOf(t, "s1"))
		wantPlace(t, "a solution drawn at the cost asked", a.powSocket(t, "s1", solved(t, a.challengeOf(t, "s1")), ""), true)
		patch(`{"pow_cost": 5}`)
		wantPlace(t, "a solution drawn at a higher cost than asked now", a.powSocket(t, "s1", dear, ""), true)
		if n := a.waitingIn(t, "s1"); n != 2 {
			t.Errorf("%d wait, want 2", n)
		}
	})
}
