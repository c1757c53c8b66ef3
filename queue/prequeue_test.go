// Tests of the pre-queue and the opening's shuffle (and that its order is uniform), of the grace given to
// tokens whose sockets are gone, of pausing, and of the figures and sequence numbers.

package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// grace is how long the abandonment tests let a token's sockets be gone.
const grace = 2 * time.Minute

// withGrace is s with abandonment after g.
func withGrace(s queue.Settings, g time.Duration) queue.Settings {
	s.Grace = g
	return s
}

// sweep is a pace whose ticks have no room (max_active 0): they admit nobody and only drop the abandoned.
var sweep = queue.Settings{Interval: time.Second, BatchSize: 1, MaxActive: 0, ActiveTTL: time.Minute, LockTTL: 5 * time.Second, Grace: grace}

// enterN puts n new tokens in the screening before opensAt, one after another, and returns them in arrival
// order. Each must land in the pre-queue.
func enterN(t *testing.T, q *queue.Queue, screening string, opensAt time.Time, n int) []string {
	t.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		e, err := q.Enter(t.Context(), screening, "", opensAt)
		if err != nil {
			t.Fatalf("Enter #%d: %v", i, err)
		}
		if e.State != queue.Pre {
			t.Fatalf("Enter #%d before the sale = %s, want %s", i, e.State, queue.Pre)
		}
		tokens[i] = e.Token
	}
	return tokens
}

// preKey is the token's shuffle key in the pre-queue, read straight from Redis.
func preKey(t *testing.T, env *testenv.Env, screening, token string) float64 {
	t.Helper()
	k, err := env.Redis.ZScore(t.Context(), queue.Key(env.Prefix, screening, "pre"), token).Result()
	if err != nil {
		t.Fatalf("ZSCORE pre %s: %v", token, err)
	}
	return k
}

// status is q.Status, failing the test on an error.
func status(t *testing.T, q *queue.Queue, screening, token string) queue.Entry {
	t.Helper()
	e, err := q.Status(t.Context(), screening, token)
	if err != nil {
		t.Fatalf("Status(%s): %v", token, err)
	}
	return e
}

// figures is q.Figures, failing the test on an error.
func figures(t *testing.T, q *queue.Queue, screening string) queue.Figures {
	t.Helper()
	f, err := q.Figures(t.Context(), screening)
	if err != nil {
		t.Fatalf("Figures(%s): %v", screening, err)
	}
	return f
}

// subscribe delivers the screening's events on the returned channel from the moment it returns until the
// test ends.
func subscribe(t *testing.T, q *queue.Queue, screening string) <-chan queue.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan queue.Event, 64)
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	var subErr error
	go func() {
		defer close(done)
		subErr = q.Subscribe(ctx, screening, func(ctx context.Context, ev queue.Event) {
			select {
			case events <- ev:
			case <-ctx.Done():
			}
		}, func(context.Context) { once.Do(func() { close(ready) }) }, nil)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case <-done:
		t.Fatalf("Subscribe(%s) = %v before it subscribed", screening, subErr)
	case <-time.After(5 * time.Second):
		t.Fatalf("Subscribe(%s) not subscribed after 5s", screening)
	}
	return events
}

// nextEvent returns the next event of kind, skipping others, failing the test after 5s.
func nextEvent(t *testing.T, events <-chan queue.Event, kind queue.EventKind) queue.Event {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event within 5s", kind)
		}
	}
}

func TestEnterBeforeTheSaleWaitsInThePreQueue(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		newClock(q, t0)
		opensAt := t0.Add(time.Hour)

		tokens := make([]string, 3)
		for i := range tokens {
			e, err := q.Enter(t.Context(), screening, "", opensAt)
			if err != nil {
				t.Fatalf("Enter #%d: %v", i, err)
			}
			if e.State != queue.Pre || !e.Inserted || e.Total != int64(i+1) || e.ZeroBasedRank != 0 || e.Seq != 0 {
				t.Errorf("Enter #%d before the sale = %s, inserted %v, rank %d of %d, seq %d; want %s, true, rank 0 of %d, seq 0",
					i, e.State, e.Inserted, e.ZeroBasedRank, e.Total, e.Seq, queue.Pre, i+1)
			}
			tokens[i] = e.Token
		}

		// A reconnect (a refresh of the page) keeps the token's shuffle key: nobody re-rolls by refreshing.
		key := preKey(t, env, screening, tokens[1])
		for range 3 {
			e, err := q.Enter(t.Context(), screening, tokens[1], opensAt)
			if err != nil {
				t.Fatal(err)
			}
			if e.State != queue.Pre || e.Inserted || e.Total != 3 {
				t.Errorf("Enter(%s) again = %s, inserted %v, total %d; want %s, false, 3", tokens[1], e.State, e.Inserted, e.Total, queue.Pre)
			}
		}
		if got := preKey(t, env, screening, tokens[1]); got != key {
			t.Errorf("shuffle key after re-entering = %v, want the first one %v", got, key)
		}

		if e := status(t, q, screening, tokens[1]); e.State != queue.Pre || e.Total != 3 {
			t.Errorf("Status(%s) = %s, total %d; want %s, total 3 (the pre-queue)", tokens[1], e.State, e.Total, queue.Pre)
		}
		if e := status(t, q, screening, queue.NewToken()); e.State != queue.Unknown {
			t.Errorf("Status(never seen) = %s, want %s", e.State, queue.Unknown)
		}
		if got := zcard(t, env, screening, "waiting"); got != 0 {
			t.Errorf("ZCARD waiting before the opening = %d, want 0", got)
		}
		if f := figures(t, q, screening); f.PreQueue != 3 || f.Waiting != 0 || f.Opened {
			t.Errorf("Figures before the opening = pre_queue %d, waiting %d, opened %v; want 3, 0, false", f.PreQueue, f.Waiting, f.Opened)
		}
	})
}

