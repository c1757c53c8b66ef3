// Tests that a freed slot is refilled at once by the loop a freed slot wakes, and that a refill never admits
// more than was freed.

package queue_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// onSale is a Screenings that always lists the same screenings.
type onSale []string

func (o onSale) Sales(context.Context, time.Time) ([]queue.Sale, error) {
	out := make([]queue.Sale, len(o))
	for i, id := range o {
		out[i] = queue.Sale{ID: id}
	}
	return out, nil
}

// noTicks is an interval whose next wall-clock multiple is weeks away: a loop with it never ticks during a
// test, so whatever it admits, it admitted by a refill.
const noTicks = 1000 * time.Hour

// refillWithin is how soon a freed slot must be taken by the next in line.
const refillWithin = time.Second

// runScheduler runs s for screening until the test ends, and returns once its loop is up (so that a freed
// slot wakes it).
func runScheduler(t *testing.T, s *queue.Scheduler, screening string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Scheduler.Run = %v, want nil", err)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for !queue.Looping(s, screening) {
		if time.Now().After(deadline) {
			t.Fatalf("the admission loop of %s did not start within 5s", screening)
		}
		time.Sleep(time.Millisecond)
	}
}

// admittedWithin polls until token is admitted and returns how long that took, failing the test after limit.
func admittedWithin(t *testing.T, q *queue.Queue, token string, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		e, err := q.Status(t.Context(), screening, token)
		if err != nil {
			t.Fatal(err)
		}
		if e.State == queue.Admitted {
			return time.Since(began)
		}
		if time.Since(began) > limit {
			t.Fatalf("token %s is %s %v after a slot was freed, want admitted within %v", token, e.State, limit, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A reservation (Queue.Finish) or an admitted user leaving (Queue.Leave) hands the slot to the next
// in line at once, not at the next tick; and however many slots are freed at once, the refills admit that
// many and never more than max_active.
func TestReservationRefillsTheSlotAtOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		t.Run("max_active 1", func(t *testing.T) {
			q := queue.New(env.Redis, env.Prefix+"one:")
			p := pass.NewSecretIssuer(secret)
			tokens := registerN(t, q, screening, 3)
			st := settings(1, 1)
			st.Interval = noTicks
			m := queue.NewMetrics(prometheus.NewRegistry())
			s := queue.NewScheduler(q, onSale{screening}, st, "a", m, slog.New(slog.DiscardHandler))
			runScheduler(t, s, screening)

			first, err := s.Tick(t.Context(), screening, time.Now())
			if err != nil || !slices.Equal(first.Admitted, tokens[:1]) {
				t.Fatalf("Tick = %v, %v; want %v admitted", first.Admitted, err, tokens[:1])
			}
			if err := q.Finish(t.Context(), passFor(t, p, tokens[0], first.ExpiresAt)); err != nil {
				t.Fatal(err)
			}
			took := admittedWithin(t, q, tokens[1], refillWithin)
			t.Logf("the reservation's slot was refilled after %v", took)
			if e, err := q.Status(t.Context(), screening, tokens[2]); err != nil || e.State != queue.Waiting || e.ZeroBasedRank != 0 {
				t.Errorf("third in line after one slot was refilled = %s at zero-based rank %d (%v), want waiting, next in line (0)", e.State, e.ZeroBasedRank, err)
			}

			// The one just admitted leaves: the last in line takes the slot.
			if left, err := q.Leave(t.Context(), screening, tokens[1]); err != nil || !left {
				t.Fatalf("Leave(admitted) = %v, %v; want true, nil", left, err)
			}
			admittedWithin(t, q, tokens[2], refillWithin)
			if _, active, err := q.Counts(t.Context(), screening); err != nil || active != 1 {
				t.Errorf("active after two refills = %d (%v), want 1 (max_active)", active, err)
			}
			if got := testutil.ToFloat64(m.Runs.WithLabelValues(screening)); got != 1 {
				t.Errorf("ticks run = %v, want 1 (the test's own): the refills must not wait for a tick", got)
			}
			// The loop counts a refill just after its script admitted: give the count a moment to land.
			got := testutil.ToFloat64(m.Refills.WithLabelValues(screening))
			for deadline := time.Now().Add(time.Second); got < 2 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				got = testutil.ToFloat64(m.Refills.WithLabelValues(screening))
			}
			if got != 2 {
				t.Errorf("refills = %v, want 2", got)
			}
		})

		t.Run("three freed at once", func(t *testing.T) {
			q := queue.New(env.Redis, env.Prefix+"three:")
			p := pass.NewSecretIssuer(secret)
			tokens := registerN(t, q, screening, 20)
			st := settings(10, 5)
			st.Interval = noTicks
			s := queue.NewScheduler(q, onSale{screening}, st, "a", queue.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
			runScheduler(t, s, screening)
			first, err := s.Tick(t.Context(), screening, time.Now())
			if err != nil || len(first.Admitted) != 5 {
				t.Fatalf("Tick = %v, %v; want 5 admitted", first.Admitted, err)
			}

			var wg sync.WaitGroup
			for _, tok := range first.Admitted[:3] {
				c := passFor(t, p, tok, first.ExpiresAt)
				wg.Go(func() {
					if err := q.Finish(t.Context(), c); err != nil {
						t.Errorf("Finish: %v", err)
					}
				})
			}
			wg.Wait()
			admittedWithin(t, q, tokens[7], refillWithin)
			// Give any refill beyond what was freed time to happen before looking. Nothing can be awaited: a
			// refill that admits nobody leaves no trace, and the loop's wakes are taken silently, so this
			// is a wait for something that must not happen.
			time.Sleep(200 * time.Millisecond)

			for _, tok := range tokens[3:8] {
				if e, err := q.Status(t.Context(), screening, tok); err != nil || e.State != queue.Admitted {
					t.Errorf("Status of %s (the 2 left and the next 3 in line) = %s (%v), want %s", tok, e.State, err, queue.Admitted)
				}
			}
			if waiting, active, err := q.Counts(t.Context(), screening); err != nil || waiting != 12 || active != 5 {
				t.Errorf("Counts after 3 of 5 reserved = %d waiting, %d active (%v); want 12, 5 (no more admitted than were freed)", waiting, active, err)
			}
		})
	})
}

