// Tests of passes: issued and verified, checked against their slot, spent by Finish, and fresh on readmission.

package queue_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

var secret = []byte("test-secret-0123456789abcdef0123456789")

func TestPassRoundTripsItsClaims(t *testing.T) {
	p := queue.NewPasses(secret)
	tok := queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)

	pass, err := p.Issue(screening, tok, exp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Verify(pass, screening)
	if err != nil {
		t.Fatalf("Verify(Issue(...)) = %v, want nil", err)
	}
	want := queue.Claims{ID: queue.PassID(screening, tok, exp), Token: tok, Screening: screening, ExpiresAt: exp}
	if c.ID != want.ID || c.Token != want.Token || c.Screening != want.Screening || !c.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("Verify = %+v, want %+v", c, want)
	}
	// Every copy of one admission's pass has one id; another admission of the same token has another.
	if again, _ := p.Issue(screening, tok, exp); mustVerify(t, p, again).ID != c.ID {
		t.Errorf("a second pass of the same admission has another id")
	}
	if later := queue.PassID(screening, tok, exp.Add(time.Second)); later == c.ID {
		t.Errorf("PassID of a later admission = %s, the same as the earlier one", later)
	}
}

func mustVerify(t *testing.T, p *queue.Passes, pass string) queue.Claims {
	t.Helper()
	c, err := p.Verify(pass, screening)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return c
}

// handClaims is a pass's payload built by hand: the registered claims and adm, as Issue writes them.
type handClaims struct {
	jwt.RegisteredClaims
	Adm int64 `json:"adm"`
}

// sign builds a JWT by hand, with claims Issue would never write.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims handClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyRejectsEveryPassThatMustNotReserve(t *testing.T) {
	p := queue.NewPasses(secret)
	tok, other := queue.NewToken(), queue.NewToken()
	exp := time.Now().Add(time.Minute).Truncate(time.Second)
	good, err := p.Issue(screening, tok, exp)
	if err != nil {
		t.Fatal(err)
	}
	otherPass, _ := p.Issue(screening, other, exp)
	// Each case changes one thing of a pass that verifies (checked first), so it is refused for that alone.
	claims := func(edit func(*handClaims)) handClaims {
		c := handClaims{RegisteredClaims: jwt.RegisteredClaims{
			Subject: tok, Audience: jwt.ClaimStrings{screening}, ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt: jwt.NewNumericDate(time.Now()), ID: queue.PassID(screening, tok, exp),
		}, Adm: exp.UnixMilli()}
		if edit != nil {
			edit(&c)
		}
		return c
	}
	if c, err := p.Verify(sign(t, jwt.SigningMethodHS256, secret, claims(nil)), screening); err != nil || c.Token != tok {
		t.Fatalf("the cases' unchanged pass: Verify = %+v, %v, want it to verify", c, err)
	}
	parts := strings.Split(good, ".")
	otherParts := strings.Split(otherPass, ".")
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}

	cases := []struct {
		name, pass, screening string
	}{
		{"tampered signature", parts[0] + "." + parts[1] + "." + flip(parts[2], len(parts[2])/2), screening},
		{"another pass's claims under this signature", parts[0] + "." + otherParts[1] + "." + parts[2], screening},
		{"wrong screening", good, "s2"},
		{"no screening", good, ""},
		{"expired", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			past := time.Now().Add(-time.Minute).Truncate(time.Second)
			c.ExpiresAt, c.ID, c.Adm = jwt.NewNumericDate(past), queue.PassID(screening, tok, past), past.UnixMilli()
		})), screening},
		{"two audiences", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.Audience = jwt.ClaimStrings{screening, "s2"}
		})), screening},
		{"exp not adm's second", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.ExpiresAt = jwt.NewNumericDate(exp.Add(time.Hour))
		})), screening},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)), screening},
		{"HS512 with the same secret", sign(t, jwt.SigningMethodHS512, secret, claims(nil)), screening},
		{"HS384 with the same secret", sign(t, jwt.SigningMethodHS384, secret, claims(nil)), screening},
		{"another secret", sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef012345"), claims(nil)), screening},
		{"no expiry", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) { c.ExpiresAt = nil })), screening},
		{"id of another admission", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.ID = queue.PassID(screening, tok, exp.Add(time.Second))
		})), screening},
		{"subject not a token", sign(t, jwt.SigningMethodHS256, secret, claims(func(c *handClaims) {
			c.Subject, c.ID = "admin", queue.PassID(screening, "admin", exp)
		})), screening},
		{"not a JWT", "not.a.jwt", screening},
		{"empty", "", screening},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Verify(c.pass, c.screening)
			if !errors.Is(err, queue.ErrInvalidPass) {
				t.Errorf("Verify = %+v, %v, want %v", got, err, queue.ErrInvalidPass)
			}
			if got != (queue.Claims{}) {
				t.Errorf("Verify returned claims %+v with its error, want none", got)
			}
		})
	}
}