func TestALineWithNobodyEarlyOpensAtTheFirstArrivalAtTheSaleTime(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		opensAt := time.Now().Truncate(time.Second).Add(time.Hour)
		clk := newClock(q, opensAt.Add(-time.Millisecond))

		// A millisecond early is early.
		if e, err := q.Enter(t.Context(), "early", "", opensAt); err != nil || e.State != queue.Pre {
			t.Errorf("Enter 1ms before the sale = %s, %v; want %s", e.State, err, queue.Pre)
		}

		clk.Set(opensAt)
		e, err := q.Enter(t.Context(), screening, "", opensAt)
		if err != nil || e.State != queue.Waiting || e.Seq != 1 || e.ZeroBasedRank != 0 {
			t.Fatalf("Enter at the sale time with nobody early = %s, seq %d, rank %d, %v; want %s, seq 1, rank 0",
				e.State, e.Seq, e.ZeroBasedRank, err, queue.Waiting)
		}
		if f := figures(t, q, screening); !f.Opened {
			t.Errorf("Figures.Opened after the first arrival at the sale time = false, want true")
		}
		o, err := q.Open(t.Context(), screening, opensAt, settings(1, 1))
		if err != nil || o.Opened {
			t.Errorf("Open of a line already open = opened %v, %v; want false", o.Opened, err)
		}
	})
}

func TestArrivalsAfterTheSaleTimeJoinTheShuffleUntilTheOpening(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		opensAt := t0.Add(time.Minute)
		early := enterN(t, q, screening, opensAt, 1)

		// The sale time has come but the scheduler has not opened the line yet.
		clk.Set(opensAt.Add(time.Second))
		late, err := q.Enter(t.Context(), screening, "", opensAt)
		if err != nil || late.State != queue.Pre {
			t.Errorf("Enter after the sale time, before the opening = %s, %v; want %s", late.State, err, queue.Pre)
		}
		reg, err := q.Register(t.Context(), screening, "")
		if err != nil || reg.State != queue.Pre {
			t.Errorf("Register after the sale time, before the opening = %s, %v; want %s", reg.State, err, queue.Pre)
		}

		o, err := q.Open(t.Context(), screening, clk.Now(), settings(1, 1))
		if err != nil || !o.Opened || o.Shuffled != 3 {
			t.Fatalf("Open = opened %v, shuffled %d, %v; want true, 3", o.Opened, o.Shuffled, err)
		}
		for _, tok := range []string{early[0], late.Token, reg.Token} {
			if e := status(t, q, screening, tok); e.State != queue.Waiting || e.Seq < 1 || e.Seq > 3 {
				t.Errorf("Status(%s) after the opening = %s, seq %d; want %s with a seq in 1..3", tok, e.State, e.Seq, queue.Waiting)
			}
		}
	})
}

