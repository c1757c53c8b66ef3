// Tests of batching: calls that arrive together share round trips, a count-off without an answer is sent
// again and counts once, and a registration without an answer is undone.

package queue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// A burst of registrations goes to Redis in a few pipelines, and each one still gets a place of its own:
// dense sequence numbers 1..n, each once, and the rank that number means.
func TestRegistrationsArrivingTogetherShareRoundTrips(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		counted := testenv.CountCalls(env.Redis)
		q := queue.New(env.Redis, env.Prefix)
		const n = 300
		entries := make([]queue.Entry, n)
		errs := make([]error, n)
		together(n, func(i int) { entries[i], errs[i] = q.Register(t.Context(), screening, "") })

		seqs := make([]int64, 0, n)
		for i, e := range entries {
			if errs[i] != nil {
				t.Fatalf("registration %d: %v", i, errs[i])
			}
			if e.State != queue.Waiting || !e.Inserted {
				t.Fatalf("registration %d: %+v, want a new waiting entry", i, e)
			}
			if e.ZeroBasedRank != e.Seq-1 {
				t.Errorf("registration %d: rank %d with sequence number %d (nobody admitted: want rank = seq-1)", i, e.ZeroBasedRank, e.Seq)
			}
			seqs = append(seqs, e.Seq)
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("sequence numbers %v…: want 1..%d, each once", seqs[:min(len(seqs), 10)], n)
			}
		}
		if got := len(members(t, env, screening, "waiting")); got != n {
			t.Fatalf("%d in line, want %d", got, n)
		}
		p, lone := counted.Pipelines.Load(), counted.LoneScripts.Load()
		t.Logf("%d registrations in %d pipelines (%d scripts sent alone)", n, p, lone)
		if lone != 0 || p == 0 || p >= n {
			t.Fatalf("%d registrations went in %d pipelines and %d alone: want them together, in fewer pipelines than registrations", n, p, lone)
		}

		// A registration again with its token keeps its place, also when it arrives with a crowd.
		again, err := q.Register(t.Context(), screening, entries[7].Token)
		if err != nil || again.Seq != entries[7].Seq || again.Inserted {
			t.Fatalf("re-registration: %+v, %v; want seq %d, not inserted", again, err, entries[7].Seq)
		}
	})
}

// Sockets closing together (an instance draining, a crowd's hold ending) are counted off in a few
// pipelines, and every one of them is: each token noted gone, no socket count left. One Lua call per
// socket through the connection pool lost 7,736 of 16,666 count-offs to its 5 s timeout when 100,000
// sockets closed at once (docs/benchmarks.md).
func TestCountOffsArrivingTogetherShareRoundTrips(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		const n = 300
		tokens := make([]string, n)
		for i := range tokens {
			e, err := q.Register(t.Context(), screening, "")
			if err != nil {
				t.Fatal(err)
			}
			tokens[i] = e.Token
		}
		counted := testenv.CountCalls(env.Redis)
		errs := make([]error, n)
		together(n, func(i int) { errs[i] = q.Disconnected(t.Context(), screening, tokens[i]) })
		for i, err := range errs {
			if err != nil {
				t.Fatalf("count-off %d: %v", i, err)
			}
		}
		if got := len(members(t, env, screening, "gone")); got != n {
			t.Errorf("%d tokens noted gone, want all %d", got, n)
		}
		if left := env.Redis.HLen(t.Context(), queue.Key(env.Prefix, screening, "conns")).Val(); left != 0 {
			t.Errorf("%d socket counts left, want none", left)
		}
		p, lone := counted.Pipelines.Load(), counted.LoneScripts.Load()
		t.Logf("%d count-offs in %d pipelines (%d scripts sent alone)", n, p, lone)
		if lone != 0 || p == 0 || p >= n {
			t.Fatalf("%d count-offs went in %d pipelines and %d alone: want them together, in fewer pipelines than count-offs", n, p, lone)
		}
	})
}