// A freed slot wakes every scheduler running on the queue, for as long as its Run runs: one that stopped is
// no longer woken, and the one still running refills the slot.
func TestAFreedSlotWakesEverySchedulerRunningOnTheQueue(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		p := pass.NewSecretIssuer(secret)
		tokens := registerN(t, q, screening, 2)
		st := settings(1, 1)
		st.Interval = noTicks
		start := func(owner string) (stop func()) {
			s := queue.NewScheduler(q, onSale{screening}, st, owner, queue.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			for deadline := time.Now().Add(5 * time.Second); !queue.Looping(s, screening); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the admission loop of %s on scheduler %s did not start within 5s", screening, owner)
				}
			}
			return sync.OnceFunc(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Scheduler.Run = %v, want nil", err)
				}
			})
		}
		stopA := start("a")
		stopB := start("b")
		defer stopB()
		if got := queue.Wakers(q); got != 2 {
			t.Fatalf("schedulers woken by a freed slot with two running = %d, want 2", got)
		}
		first, err := q.Admit(t.Context(), screening, time.Now(), st)
		if err != nil || !slices.Equal(first.Admitted, tokens[:1]) {
			t.Fatalf("Admit = %v, %v; want %v admitted", first.Admitted, err, tokens[:1])
		}
		stopA()
		if got := queue.Wakers(q); got != 1 {
			t.Fatalf("schedulers woken by a freed slot after one stopped = %d, want 1", got)
		}
		if err := q.Finish(t.Context(), passFor(t, p, tokens[0], first.ExpiresAt)); err != nil {
			t.Fatal(err)
		}
		admittedWithin(t, q, tokens[1], refillWithin)
		stopB()
		if got := queue.Wakers(q); got != 0 {
			t.Errorf("schedulers woken by a freed slot after both stopped = %d, want 0", got)
		}
	})
}