func TestOpenPlacesThePreQueueInTheOrderOfItsKeys(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		opensAt := t0.Add(time.Hour)
		const n = 20
		enterN(t, q, screening, opensAt, n)
		byKey := tokensOf(members(t, env, screening, "pre"))
		events := subscribe(t, q, screening)

		clk.Set(opensAt)
		o, err := q.Open(t.Context(), screening, opensAt, settings(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if !o.Opened || o.Shuffled != n || o.Abandoned != 0 {
			t.Errorf("Open = opened %v, shuffled %d, abandoned %d; want true, %d, 0", o.Opened, o.Shuffled, o.Abandoned, n)
		}
		if o.Line.Epoch < 1 || o.Line.Head != 0 || o.Line.LastSeq != n || o.Line.Total != n || len(o.Line.Left) != 0 {
			t.Errorf("Open line = %+v, want epoch ≥ 1, head 0, last seq %d, total %d, nobody left", o.Line, n, n)
		}

		// The line's order is the order of the keys, with the dense sequence numbers 1..n.
		line := members(t, env, screening, "waiting")
		if got := tokensOf(line); !slices.Equal(got, byKey) {
			t.Errorf("line after the opening = %v, want the pre-queue in key order %v", got, byKey)
		}
		for i, z := range line {
			if z.Score != float64(i+1) {
				t.Errorf("seq of place %d = %v, want %d", i, z.Score, i+1)
			}
		}
		if got := zcard(t, env, screening, "pre"); got != 0 {
			t.Errorf("ZCARD pre after the opening = %d, want 0", got)
		}
		for i, tok := range byKey {
			if e := status(t, q, screening, tok); e.State != queue.Waiting || e.ZeroBasedRank != int64(i) || e.Seq != int64(i+1) {
				t.Errorf("Status(%s) = %s, rank %d, seq %d; want %s, rank %d, seq %d", tok, e.State, e.ZeroBasedRank, e.Seq, queue.Waiting, i, i+1)
			}
		}

		// Every instance is told, with the whole line: a fresh Line rebased on it ranks everyone.
		ev := nextEvent(t, events, queue.EventOpened)
		if ev.Screening != screening || ev.TickAtMs != opensAt.UnixMilli() || ev.Epoch != o.Line.Epoch || ev.Head != o.Line.Head ||
			ev.LastSeq != o.Line.LastSeq || ev.Total != o.Line.Total || len(ev.Left) != 0 {
			t.Errorf("EventOpened = %+v, want screening %s at %d with the line %+v", ev, screening, opensAt.UnixMilli(), o.Line)
		}
		var fresh queue.Line
		if !fresh.Apply(ev) {
			t.Fatalf("Line{}.Apply(EventOpened) = false, want true")
		}
		for i := range n {
			if r, ok := fresh.Rank(int64(i + 1)); !ok || r != int64(i) {
				t.Errorf("Rank(seq %d) from the opening event = %d, %v; want %d, true", i+1, r, ok, i)
			}
		}

		// Later arrivals queue after the pre-queue, first come first served.
		for i := range 2 {
			e, err := q.Enter(t.Context(), screening, "", opensAt)
			if err != nil {
				t.Fatal(err)
			}
			if e.State != queue.Waiting || !e.Inserted || e.Seq != int64(n+1+i) || e.ZeroBasedRank != int64(n+i) {
				t.Errorf("Enter #%d after the opening = %s, inserted %v, seq %d, rank %d; want %s, true, seq %d, rank %d",
					i, e.State, e.Inserted, e.Seq, e.ZeroBasedRank, queue.Waiting, n+1+i, n+i)
			}
		}

		// Once open, it stays open: a second Open (another instance's) changes nothing.
		again, err := q.Open(t.Context(), screening, opensAt.Add(time.Second), settings(1, 1))
		if err != nil || again.Opened || again.Shuffled != 0 {
			t.Errorf("second Open = opened %v, shuffled %d, %v; want false, 0", again.Opened, again.Shuffled, err)
		}
		if l, err := q.Line(t.Context(), screening); err != nil || l.Epoch != o.Line.Epoch || l.LastSeq != n+2 {
			t.Errorf("Line after a second Open = %+v, %v; want epoch %d (no new event), last seq %d", l, err, o.Line.Epoch, n+2)
		}
	})
}

func TestOpenOnAClosedScreeningDoesNothing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		opensAt := time.Now().Add(time.Hour)
		tokens := enterN(t, q, screening, opensAt, 3)
		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}

		o, err := q.Open(t.Context(), screening, opensAt, settings(1, 1))
		if err != nil || o.Opened || o.Shuffled != 0 {
			t.Errorf("Open after Close = opened %v, shuffled %d, %v; want false, 0", o.Opened, o.Shuffled, err)
		}
		if w, p := zcard(t, env, screening, "waiting"), zcard(t, env, screening, "pre"); w != 0 || p != 0 {
			t.Errorf("ZCARD waiting, pre after Close and Open = %d, %d; want 0, 0", w, p)
		}
		if f := figures(t, q, screening); f.Opened || !f.Closed {
			t.Errorf("Figures after Close and Open = opened %v, closed %v; want false, true", f.Opened, f.Closed)
		}
		if e := status(t, q, screening, tokens[0]); e.State != queue.Closed {
			t.Errorf("Status(%s) = %s, want %s", tokens[0], e.State, queue.Closed)
		}
		if _, err := q.Enter(t.Context(), screening, tokens[0], opensAt); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Enter after Close = %v, want %v", err, queue.ErrClosed)
		}
	})
}

// shuffleOnce enters n users one after another into the pre-queue of a fresh screening, opens its line, and
// returns the users (0 = the first to arrive) in the line's order.
func shuffleOnce(ctx context.Context, q *queue.Queue, rdb redis.UniversalClient, screening string, n int) ([]int, error) {
	opensAt := time.Now().Add(time.Hour)
	user := make(map[string]int, n)
	for i := range n {
		e, err := q.Enter(ctx, screening, "", opensAt)
		if err != nil {
			return nil, err
		}
		if e.State != queue.Pre {
			return nil, fmt.Errorf("Enter #%d = %s, want %s", i, e.State, queue.Pre)
		}
		user[e.Token] = i
	}
	o, err := q.Open(ctx, screening, opensAt, queue.Settings{})
	if err != nil {
		return nil, err
	}
	if !o.Opened || o.Shuffled != int64(n) {
		return nil, fmt.Errorf("Open = opened %v, shuffled %d; want true, %d", o.Opened, o.Shuffled, n)
	}
	line, err := rdb.ZRange(ctx, queue.Key(q.Prefix(), screening, "waiting"), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	order := make([]int, len(line))
	for pos, tok := range line {
		order[pos] = user[tok]
	}
	return order, nil
}

// The shuffle must be able to produce every order: with three early arrivals, each of the 6 orders occurs.
// Missing one of them in 300 fair openings has probability below 6 × (5/6)^300 ≈ 10^-23.
func TestOpeningReachesEveryOrderOfThreeEarlyArrivals(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		seen := map[string]int{}
		openings := 0
		for ; openings < 300 && len(seen) < 6; openings++ {
			order, err := shuffleOnce(t.Context(), q, env.Redis, fmt.Sprintf("perm%d", openings), 3)
			if err != nil {
				t.Fatal(err)
			}
			seen[fmt.Sprint(order)]++
		}
		t.Logf("%d openings reached %d orders: %v", openings, len(seen), seen)
		if len(seen) != 6 {
			t.Errorf("orders of 3 early arrivals after %d openings = %v, want all 6", openings, seen)
		}
	})
}