// A caller that stops waiting does not take its count-off with it: the call is still queued (ErrQueued)
// and goes out; Settle waits for it, as a draining instance does before it exits.
func TestCountOffOutlivesItsCallerAndSettleWaitsForIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		e, err := q.Register(t.Context(), screening, "")
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var held atomic.Bool
		testenv.OnReply(env.Redis, func(c redis.Cmder) {
			if strings.HasPrefix(c.Name(), "evalsha") && slices.Contains(c.Args(), any(e.Token)) && held.CompareAndSwap(false, true) {
				<-release // the pipeline's answer is held up: the flusher is busy
			}
		})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := q.Disconnected(ctx, screening, e.Token); !errors.Is(err, queue.ErrQueued) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("count-off past its caller's deadline: %v, want ErrQueued and the deadline", err)
		}
		short, cancelShort := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancelShort()
		if err := q.Settle(short); err == nil {
			t.Fatal("Settle returned while a call was under way")
		}
		close(release)
		if err := q.Settle(t.Context()); err != nil {
			t.Fatal(err)
		}
		if gone := members(t, env, screening, "gone"); len(gone) != 1 || gone[0].Member != e.Token {
			t.Fatalf("gone = %v, want the token counted off", gone)
		}
	})
}

// A Redis that forgot the registration script (restarted, or SCRIPT FLUSH) still registers: the pipeline's
// NOSCRIPT answer makes the registration (or the count-off) load the script and run again. The embedded
// Redis only: a flush of the shared one would make every other test's scripts reload.
func TestRegistrationAfterScriptFlush(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	q := queue.New(env.Redis, env.Prefix)
	first, err := q.Register(t.Context(), screening, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Redis.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	second, err := q.Register(t.Context(), screening, "")
	if err != nil {
		t.Fatalf("registration after SCRIPT FLUSH: %v", err)
	}
	if second.Seq != first.Seq+1 {
		t.Fatalf("sequence numbers %d then %d, want consecutive", first.Seq, second.Seq)
	}
	// The count-off script too, which Redis has never seen here.
	if err := env.Redis.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Disconnected(t.Context(), screening, first.Token); err != nil {
		t.Fatalf("count-off after SCRIPT FLUSH: %v", err)
	}
	if gone := members(t, env, screening, "gone"); len(gone) != 1 || gone[0].Member != first.Token {
		t.Fatalf("gone = %v, want the first token", gone)
	}
}

// Pass checks that arrive together go to Redis in a few pipelines, and each still gets its own answer: a
// held slot passes, a spent pass is PASS_SPENT, a pass of another admission is NOT_ACTIVE.
func TestPassChecksArrivingTogetherShareRoundTrips(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := pass.NewSecretIssuer(secret)
		const n = 300
		registerN(t, q, screening, n)
		res, err := q.Admit(t.Context(), screening, time.Now(), settings(n, n))
		if err != nil || len(res.Admitted) != n {
			t.Fatalf("Admit = %d admitted, %v; want %d", len(res.Admitted), err, n)
		}
		claims := make([]pass.Claims, n)
		want := make([]error, n)
		for i, tok := range res.Admitted {
			claims[i] = passFor(t, p, tok, res.ExpiresAt)
			switch i % 3 {
			case 1:
				if err := q.Finish(t.Context(), claims[i]); err != nil {
					t.Fatal(err)
				}
				want[i] = queue.ErrPassSpent
			case 2:
				claims[i] = passFor(t, p, tok, res.ExpiresAt.Add(-time.Second)) // another admission's pass
				want[i] = queue.ErrNotActive
			}
		}

		counted := testenv.CountCalls(env.Redis)
		errs := make([]error, n)
		together(n, func(i int) { _, errs[i] = q.CheckPassLine(t.Context(), claims[i]) })
		for i, err := range errs {
			if !errors.Is(err, want[i]) || (want[i] == nil && err != nil) {
				t.Errorf("check %d = %v, want %v", i, err, want[i])
			}
		}
		pipes := counted.Pipelines.Load()
		t.Logf("%d pass checks in %d pipelines", n, pipes)
		if pipes == 0 || pipes >= n {
			t.Fatalf("%d pass checks went in %d pipelines: want fewer pipelines than checks (each was one before)", n, pipes)
		}
		// The line's closing and released count are read once per pipeline (all of one screening here), not
		// once per pass.
		if mgets, zscores := counted.Named("mget"), counted.Named("zscore"); mgets != pipes || zscores != 2*n {
			t.Errorf("%d pass checks of one screening in %d pipelines sent %d MGET and %d ZSCORE, want %d and %d",
				n, pipes, mgets, zscores, pipes, 2*n)
		}
	})
}

