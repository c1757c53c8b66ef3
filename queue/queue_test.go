// Tests of registration, status, counts and leave, and of the refusal of malformed tokens and screening ids.

package queue_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestConcurrentRegistrationsEachGetTheirOwnTokenAndPlace(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		const n = 1000
		entries := make([]queue.Entry, n)
		errs := make([]error, n)
		// All start together; at most 64 are in flight, so none waits out the client's pool timeout on a
		// loaded machine.
		start, inFlight := make(chan struct{}), make(chan struct{}, 64)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				inFlight <- struct{}{}
				defer func() { <-inFlight }()
				entries[i], errs[i] = q.Register(t.Context(), screening, "")
			})
		}
		close(start)
		wg.Wait()

		tokens := make([]string, n)
		seen := make(map[string]bool, n)
		byRank := make([]string, n) // the token each registration was told stands at that rank
		for i, e := range entries {
			if errs[i] != nil {
				t.Fatalf("Register #%d: %v", i, errs[i])
			}
			if e.State != queue.Waiting || !e.Inserted {
				t.Errorf("Register #%d = state %q, inserted %v, want %q, true", i, e.State, e.Inserted, queue.Waiting)
			}
			if !queue.ValidToken(e.Token) {
				t.Errorf("Register #%d token %q is not 32 lowercase hex", i, e.Token)
			}
			if seen[e.Token] {
				t.Errorf("Register #%d token %s handed out twice", i, e.Token)
			}
			seen[e.Token] = true
			tokens[i] = e.Token
			// Nobody leaves, so each newcomer is told it is last: rank = total - 1.
			if e.ZeroBasedRank < 0 || e.ZeroBasedRank >= n || e.Total != e.ZeroBasedRank+1 {
				t.Fatalf("Register #%d = rank %d of %d, want the last place of the line so far", i, e.ZeroBasedRank, e.Total)
			}
			if byRank[e.ZeroBasedRank] != "" {
				t.Errorf("Register #%d told rank %d, already told to %s", i, e.ZeroBasedRank, byRank[e.ZeroBasedRank])
			}
			byRank[e.ZeroBasedRank] = e.Token
		}
		if got := zcard(t, env, screening, "waiting"); got != n {
			t.Errorf("ZCARD waiting = %d, want %d", got, n)
		}

		ranks, total, err := q.Ranks(t.Context(), screening, tokens)
		if err != nil {
			t.Fatal(err)
		}
		if total != n {
			t.Errorf("Ranks total = %d, want %d", total, n)
		}
		for i, r := range ranks {
			if r < 0 || r >= n || byRank[r] != tokens[i] {
				t.Errorf("Ranks(%s) = %d, want the rank Register gave it", tokens[i], r)
			}
		}
		// The sequence is dense: the line's scores are 1..n, none burned.
		for i, z := range members(t, env, screening, "waiting") {
			if z.Score != float64(i+1) {
				t.Errorf("score of rank %d = %v, want %d", i, z.Score, i+1)
				break
			}
		}
	})
}

func TestRegisterAgainKeepsItsPlace(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 3)
		b := tokens[1]
		again := func(wantRank, wantTotal int64) {
			t.Helper()
			e, err := q.Register(t.Context(), screening, b)
			if err != nil {
				t.Fatal(err)
			}
			if e.State != queue.Waiting || e.Inserted || e.ZeroBasedRank != wantRank || e.Total != wantTotal {
				t.Errorf("Register(%q) again = %s, inserted %v, rank %d of %d, want %s, false, rank %d of %d",
					b, e.State, e.Inserted, e.ZeroBasedRank, e.Total, queue.Waiting, wantRank, wantTotal)
			}
		}
		again(1, 3)
		later := registerN(t, q, screening, 2)
		again(1, 5)
		again(1, 5)

		// Registering again burns no sequence number: the newcomers took 4 and 5.
		for i, tok := range later {
			score, err := env.Redis.ZScore(t.Context(), queue.Key(env.Prefix, screening, "waiting"), tok).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(4 + i); score != want {
				t.Errorf("score of newcomer %d = %v, want %v", i, score, want)
			}
		}
		// Only the line moving moves it.
		if _, err := q.Leave(t.Context(), screening, tokens[0]); err != nil {
			t.Fatal(err)
		}
		again(0, 4)
	})
}