// Refill admits as many as were freed since the last admission, bounded by batch size and max_active, and
// however many instances ask at once; with nothing freed, or after a tick took the freed slots, it admits
// nobody and says NOTHING_FREED.
func TestRefillAdmitsNoMoreThanWereFreed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := t.Context()
		q := queue.New(env.Redis, env.Prefix)
		p := pass.NewSecretIssuer(secret)
		tokens := registerN(t, q, screening, 30)
		st := settings(10, 5)
		at := tickTimes()
		expiry := map[string]time.Time{} // token -> the expiry of its admission, for its pass
		admitted := func(res queue.TickResult) {
			for _, tok := range res.Admitted {
				expiry[tok] = res.ExpiresAt
			}
		}
		refill := func(what string, st queue.Settings, want []string) {
			t.Helper()
			res, err := q.Refill(ctx, screening, time.Now(), st)
			if err != nil {
				t.Fatal(err)
			}
			admitted(res)
			if want == nil {
				if res.Skip != queue.NothingFreed || len(res.Admitted) != 0 {
					t.Errorf("Refill %s = skip %q, admitted %v; want %q, nobody", what, res.Skip, res.Admitted, queue.NothingFreed)
				}
				return
			}
			if res.Skip != "" || !slices.Equal(res.Admitted, want) {
				t.Errorf("Refill %s = skip %q, admitted %v; want %v", what, res.Skip, res.Admitted, want)
			}
		}
		finish := func(tokens ...string) {
			t.Helper()
			for _, tok := range tokens {
				if err := q.Finish(ctx, passFor(t, p, tok, expiry[tok])); err != nil {
					t.Fatal(err)
				}
			}
		}

		first, err := q.Admit(ctx, screening, at(1), st)
		if err != nil || !slices.Equal(first.Admitted, tokens[:5]) {
			t.Fatalf("Admit = %v, %v; want %v", first.Admitted, err, tokens[:5])
		}
		admitted(first)
		refill("with nothing freed", st, nil)

		finish(tokens[:3]...)
		refill("after 3 finished", st, tokens[5:8])
		refill("again", st, nil)

		// Freed 2, but max_active lowered so that only 1 fits: 1 is admitted, and the other stays out.
		finish(tokens[3:5]...)
		lower := st
		lower.MaxActive = 4
		refill("after 2 finished, room for 1", lower, tokens[8:9])
		refill("at max_active with 1 freed left", lower, nil)
		if _, active, err := q.Counts(ctx, screening); err != nil || active != 4 {
			t.Errorf("active = %d (%v), want 4", active, err)
		}

		// A tick fills the room and takes what was freed with it.
		res, err := q.Admit(ctx, screening, at(2), st)
		if err != nil || !slices.Equal(res.Admitted, tokens[9:10]) {
			t.Fatalf("Admit = %v, %v; want %v", res.Admitted, err, tokens[9:10])
		}
		admitted(res)
		refill("after a tick took the freed slot", st, nil)

		// Batch size bounds a refill too.
		small := st
		small.BatchSize = 1
		finish(tokens[5:8]...)
		refill("after 3 finished, batch 1", small, tokens[10:11])
		refill("the 2 freed left, batch 1", small, tokens[11:12])

		// Many instances refill at once: together they admit the one slot left freed, and nobody more.
		var wg sync.WaitGroup
		var mu sync.Mutex
		var together []string
		for range 10 {
			wg.Go(func() {
				res, err := q.Refill(ctx, screening, time.Now(), st)
				if err != nil {
					t.Errorf("Refill: %v", err)
					return
				}
				mu.Lock()
				together = append(together, res.Admitted...)
				mu.Unlock()
			})
		}
		wg.Wait()
		if !slices.Equal(together, tokens[12:13]) {
			t.Errorf("10 refills at once with 1 slot freed admitted %v, want %v", together, tokens[12:13])
		}

		// Leaving frees a slot only if it held one (max_active raised so there is room either way).
		roomy := st
		roomy.MaxActive = 6
		if left, err := q.Leave(ctx, screening, tokens[20]); err != nil || !left {
			t.Fatalf("Leave(waiting) = %v, %v; want true, nil", left, err)
		}
		refill("after a waiting token left", roomy, nil)
		if left, err := q.Leave(ctx, screening, tokens[9]); err != nil || !left {
			t.Fatalf("Leave(admitted) = %v, %v; want true, nil", left, err)
		}
		refill("after an admitted token left", st, tokens[13:14])
		if _, active, err := q.Counts(ctx, screening); err != nil || active != 5 {
			t.Errorf("active at the end = %d (%v), want 5 (max_active)", active, err)
		}
	})
}