// Checks of two screenings that share a pipeline each read their own screening's closing.
func TestPassChecksOfTwoScreeningsTogetherReadEachClosing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := pass.NewSecretIssuer(secret)
		const n = 100 // per screening
		screenings := []string{"open", "closed"}
		var claims []pass.Claims
		for _, s := range screenings {
			registerN(t, q, s, n)
			res, err := q.Admit(t.Context(), s, time.Now(), settings(n, n))
			if err != nil || len(res.Admitted) != n {
				t.Fatalf("Admit %s = %d admitted, %v; want %d", s, len(res.Admitted), err, n)
			}
			for _, tok := range res.Admitted {
				claims = append(claims, passOf(t, p, s, tok, res.ExpiresAt))
			}
		}
		if err := q.Close(t.Context(), "closed"); err != nil {
			t.Fatal(err)
		}
		counted := testenv.CountCalls(env.Redis)
		closed := make([]bool, len(claims))
		errs := make([]error, len(claims))
		together(len(claims), func(i int) {
			var line queue.LineState
			line, errs[i] = q.CheckPassLine(t.Context(), claims[i])
			closed[i] = line.Closed
		})
		for i, c := range claims {
			if errs[i] != nil || closed[i] != (c.Screening == "closed") {
				t.Errorf("check %d of %s = closed %v, %v; want closed %v, nil", i, c.Screening, closed[i], errs[i], c.Screening == "closed")
			}
		}
		if pipes := counted.Pipelines.Load(); pipes >= int64(len(claims)) {
			t.Errorf("%d checks in %d pipelines: they did not share any", len(claims), pipes)
		}
	})
}

// together runs call(0) … call(n-1) on goroutines of their own, released at once, and returns when all
// have returned.
func together(n int, call func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			call(i)
		})
	}
	close(start)
	wg.Wait()
}