// admitOne runs an admission at now that must admit exactly one token, and returns its pass's claims.
func admitOne(t *testing.T, q *queue.Queue, p *queue.Passes, now time.Time, st queue.Settings) queue.Claims {
	t.Helper()
	res, err := q.Admit(t.Context(), screening, now, st)
	if err != nil || len(res.Admitted) != 1 {
		t.Fatalf("Admit = %v, %v, want one admitted", res.Admitted, err)
	}
	return passFor(t, p, res.Admitted[0], res.ExpiresAt)
}

func TestCheckPassAcceptsOnlyTheAdmissionThatHoldsTheSlot(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := queue.NewPasses(secret)
		tokens := registerN(t, q, screening, 2)
		held := admitOne(t, q, p, time.Now(), settings(1, 10))
		if held.Token != tokens[0] {
			t.Fatalf("admitted %s, want the first registered %s", held.Token, tokens[0])
		}
		if err := q.CheckPass(t.Context(), held); err != nil {
			t.Errorf("CheckPass(held admission) = %v, want nil", err)
		}

		notAdmitted := passFor(t, p, tokens[1], held.ExpiresAt)
		otherExpiry := passFor(t, p, held.Token, held.ExpiresAt.Add(time.Second))
		for name, c := range map[string]queue.Claims{"waiting token": notAdmitted, "other expiry": otherExpiry} {
			if err := q.CheckPass(t.Context(), c); !errors.Is(err, queue.ErrNotActive) {
				t.Errorf("CheckPass(%s) = %v, want %v", name, err, queue.ErrNotActive)
			}
		}

		if _, err := q.Leave(t.Context(), screening, held.Token); err != nil {
			t.Fatal(err)
		}
		if err := q.CheckPass(t.Context(), held); !errors.Is(err, queue.ErrNotActive) {
			t.Errorf("CheckPass after Leave = %v, want %v", err, queue.ErrNotActive)
		}
	})
}

func TestCheckPassOfALapsedAdmissionIsNotActive(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := queue.NewPasses(secret)
		start := time.Now().Add(time.Minute).Truncate(time.Second) // passes stay unexpired for the real clock
		clk := newClock(q, start)
		registerN(t, q, screening, 1)
		st := settings(1, 10)
		st.ActiveTTL = 10 * time.Second
		first := admitOne(t, q, p, start, st)

		clk.Set(first.ExpiresAt.Add(-time.Millisecond))
		if err := q.CheckPass(t.Context(), first); err != nil {
			t.Errorf("CheckPass a millisecond before expiry = %v, want nil", err)
		}
		clk.Set(first.ExpiresAt.Add(time.Millisecond))
		if err := q.CheckPass(t.Context(), first); !errors.Is(err, queue.ErrNotActive) {
			t.Errorf("CheckPass after expiry = %v, want %v", err, queue.ErrNotActive)
		}

		// The same token queues again and is admitted again: the old pass stays dead, the new one lives.
		if e, err := q.Register(t.Context(), screening, first.Token); err != nil || e.State != queue.Waiting {
			t.Fatalf("Register again = %s, %v, want %s", e.State, err, queue.Waiting)
		}
		second := admitOne(t, q, p, clk.Now(), st)
		if second.ID == first.ID {
			t.Errorf("second admission's pass id = the first's %s", first.ID)
		}
		if err := q.CheckPass(t.Context(), first); !errors.Is(err, queue.ErrNotActive) {
			t.Errorf("CheckPass(first pass) after readmission = %v, want %v", err, queue.ErrNotActive)
		}
		if err := q.CheckPass(t.Context(), second); err != nil {
			t.Errorf("CheckPass(second pass) = %v, want nil", err)
		}
	})
}