// The opening order is a uniform random permutation: over 3,000 openings of 6 early arrivals, the count of
// each user at each final place passes a chi-squared test of uniformity.
//
// The statistic. With N openings of n users, the cell (user i, place j) counts C_ij; fair means
// E[C_ij] = N/n. Each opening adds a permutation matrix, whose cells are correlated (one user per place and
// one place per user), so Pearson's X² = Σ (C_ij − N/n)² / (N/n) is not χ² with (n−1)² degrees of freedom
// as it is for independent draws: its covariance is 1/(n−1) · (I − J/n) ⊗ (I − J/n), so X² tends to
// n/(n−1) · χ²((n−1)²) (mean n(n−1) = 30, not 25). The test uses X² · (n−1)/n against χ²(25);
// TestUniformityStatisticIsCalibrated checks that on a known-uniform shuffle.
//
// The threshold. The server draws its keys with crypto/rand, which a test cannot seed, so a fair shuffle
// fails with probability p. p = 10^-6 (critical value ≈ 73.9 for 25 degrees of freedom, computed below)
// makes a flake negligible, while the biased orders of TestUniformityTestRejectsBiasedOrders are rejected
// at p < 10^-12.
//
// The backend. 3,000 openings are 24,000 script calls: about 1 s on the real Redis here, but 12 s on the
// embedded one under -race (its Lua interpreter is slow). So the big loop runs once, on the real Redis when
// it answers (what production runs) and on the embedded one otherwise; the shuffle itself (the keys drawn in
// Enter, the sort in open.lua) is the same code on both, and TestOpeningReachesEveryOrderOfThreeEarlyArrivals
// runs on both.
func TestOpeningOrderIsUniform(t *testing.T) {
	kinds := testenv.Kinds(t)
	kind := kinds[len(kinds)-1] // real when reachable
	t.Run(string(kind), func(t *testing.T) {
		env := testenv.New(t, kind)
		const users, openings, workers = 6, 3000, 8
		q := queue.New(env.Redis, env.Prefix)
		started := time.Now()
		orders := make([][]int, openings)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < openings && errs[w] == nil; i += workers {
					orders[i], errs[w] = shuffleOnce(t.Context(), q, env.Redis, fmt.Sprintf("fair%d", i), users)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		counts := positionCounts(users, orders)
		stat, p := uniformity(counts, openings)
		t.Logf("%d openings of %d users in %v: statistic %.2f, p = %.4g; counts (user × place) %v",
			openings, users, time.Since(started).Round(time.Millisecond), stat, p, counts)
		if p < rejectBelow {
			t.Errorf("opening order: statistic %.2f (p = %.3g) exceeds the critical value %.2f of χ²(%d) at p = %g, want a uniform shuffle; counts %v",
				stat, p, chiSquaredCritical(rejectBelow, (users-1)*(users-1)), (users-1)*(users-1), rejectBelow, counts)
		}
	})
}

// rejectBelow is the p-value under which the uniformity test rejects.
const rejectBelow = 1e-6

// positionCounts counts, for each user, how often it took each place: counts[user][place].
func positionCounts(users int, orders [][]int) [][]int {
	counts := make([][]int, users)
	for i := range counts {
		counts[i] = make([]int, users)
	}
	for _, order := range orders {
		for place, user := range order {
			counts[user][place]++
		}
	}
	return counts
}

// uniformity returns the statistic of the counts of `openings` permutations (see TestOpeningOrderIsUniform)
// and its p-value under χ²((n−1)²).
func uniformity(counts [][]int, openings int) (stat, p float64) {
	n := len(counts)
	want := float64(openings) / float64(n)
	for _, row := range counts {
		for _, c := range row {
			d := float64(c) - want
			stat += d * d / want
		}
	}
	stat *= float64(n-1) / float64(n)
	return stat, chiSquaredTail(stat, (n-1)*(n-1))
}

// chiSquaredTail is P(X ≥ x) for X ~ χ²(df): the regularized upper incomplete gamma Q(df/2, x/2), by its
// series below a+1 and its continued fraction above (Numerical Recipes, 3rd ed., §6.2).
func chiSquaredTail(x float64, df int) float64 {
	a, x := float64(df)/2, x/2
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for k := 1; k < 10000; k++ {
			term *= x / (a + float64(k))
			sum += term
			if math.Abs(term) < math.Abs(sum)*1e-16 {
				break
			}
		}
		return 1 - front*sum
	}
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for k := 1; k < 10000; k++ {
		an := -float64(k) * (float64(k) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		if math.Abs(d*c-1) < 1e-16 {
			break
		}
	}
	return front * h
}

// chiSquaredCritical is the x with P(X ≥ x) = p for X ~ χ²(df), by bisection.
func chiSquaredCritical(p float64, df int) float64 {
	lo, hi := 0.0, 10*float64(df)+200
	for range 200 {
		mid := (lo + hi) / 2
		if chiSquaredTail(mid, df) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// The tail function agrees with the published critical values (NIST/SEMATECH e-Handbook of Statistical
// Methods, §1.3.6.7.4, "Critical Values of the Chi-Square Distribution").
func TestChiSquaredTailMatchesPublishedCriticalValues(t *testing.T) {
	for _, c := range []struct {
		df   int
		x, p float64
	}{
		{1, 3.841, 0.05}, {1, 10.828, 0.001}, {25, 37.652, 0.05}, {25, 52.620, 0.001}, {100, 149.449, 0.001},
	} {
		if got := chiSquaredTail(c.x, c.df); math.Abs(got-c.p) > c.p*1e-3 {
			t.Errorf("chiSquaredTail(%v, %d) = %.6g, want %g (±0.1%%)", c.x, c.df, got, c.p)
		}
		if got := chiSquaredCritical(c.p, c.df); math.Abs(got-c.x) > 1e-3 {
			t.Errorf("chiSquaredCritical(%g, %d) = %.4f, want %v", c.p, c.df, got, c.x)
		}
	}
	t.Logf("critical value of χ²(25) at p = %g: %.3f", rejectBelow, chiSquaredCritical(rejectBelow, 25))
}

// permutations is orders of n users, made by shuffle with a seeded source.
func permutations(seed uint64, n, count int, shuffle func(r *rand.Rand, order []int)) [][]int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	orders := make([][]int, count)
	for i := range orders {
		order := make([]int, n)
		for u := range order {
			order[u] = u
		}
		shuffle(r, order)
		orders[i] = order
	}
	return orders
}

// The statistic is not lopsided: over a known-uniform shuffle (Fisher–Yates with a seeded source) it
// passes, and over many such runs its mean is the 25 of χ²(25) (the uncorrected X² would average 30).
func TestUniformityStatisticIsCalibrated(t *testing.T) {
	const seed, users, openings, runs = 20261130, 6, 3000, 200
	t.Logf("seed %d", seed)
	fisherYates := func(r *rand.Rand, order []int) {
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	sum, worst := 0.0, 1.0
	for run := range runs {
		stat, p := uniformity(positionCounts(users, permutations(seed+uint64(run), users, openings, fisherYates)), openings)
		sum += stat
		worst = min(worst, p)
	}
	if mean := sum / runs; math.Abs(mean-25) > 2 {
		t.Errorf("mean statistic over %d uniform runs = %.2f, want 25 ± 2 (the mean of χ²(25))", runs, mean)
	}
	if worst < rejectBelow {
		t.Errorf("smallest p-value over %d uniform runs = %.3g, want ≥ %g", runs, worst, rejectBelow)
	}
}

// The test can fail: the same statistic rejects the arrival order (no shuffle at all) and a subtly biased
// shuffle (swapping each place with any place, the classic wrong Fisher–Yates, which favours some orders).
func TestUniformityTestRejectsBiasedOrders(t *testing.T) {
	const seed, users, openings = 20261130, 6, 3000
	t.Logf("seed %d", seed)
	for _, c := range []struct {
		name    string
		shuffle func(r *rand.Rand, order []int)
	}{
		{"arrival order", func(*rand.Rand, []int) {}},
		{"swap with any place", func(r *rand.Rand, order []int) {
			for i := range order {
				j := r.IntN(len(order))
				order[i], order[j] = order[j], order[i]
			}
		}},
	} {
		stat, p := uniformity(positionCounts(users, permutations(seed, users, openings, c.shuffle)), openings)
		if p >= 1e-12 {
			t.Errorf("%s: statistic %.2f, p = %.3g; want it rejected at p < 1e-12", c.name, stat, p)
		}
	}
}

func TestAWaitingTokenGoneForTheGraceIsDropped(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		newClock(q, t0)
		tokens := registerN(t, q, screening, 4)
		a, b, c, d := tokens[0], tokens[1], tokens[2], tokens[3]
		line, err := q.Line(t.Context(), screening)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Disconnected(t.Context(), screening, b); err != nil {
			t.Fatal(err)
		}
		st := settings(1, 1)
		st.ActiveTTL = time.Hour
		st = withGrace(st, grace)

		// A millisecond inside the grace: b keeps its place (a, first, is admitted).
		r1, err := q.Admit(t.Context(), screening, t0.Add(grace-time.Millisecond), st)
		if err != nil {
			t.Fatal(err)
		}
		if r1.Abandoned != 0 || !slices.Equal(r1.Admitted, []string{a}) {
			t.Errorf("tick inside the grace = abandoned %d, admitted %v; want 0, [%s]", r1.Abandoned, r1.Admitted, a)
		}
		if e := status(t, q, screening, b); e.State != queue.Waiting || e.ZeroBasedRank != 0 {
			t.Errorf("Status(b) inside the grace = %s, rank %d; want %s, rank 0", e.State, e.ZeroBasedRank, queue.Waiting)
		}
		if !line.Apply(r1.Event()) {
			t.Fatalf("Line.Apply(first tick) = false, want true")
		}

		// At the grace: b is dropped as if it left. No admission is spent on it (the slot is full anyway), the
		// ones behind move up, and the event's Left carries b's number so every instance ranks them alike.
		r2, err := q.Admit(t.Context(), screening, t0.Add(grace), st)
		if err != nil {
			t.Fatal(err)
		}
		if r2.Abandoned != 1 || len(r2.Admitted) != 0 || r2.Skip != queue.ActiveCapacityReached || !r2.Moved || r2.Waiting != 2 {
			t.Errorf("tick at the grace = abandoned %d, admitted %v, skip %q, moved %v, waiting %d; want 1, none, %q, true, 2",
				r2.Abandoned, r2.Admitted, r2.Skip, r2.Moved, r2.Waiting, queue.ActiveCapacityReached)
		}
		if ev := r2.Event(); !slices.Equal(ev.Left, []int64{2}) {
			t.Errorf("event Left = %v, want [2] (b's seq)", ev.Left)
		}
		if e := status(t, q, screening, b); e.State != queue.Unknown {
			t.Errorf("Status(b) after the grace = %s, want %s", e.State, queue.Unknown)
		}
		if !line.Apply(r2.Event()) {
			t.Fatalf("Line.Apply(second tick) = false, want true")
		}
		for i, tok := range []string{c, d} {
			if got := zrank(t, env, screening, tok); got != int64(i) {
				t.Errorf("ZRANK of %s after b was dropped = %d, want %d", tok, got, i)
			}
			if r, ok := line.Rank(int64(3 + i)); !ok || r != int64(i) {
				t.Errorf("Line.Rank(seq %d) from the events = %d, %v; want %d, true", 3+i, r, ok, i)
			}
		}
		if f := figures(t, q, screening); f.Abandoned != 1 || f.Admitted != 1 {
			t.Errorf("Figures = abandoned_total %d, admitted_total %d; want 1, 1", f.Abandoned, f.Admitted)
		}
		if got := zcard(t, env, screening, "gone"); got != 0 {
			t.Errorf("ZCARD gone after the drop = %d, want 0", got)
		}
	})
}

func TestAReconnectWithinTheGraceKeepsThePlace(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		tokens := registerN(t, q, screening, 2)
		b := tokens[1]
		if err := q.Disconnected(t.Context(), screening, b); err != nil {
			t.Fatal(err)
		}

		clk.Set(t0.Add(grace - time.Millisecond))
		e, err := q.Register(t.Context(), screening, b)
		if err != nil || e.State != queue.Waiting || e.Inserted || e.Seq != 2 || e.ZeroBasedRank != 1 {
			t.Fatalf("Register(b) within the grace = %s, inserted %v, seq %d, rank %d, %v; want %s, false, seq 2, rank 1",
				e.State, e.Inserted, e.Seq, e.ZeroBasedRank, err, queue.Waiting)
		}

		res, err := q.Admit(t.Context(), screening, t0.Add(10*grace), sweep)
		if err != nil || res.Abandoned != 0 {
			t.Errorf("tick long after the reconnect = abandoned %d, %v; want 0", res.Abandoned, err)
		}
		if e := status(t, q, screening, b); e.State != queue.Waiting || e.Seq != 2 {
			t.Errorf("Status(b) = %s, seq %d; want %s, seq 2", e.State, e.Seq, queue.Waiting)
		}
	})
}