// twoSockets registers a token twice, as two tabs do, after a count-off of another token (so Redis knows
// the count-off script and a lost reply is of a script that ran).
func twoSockets(t *testing.T, env *testenv.Env, q *queue.Queue) string {
	t.Helper()
	other, err := q.Register(t.Context(), screening, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Disconnected(t.Context(), screening, other.Token); err != nil {
		t.Fatal(err)
	}
	e, err := q.Register(t.Context(), screening, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Register(t.Context(), screening, e.Token); err != nil {
		t.Fatal(err)
	}
	return e.Token
}

// sockets is the open-socket count Redis keeps for token.
func sockets(t *testing.T, env *testenv.Env, token string) int64 {
	t.Helper()
	n, err := env.Redis.HGet(t.Context(), queue.Key(env.Prefix, screening, "conns"), token).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantCountedGone checks that token has no socket counted and is noted gone, when.
func wantCountedGone(t *testing.T, env *testenv.Env, token, when string) {
	t.Helper()
	if n := sockets(t, env, token); n != 0 {
		t.Errorf("%s the token counts %d open sockets, want 0", when, n)
	}
	if gone := members(t, env, screening, "gone"); !slices.ContainsFunc(gone, func(z redis.Z) bool { return z.Member == token }) {
		t.Errorf("%s the token is not noted gone", when)
	}
}

// A count-off whose reply is lost (it ran, but Redis answered too late) is sent again, and the second run
// changes nothing: one of two tabs closing leaves the token with one socket, not counted gone. Before, a
// lost count-off was given up, leaving the token counted as connected for ever.
func TestCountOffWhoseReplyIsLostIsSentAgainAndCountsOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		m := queue.NewMetrics(prometheus.NewRegistry())
		q.SetMetrics(m)
		token := twoSockets(t, env, q)
		l := &testenv.Lossy{Token: token, Run: true, Fail: 1}
		env.Redis.AddHook(l)
		if err := q.Disconnected(t.Context(), screening, token); err != nil {
			t.Fatalf("count-off whose first reply was lost: %v, want the resend's answer", err)
		}
		if resent, lost := testutil.ToFloat64(m.CountOffResends), testutil.ToFloat64(m.CountOffsLost); resent != 1 || lost != 0 {
			t.Errorf("count-offs resent %v, lost %v; want 1 and 0", resent, lost)
		}
		if n := l.Seen.Load(); n != 2 {
			t.Errorf("the count-off went out %d times, want twice", n)
		}
		if n := sockets(t, env, token); n != 1 {
			t.Errorf("the token counts %d open sockets after one of its two closed, want 1", n)
		}
		if gone := members(t, env, screening, "gone"); slices.ContainsFunc(gone, func(z redis.Z) bool { return z.Member == token }) {
			t.Error("the token was noted gone with a tab still open: counted off twice")
		}
	})
}

// A count-off that never reached Redis is sent again and counts: the last tab's close notes the token gone.
func TestCountOffThatNeverRanIsSentAgain(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		token := twoSockets(t, env, q)
		l := &testenv.Lossy{Token: token, Fail: 2}
		env.Redis.AddHook(l)
		for range 2 {
			if err := q.Disconnected(t.Context(), screening, token); err != nil {
				t.Fatalf("count-off: %v", err)
			}
		}
		if n := l.Seen.Load(); n != 4 {
			t.Errorf("two count-offs went out %d times, want twice each (the first try of each lost)", n)
		}
		wantCountedGone(t, env, token, "after both its sockets closed")
	})
}

// A count-off is given up after its resends (and a draining instance's Settle waits for them), and a
// registration is never sent twice: its count is not safe to change again.
func TestCountOffGivesUpAfterItsResendsAndARegistrationIsSentOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		m := queue.NewMetrics(prometheus.NewRegistry())
		q.SetMetrics(m)
		token := twoSockets(t, env, q)
		l := &testenv.Lossy{Token: token, Fail: 1 << 30}
		env.Redis.AddHook(l)
		if err := q.Disconnected(t.Context(), screening, token); err == nil {
			t.Fatal("a count-off Redis never answered returned no error")
		}
		if n := l.Seen.Load(); n != 5 {
			t.Errorf("a count-off never answered went out %d times, want 5 (once, and 4 resends)", n)
		}
		if resent, lost := testutil.ToFloat64(m.CountOffResends), testutil.ToFloat64(m.CountOffsLost); resent != 4 || lost != 1 {
			t.Errorf("count-offs resent %v, lost %v; want 4 and 1", resent, lost)
		}
		if err := q.Settle(t.Context()); err != nil {
			t.Fatal(err)
		}

		l.Seen.Store(0)
		if _, err := q.Register(t.Context(), screening, token); err == nil {
			t.Fatal("a registration Redis never answered returned no error")
		}
		if err := q.Settle(t.Context()); err != nil { // a resend, had one been queued, has gone out
			t.Fatal(err)
		}
		if n := l.Seen.Load(); n != 1 {
			t.Errorf("a registration without an answer went out %d times, want once", n)
		}
	})
}