func TestFinishSpendsThePassAndFreesTheSlot(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := queue.NewPasses(secret)
		tokens := registerN(t, q, screening, 2)
		st := settings(1, 1)
		at := tickTimes()
		c := admitOne(t, q, p, at(0), st)
		if res, err := q.Admit(t.Context(), screening, at(1), st); err != nil || res.Skip != queue.ActiveCapacityReached {
			t.Fatalf("Admit while the slot is held = skip %q, %v, want %q", res.Skip, err, queue.ActiveCapacityReached)
		}

		if err := q.Finish(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if err := q.CheckPass(t.Context(), c); !errors.Is(err, queue.ErrPassSpent) {
			t.Errorf("CheckPass after Finish = %v, want %v", err, queue.ErrPassSpent)
		}
		if _, active, err := q.Counts(t.Context(), screening); err != nil || active != 0 {
			t.Errorf("Counts active after Finish = %d, %v, want 0", active, err)
		}
		res, err := q.Admit(t.Context(), screening, at(2), st)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Admitted, tokens[1:]) {
			t.Errorf("Admit after Finish admitted %v, want %v", res.Admitted, tokens[1:])
		}
	})
}

// passFor issues and verifies the pass of token's admission to screening until exp.
func passFor(t *testing.T, p *queue.Passes, token string, exp time.Time) queue.Claims {
	t.Helper()
	return passOf(t, p, screening, token, exp)
}

// passOf is passFor for screening s.
func passOf(t *testing.T, p *queue.Passes, s, token string, exp time.Time) queue.Claims {
	t.Helper()
	pass, err := p.Issue(s, token, exp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Verify(pass, s)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return c
}

func TestReadmissionGetsAFreshPass(t *testing.T) {
	// Two admissions of one token within one second (a sub-second interval) must still get distinct passes:
	// the first one's Finish must not spend the second.
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := queue.NewPasses(secret)
		st := settings(1, 1)
		st.Interval = 500 * time.Millisecond // config accepts any positive interval
		s, _ := newScheduler(t, q, st, "a")
		start := time.Now().Truncate(time.Second)
		tok := registerN(t, q, screening, 1)[0]

		first, err := s.Tick(t.Context(), screening, start)
		if err != nil || len(first.Admitted) != 1 {
			t.Fatalf("first Tick = %v, %v, want [%s]", first.Admitted, err, tok)
		}
		c1 := passFor(t, p, tok, first.ExpiresAt)
		if err := q.Finish(t.Context(), c1); err != nil {
			t.Fatal(err)
		}
		// The holder reserved, and queues again for more seats; the next tick admits it again.
		if e, err := q.Register(t.Context(), screening, tok); err != nil || e.State != queue.Waiting {
			t.Fatalf("Register again = %s, %v, want %s", e.State, err, queue.Waiting)
		}
		second, err := s.Tick(t.Context(), screening, start.Add(st.Interval))
		if err != nil || len(second.Admitted) != 1 {
			t.Fatalf("second Tick = %v, %v, want [%s]", second.Admitted, err, tok)
		}
		c2 := passFor(t, p, tok, second.ExpiresAt)
		if c2.ID == c1.ID {
			t.Errorf("second admission's pass id = the first's %s (expiries %v and %v)", c1.ID, first.ExpiresAt, second.ExpiresAt)
		}
		if err := q.CheckPass(t.Context(), c2); err != nil {
			t.Errorf("CheckPass(second admission's pass) = %v, want nil", err)
		}
	})
}

// CheckPassLine checks the pass as CheckPass does and reports the line's closing in the same round trip.
func TestCheckPassLineTellsAClosedLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := queue.NewPasses(secret)
		registerN(t, q, screening, 1)
		held := admitOne(t, q, p, time.Now(), settings(1, 10))
		if line, err := q.CheckPassLine(t.Context(), held); err != nil || line.Closed {
			t.Fatalf("CheckPassLine on an open line = %+v, %v; want open, nil", line, err)
		}
		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		line, err := q.CheckPassLine(t.Context(), held)
		if !line.Closed {
			t.Errorf("CheckPassLine after Close = %+v, %v; want closed", line, err)
		}
	})
}