func TestRegisterAdmittedReportsItsExpiry(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tok := registerN(t, q, screening, 1)[0]
		res, err := q.Admit(t.Context(), screening, time.Now(), settings(1, 1))
		if err != nil || !slices.Equal(res.Admitted, []string{tok}) {
			t.Fatalf("Admit = %v, %v, want [%s]", res.Admitted, err, tok)
		}

		e, err := q.Register(t.Context(), screening, tok)
		if err != nil {
			t.Fatal(err)
		}
		if e.State != queue.Admitted || e.Inserted || !e.ExpiresAt.Equal(res.ExpiresAt) {
			t.Errorf("Register(%q) = %s, inserted %v, expires %v, want %s, false, expires %v",
				tok, e.State, e.Inserted, e.ExpiresAt, queue.Admitted, res.ExpiresAt)
		}
		if got := zcard(t, env, screening, "waiting"); got != 0 {
			t.Errorf("ZCARD waiting = %d, want 0: an admitted token must not queue again", got)
		}
	})
}

func TestRegisterAfterLapsedAdmissionQueuesAtTheEnd(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		start := time.Now().Truncate(time.Second)
		clk := newClock(q, start)
		tokens := registerN(t, q, screening, 2)
		st := settings(1, 1)
		st.ActiveTTL = 10 * time.Second
		res, err := q.Admit(t.Context(), screening, start, st)
		if err != nil || !slices.Equal(res.Admitted, tokens[:1]) {
			t.Fatalf("Admit = %v, %v, want %v", res.Admitted, err, tokens[:1])
		}
		clk.Set(res.ExpiresAt)

		e, err := q.Register(t.Context(), screening, tokens[0])
		if err != nil {
			t.Fatal(err)
		}
		if e.State != queue.Waiting || !e.Inserted || e.ZeroBasedRank != 1 || e.Total != 2 {
			t.Errorf("Register(%q) after its admission lapsed = %s, inserted %v, rank %d of %d, want %s, true, rank 1 of 2",
				tokens[0], e.State, e.Inserted, e.ZeroBasedRank, e.Total, queue.Waiting)
		}
		if _, active, err := q.Counts(t.Context(), screening); err != nil || active != 0 {
			t.Errorf("Counts active = %d, %v, want 0", active, err)
		}
	})
}

func TestRegisterAfterCloseIsRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		waiting := registerN(t, q, screening, 3)
		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}

		for _, tok := range []string{waiting[0], queue.NewToken(), ""} {
			e, err := q.Register(t.Context(), screening, tok)
			if !errors.Is(err, queue.ErrClosed) || e.State != queue.Closed {
				t.Errorf("Register(%q) after Close = %s, %v, want %s, %v", tok, e.State, err, queue.Closed, queue.ErrClosed)
			}
		}
		if closed, err := q.Closed(t.Context(), screening); err != nil || !closed {
			t.Errorf("Closed = %v, %v, want true", closed, err)
		}
		if got := zcard(t, env, screening, "waiting"); got != 0 {
			t.Errorf("ZCARD waiting after Close = %d, want 0", got)
		}
		if e, err := q.Status(t.Context(), screening, waiting[1]); err != nil || e.State != queue.Closed {
			t.Errorf("Status(%q) after Close = %s, %v, want %s", waiting[1], e.State, err, queue.Closed)
		}
	})
}

func TestMalformedTokenOrScreeningIsRefused(t *testing.T) {
	good := queue.NewToken()
	cases := []struct {
		screening, token string
		want             error
	}{
		{screening, "abc", queue.ErrBadToken},
		{screening, strings.ToUpper(good), queue.ErrBadToken},
		{screening, good + "0", queue.ErrBadToken},
		{screening, good[:31], queue.ErrBadToken},
		{screening, good[:31] + "g", queue.ErrBadToken},
		{screening, good[:31] + "\n", queue.ErrBadToken},
		{"", good, queue.ErrBadScreening},
		{"s 1", good, queue.ErrBadScreening},
		{"s}:x{", good, queue.ErrBadScreening},
		{"s1*", good, queue.ErrBadScreening},
		{strings.Repeat("s", 65), good, queue.ErrBadScreening},
	}
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		for _, c := range cases {
			if _, err := q.Register(t.Context(), c.screening, c.token); !errors.Is(err, c.want) {
				t.Errorf("Register(%q, %q) = %v, want %v", c.screening, c.token, err, c.want)
			}
			if _, err := q.Status(t.Context(), c.screening, c.token); !errors.Is(err, c.want) {
				t.Errorf("Status(%q, %q) = %v, want %v", c.screening, c.token, err, c.want)
			}
			if _, err := q.Leave(t.Context(), c.screening, c.token); !errors.Is(err, c.want) {
				t.Errorf("Leave(%q, %q) = %v, want %v", c.screening, c.token, err, c.want)
			}
		}
		if _, err := q.Register(t.Context(), "", ""); !errors.Is(err, queue.ErrBadScreening) {
			t.Errorf("Register(%q, %q) = %v, want %v", "", "", err, queue.ErrBadScreening)
		}
		var keys []string
		iter := env.Redis.Scan(t.Context(), 0, env.Prefix+"*", 1000).Iterator()
		for iter.Next(t.Context()) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		if len(keys) != 0 {
			t.Errorf("keys written for refused calls: %v, want none", keys)
		}
	})
}