// inLine reports whether token waits in the screening's line.
func inLine(t *testing.T, env *testenv.Env, token string) bool {
	t.Helper()
	err := env.Redis.ZScore(t.Context(), queue.Key(env.Prefix, screening, "waiting"), token).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return err == nil
}

// A registration that ran but whose answer was lost is undone: its socket is counted off, and its token (a
// fresh one, which the client never learnt) is noted gone, so the grace drops it instead of it waiting in
// line for ever and costing an admission.
func TestRegistrationWhoseAnswerIsLostIsUndone(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		twoSockets(t, env, q) // Redis knows the scripts
		token := queue.NewToken()
		env.Redis.AddHook(&testenv.Lossy{Token: token, Run: true, Fail: 1})
		e, err := q.Register(t.Context(), screening, token)
		if err == nil || e.Token != token {
			t.Fatalf("registration whose answer was lost: %+v, %v; want an error and the entry's token to undo", e, err)
		}
		if !inLine(t, env, token) || sockets(t, env, token) != 1 {
			t.Fatalf("the registration did not run (in line %v, %d sockets): the test's premise", inLine(t, env, token), sockets(t, env, token))
		}
		if err := q.Undo(t.Context(), screening, e); err != nil {
			t.Fatal(err)
		}
		wantCountedGone(t, env, token, "after the undo of its only registration (else it would wait in line for ever)")
	})
}

// A registration that never reached Redis is undone without counting anything off, and should Redis get it
// after all, later than the undo, it does nothing.
func TestRegistrationUndoneBeforeItRanNeverRuns(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		token := twoSockets(t, env, q) // a token with two sockets, so a wrong count-off shows
		env.Redis.AddHook(&testenv.Lossy{Token: token, Fail: 1})
		e, err := q.Register(t.Context(), screening, token)
		if err == nil || e.Token != token {
			t.Fatalf("registration that never reached Redis: %+v, %v; want an error and the entry's token to undo", e, err)
		}
		if err := q.Undo(t.Context(), screening, e); err != nil {
			t.Fatal(err)
		}
		if n := sockets(t, env, token); n != 2 {
			t.Errorf("after undoing a registration that never ran the token counts %d sockets, want its 2", n)
		}
		if _, err := queue.RegisterLate(t.Context(), q, screening, e); err == nil {
			t.Error("the registration arriving after its undo answered as if it ran")
		}
		if n := sockets(t, env, token); n != 2 {
			t.Errorf("after the late registration the token counts %d sockets, want still 2", n)
		}
		if err := q.Undo(t.Context(), screening, queue.Entry{Token: token}); err != nil {
			t.Errorf("undo of an entry Enter did not fail: %v, want nothing to undo", err)
		}
		if n := sockets(t, env, token); n != 2 {
			t.Errorf("an undo of an answered registration counted off: %d sockets, want 2", n)
		}
	})
}

// A registration that found the line sold out counted nothing, so undoing it (its answer lost) counts
// nothing off either.
func TestRegistrationThatFoundTheLineClosedIsUndoneWithoutACountOff(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		token := twoSockets(t, env, q)
		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		// Closing forgets the counts; the token's two tabs are counted again so a count-off would show.
		if err := env.Redis.HSet(t.Context(), queue.Key(env.Prefix, screening, "conns"), token, 2).Err(); err != nil {
			t.Fatal(err)
		}
		env.Redis.AddHook(&testenv.Lossy{Token: token, Run: true, Fail: 1})
		e, err := q.Register(t.Context(), screening, token)
		if err == nil || e.Token != token {
			t.Fatalf("registration whose answer was lost: %+v, %v; want an error and the entry's token to undo", e, err)
		}
		if err := q.Undo(t.Context(), screening, e); err != nil {
			t.Fatal(err)
		}
		if n := sockets(t, env, token); n != 2 {
			t.Errorf("after undoing a registration that found the line closed the token counts %d sockets, want its 2", n)
		}
	})
}
