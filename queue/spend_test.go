// Tests of a pass against its slot: checked (CheckPass, CheckPassLine), spent by Finish, and fresh on
// readmission. Issuing and verifying a pass are tested in pass/.

package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

var secret = []byte("test-secret-0123456789abcdef0123456789")

// admitOne runs an admission at now that must admit exactly one token, and returns its pass's claims.
func admitOne(t *testing.T, q *queue.Queue, p *pass.Issuer, now time.Time, st queue.Settings) pass.Claims {
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
		p := pass.NewSecretIssuer(secret)
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
		for name, c := range map[string]pass.Claims{"waiting token": notAdmitted, "other expiry": otherExpiry} {
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
		p := pass.NewSecretIssuer(secret)
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
		p := pass.NewSecretIssuer(secret)
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
func passFor(t *testing.T, p *pass.Issuer, token string, exp time.Time) pass.Claims {
	t.Helper()
	return passOf(t, p, screening, token, exp)
}

// passOf is passFor for screening s.
func passOf(t *testing.T, p *pass.Issuer, s, token string, exp time.Time) pass.Claims {
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
		p := pass.NewSecretIssuer(secret)
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
		p := pass.NewSecretIssuer(secret)
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