func TestRanksStatusAndCountsAgreeWithRedis(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 20)
		for _, i := range []int{0, 7, 19} {
			if _, err := q.Leave(t.Context(), screening, tokens[i]); err != nil {
				t.Fatal(err)
			}
		}
		res, err := q.Admit(t.Context(), screening, time.Now(), settings(5, 10))
		if err != nil || len(res.Admitted) != 5 {
			t.Fatalf("Admit = %v, %v, want 5 admitted", res.Admitted, err)
		}
		all := append(slices.Clone(tokens), queue.NewToken()) // and one never seen

		ranks, total, err := q.Ranks(t.Context(), screening, all)
		if err != nil {
			t.Fatal(err)
		}
		wantTotal := zcard(t, env, screening, "waiting")
		if wantTotal != 12 {
			t.Errorf("ZCARD waiting = %d, want 12 (20 - 3 left - 5 admitted)", wantTotal)
		}
		if total != wantTotal {
			t.Errorf("Ranks total = %d, want ZCARD %d", total, wantTotal)
		}
		for i, tok := range all {
			want := zrank(t, env, screening, tok)
			if ranks[i] != want {
				t.Errorf("Ranks(%q) = %d, want ZRANK %d", tok, ranks[i], want)
			}
			e, err := q.Status(t.Context(), screening, tok)
			if err != nil {
				t.Fatal(err)
			}
			if e.Total != wantTotal {
				t.Errorf("Status(%q).Total = %d, want ZCARD %d", tok, e.Total, wantTotal)
			}
			switch {
			case want >= 0:
				if e.State != queue.Waiting || e.ZeroBasedRank != want {
					t.Errorf("Status(%q) = %s rank %d, want %s rank %d", tok, e.State, e.ZeroBasedRank, queue.Waiting, want)
				}
			case slices.Contains(res.Admitted, tok):
				if e.State != queue.Admitted || !e.ExpiresAt.Equal(res.ExpiresAt) {
					t.Errorf("Status(%q) = %s expires %v, want %s expires %v", tok, e.State, e.ExpiresAt, queue.Admitted, res.ExpiresAt)
				}
			default:
				if e.State != queue.Unknown {
					t.Errorf("Status(%q) = %s, want %s", tok, e.State, queue.Unknown)
				}
			}
		}
		waiting, active, err := q.Counts(t.Context(), screening)
		if err != nil {
			t.Fatal(err)
		}
		if wantActive := zcard(t, env, screening, "active"); waiting != wantTotal || active != wantActive {
			t.Errorf("Counts = %d waiting, %d active, want ZCARD %d, %d", waiting, active, wantTotal, wantActive)
		}
	})
}

func TestLeaveTakesATokenOutOfTheLineAndFreesItsSlot(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 4) // a, b admitted below; c, d waiting
		a, c, d := tokens[0], tokens[2], tokens[3]
		st := settings(2, 2)
		at := tickTimes()
		if res, err := q.Admit(t.Context(), screening, at(0), st); err != nil || len(res.Admitted) != 2 {
			t.Fatalf("Admit = %v, %v, want 2 admitted", res.Admitted, err)
		}
		leave := func(tok string, want bool) {
			t.Helper()
			if got, err := q.Leave(t.Context(), screening, tok); err != nil || got != want {
				t.Errorf("Leave(%q) = %v, %v, want %v", tok, got, err, want)
			}
		}

		leave(c, true)
		if got := zrank(t, env, screening, c); got != -1 {
			t.Errorf("ZRANK of %s after Leave = %d, want -1", c, got)
		}
		if got := zrank(t, env, screening, d); got != 0 {
			t.Errorf("ZRANK of %s after the one ahead left = %d, want 0", d, got)
		}
		leave(c, false)
		leave(queue.NewToken(), false)

		leave(a, true)
		if _, active, err := q.Counts(t.Context(), screening); err != nil || active != 1 {
			t.Errorf("Counts active after an admitted token left = %d, %v, want 1", active, err)
		}
		if e, err := q.Status(t.Context(), screening, a); err != nil || e.State != queue.Unknown {
			t.Errorf("Status(%q) after Leave = %s, %v, want %s", a, e.State, err, queue.Unknown)
		}
		res, err := q.Admit(t.Context(), screening, at(1), st)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Admitted, []string{d}) {
			t.Errorf("Admit after a slot was freed admitted %v, want [%s]", res.Admitted, d)
		}
	})
}