func TestATokenIsGoneOnlyWhenEveryOneOfItsSocketsIs(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		tok := registerN(t, q, screening, 1)[0]
		if _, err := q.Register(t.Context(), screening, tok); err != nil { // a second tab
			t.Fatal(err)
		}

		if err := q.Disconnected(t.Context(), screening, tok); err != nil {
			t.Fatal(err)
		}
		res, err := q.Admit(t.Context(), screening, t0.Add(grace), sweep)
		if err != nil || res.Abandoned != 0 {
			t.Errorf("tick a grace after one of two sockets closed = abandoned %d, %v; want 0", res.Abandoned, err)
		}

		t1 := t0.Add(grace)
		clk.Set(t1)
		if err := q.Disconnected(t.Context(), screening, tok); err != nil {
			t.Fatal(err)
		}
		res, err = q.Admit(t.Context(), screening, t1.Add(grace), sweep)
		if err != nil || res.Abandoned != 1 {
			t.Errorf("tick a grace after both sockets closed = abandoned %d, %v; want 1", res.Abandoned, err)
		}
		if e := status(t, q, screening, tok); e.State != queue.Unknown {
			t.Errorf("Status = %s, want %s", e.State, queue.Unknown)
		}
	})
}

func TestAPreQueueTokenGoneLongerThanTheGraceIsDroppedAtTheOpening(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		opensAt := t0.Add(10 * time.Minute)
		tokens := enterN(t, q, screening, opensAt, 4)
		stays, gone, late, back := tokens[0], tokens[1], tokens[2], tokens[3]
		for _, tok := range []string{gone, back} {
			if err := q.Disconnected(t.Context(), screening, tok); err != nil {
				t.Fatal(err)
			}
		}
		clk.Set(t0.Add(time.Minute))
		if e, err := q.Enter(t.Context(), screening, back, opensAt); err != nil || e.State != queue.Pre || e.Inserted {
			t.Fatalf("Enter(back) = %s, inserted %v, %v; want %s, false", e.State, e.Inserted, err, queue.Pre)
		}
		lateGoneAt := opensAt.Add(-grace + time.Millisecond) // gone at the opening, but not for the grace
		clk.Set(lateGoneAt)
		if err := q.Disconnected(t.Context(), screening, late); err != nil {
			t.Fatal(err)
		}

		clk.Set(opensAt)
		o, err := q.Open(t.Context(), screening, opensAt, withGrace(settings(1, 1), grace))
		if err != nil || !o.Opened || o.Shuffled != 3 || o.Abandoned != 1 || o.Line.Total != 3 {
			t.Fatalf("Open = opened %v, shuffled %d, abandoned %d, total %d, %v; want true, 3, 1, 3", o.Opened, o.Shuffled, o.Abandoned, o.Line.Total, err)
		}
		if e := status(t, q, screening, gone); e.State != queue.Unknown {
			t.Errorf("Status(gone for the grace) after the opening = %s, want %s", e.State, queue.Unknown)
		}
		for _, tok := range []string{stays, late, back} {
			if e := status(t, q, screening, tok); e.State != queue.Waiting {
				t.Errorf("Status(%s) after the opening = %s, want %s", tok, e.State, queue.Waiting)
			}
		}
		if f := figures(t, q, screening); f.Abandoned != 1 {
			t.Errorf("Figures.Abandoned after the opening = %d, want 1", f.Abandoned)
		}

		// The one gone less than the grace at the opening is still counted gone: the first tick past its
		// grace drops it.
		res, err := q.Admit(t.Context(), screening, lateGoneAt.Add(grace), sweep)
		if err != nil || res.Abandoned != 1 {
			t.Errorf("tick a grace after late went = abandoned %d, %v; want 1", res.Abandoned, err)
		}
		if e := status(t, q, screening, late); e.State != queue.Unknown {
			t.Errorf("Status(late) = %s, want %s", e.State, queue.Unknown)
		}
	})
}

func TestPausedAdmissionAdmitsNobodyUntilResumed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 4)
		a, b := tokens[0], tokens[1]
		st := settings(1, 10)
		at := tickTimes()
		if r, err := q.Admit(t.Context(), screening, at(0), st); err != nil || !slices.Equal(r.Admitted, []string{a}) {
			t.Fatalf("Admit = %v, %v; want [%s]", r.Admitted, err, a)
		}
		if left, err := q.Leave(t.Context(), screening, a); err != nil || !left { // frees a slot for a refill
			t.Fatalf("Leave(a) = %v, %v; want true", left, err)
		}
		events := subscribe(t, q, screening)

		if err := q.Pause(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		nextEvent(t, events, queue.EventPaused)
		if e, err := q.Register(t.Context(), screening, b); err != nil || !e.Paused {
			t.Errorf("Register while paused = paused %v, %v; want true", e.Paused, err)
		}
		refill, err := q.Refill(t.Context(), screening, at(0).Add(time.Millisecond), st)
		if err != nil || refill.Skip != queue.NothingFreed || len(refill.Admitted) != 0 {
			t.Errorf("Refill while paused = skip %q, admitted %v, %v; want %q, nobody", refill.Skip, refill.Admitted, err, queue.NothingFreed)
		}
		tick, err := q.Admit(t.Context(), screening, at(1), st)
		if err != nil || tick.Skip != queue.Paused || len(tick.Admitted) != 0 || !tick.Event().Paused {
			t.Errorf("tick while paused = skip %q, admitted %v, event paused %v, %v; want %q, nobody, true",
				tick.Skip, tick.Admitted, tick.Event().Paused, err, queue.Paused)
		}
		if got := zcard(t, env, screening, "waiting"); got != 3 {
			t.Errorf("ZCARD waiting while paused = %d, want 3", got)
		}
		if f := figures(t, q, screening); !f.Paused || f.Admitted != 1 || f.Skips[string(queue.Paused)] != 1 || f.Active != 0 || f.Waiting != 3 {
			t.Errorf("Figures while paused = %+v, want paused, admitted_total 1, skips PAUSED 1, active 0, waiting 3", f)
		}

		if err := q.Resume(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		nextEvent(t, events, queue.EventResumed)
		tick, err = q.Admit(t.Context(), screening, at(2), st)
		if err != nil || tick.Skip != "" || !slices.Equal(tick.Admitted, []string{b}) {
			t.Errorf("tick after Resume = skip %q, admitted %v, %v; want [%s]", tick.Skip, tick.Admitted, err, b)
		}
		if f := figures(t, q, screening); f.Paused || f.Admitted != 2 || f.Active != 1 {
			t.Errorf("Figures after Resume = %+v, want not paused, admitted_total 2, active 1", f)
		}
	})
}

func TestFiguresCountTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		enterN(t, q, "upcoming", time.Now().Add(time.Hour), 2)
		if f := figures(t, q, "upcoming"); f.PreQueue != 2 || f.Waiting != 0 || f.Opened || f.Paused || f.Closed {
			t.Errorf("Figures(upcoming) = %+v, want pre_queue 2, nothing else", f)
		}

		registerN(t, q, screening, 5)
		st := settings(2, 3)
		at := tickTimes()
		for i := range 3 { // admits 2, then 1 (max_active 3), then skips at capacity
			if _, err := q.Admit(t.Context(), screening, at(i), st); err != nil {
				t.Fatal(err)
			}
		}
		f := figures(t, q, screening)
		if f.Waiting != 2 || f.PreQueue != 0 || f.Active != 3 || f.Admitted != 3 || f.Abandoned != 0 || !f.Opened || f.Paused || f.Closed ||
			f.Skips[string(queue.ActiveCapacityReached)] != 1 || len(f.Skips) != 1 {
			t.Errorf("Figures(%s) = %+v, want waiting 2, active 3, admitted_total 3, opened, skips {ACTIVE_CAPACITY_REACHED: 1}", screening, f)
		}

		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		if f := figures(t, q, screening); !f.Closed || f.Waiting != 0 {
			t.Errorf("Figures after Close = closed %v, waiting %d; want true, 0", f.Closed, f.Waiting)
		}
	})
}

func TestSeqsAreTheSequenceNumbersOfTheWaiting(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 4) // seqs 1..4
		if r, err := q.Admit(t.Context(), screening, time.Now(), settings(1, 1)); err != nil || len(r.Admitted) != 1 {
			t.Fatalf("Admit = %v, %v; want 1 admitted", r.Admitted, err)
		}
		if _, err := q.Leave(t.Context(), screening, tokens[2]); err != nil {
			t.Fatal(err)
		}
		pre := enterN(t, q, "other", time.Now().Add(time.Hour), 1)[0]

		// More than one chunk of 1,000: the waiting sit at both sides of the boundary.
		ask := make([]string, 2500)
		for i := range ask {
			ask[i] = queue.NewToken()
		}
		want := make([]int64, len(ask))
		for _, c := range []struct {
			at    int
			token string
			seq   int64
		}{
			{0, tokens[0], 0},           // admitted
			{999, tokens[1], 2},         // waiting
			{1000, tokens[2], 0},        // left
			{1001, tokens[3], 4},        // waiting
			{2499, pre, 0},              // in another screening's pre-queue
			{1500, tokens[1], 2},        // asked twice
			{1501, tokens[3], 4},        // asked twice
			{2000, queue.NewToken(), 0}, // never seen
		} {
			ask[c.at], want[c.at] = c.token, c.seq
		}
		got, numbering, err := q.Seqs(t.Context(), screening, ask)
		if err != nil {
			t.Fatal(err)
		}
		if e := status(t, q, screening, tokens[1]); numbering == 0 {
			t.Errorf("Seqs' numbering = 0, want the line's (token 1 waits at %d)", e.Seq)
		}
		if !slices.Equal(got, want) {
			for i := range want {
				if i < len(got) && got[i] != want[i] {
					t.Errorf("Seqs[%d] (%s) = %d, want %d", i, ask[i], got[i], want[i])
				}
			}
			if len(got) != len(want) {
				t.Errorf("Seqs returned %d numbers, want %d", len(got), len(want))
			}
		}
		if got, _, err := q.Seqs(t.Context(), screening, nil); err != nil || len(got) != 0 {
			t.Errorf("Seqs(none) = %v, %v; want [], nil", got, err)
		}
	})
}

// A socket counts for its token whatever the token's state when it connected: a tab that connected while the
// token was admitted, and closed, must not count off a tab that is still open. Here tab A waits and is
// admitted, tab B connects while admitted and closes, the admission lapses, tab C connects (queueing again),
// and tab A closes: tab C is still open, so the token is not gone.
func TestASocketOpenedWhileAdmittedDoesNotCountOffAnother(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		t0 := time.Now().Truncate(time.Second)
		clk := newClock(q, t0)
		tok := registerN(t, q, screening, 1)[0] // tab A
		st := withGrace(settings(1, 1), grace)
		res, err := q.Admit(t.Context(), screening, t0, st)
		if err != nil || !slices.Equal(res.Admitted, []string{tok}) {
			t.Fatalf("Admit = %v, %v; want [%s]", res.Admitted, err, tok)
		}
		if e, err := q.Register(t.Context(), screening, tok); err != nil || e.State != queue.Admitted { // tab B
			t.Fatalf("Register while admitted = %s, %v; want %s", e.State, err, queue.Admitted)
		}
		if err := q.Disconnected(t.Context(), screening, tok); err != nil { // tab B closes
			t.Fatal(err)
		}

		clk.Set(res.ExpiresAt)                                                                         // the admission lapses unused
		if e, err := q.Register(t.Context(), screening, tok); err != nil || e.State != queue.Waiting { // tab C
			t.Fatalf("Register after the admission lapsed = %s, %v; want %s", e.State, err, queue.Waiting)
		}
		if err := q.Disconnected(t.Context(), screening, tok); err != nil { // tab A closes; tab C is open
			t.Fatal(err)
		}

		tick, err := q.Admit(t.Context(), screening, res.ExpiresAt.Add(grace), sweep)
		if err != nil {
			t.Fatal(err)
		}
		if tick.Abandoned != 0 {
			t.Errorf("tick a grace later = abandoned %d, want 0: tab C is still open", tick.Abandoned)
		}
		if e := status(t, q, screening, tok); e.State != queue.Waiting {
			t.Errorf("Status with tab C open = %s, want %s", e.State, queue.Waiting)
		}
	})
}
