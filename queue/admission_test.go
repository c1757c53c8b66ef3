// Tests of admission ticks: batch size, order, capacity, the lock across schedulers, expiry, closed lines,
// metrics and the tick clock.

package queue_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestTickAdmitsExactlyBatchSizeFromAHundredWaiting(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 100)
		s, _ := newScheduler(t, q, settings(10, 50), "a")

		res, err := s.Tick(t.Context(), screening, tickTimes()(1))
		if err != nil {
			t.Fatal(err)
		}
		if res.Skip != "" || len(res.Admitted) != 10 {
			t.Fatalf("Tick = skip %q, %d admitted, want 10 admitted", res.Skip, len(res.Admitted))
		}
		if res.Waiting != 90 || res.Active != 10 {
			t.Errorf("Tick counts = %d waiting, %d active, want 90, 10", res.Waiting, res.Active)
		}
		if got := zcard(t, env, screening, "waiting"); got != 90 {
			t.Errorf("ZCARD waiting = %d, want 90", got)
		}
		if got := zcard(t, env, screening, "active"); got != 10 {
			t.Errorf("ZCARD active = %d, want 10", got)
		}
	})
}

func TestTickAdmitsEarliestRegistrationsFirstInOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 25)
		st := settings(10, 100)
		s, _ := newScheduler(t, q, st, "a")
		at := tickTimes()

		for i, want := range [][]string{tokens[:10], tokens[10:20], tokens[20:]} {
			now := at(i + 1)
			res, err := s.Tick(t.Context(), screening, now)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Admitted, want) {
				t.Errorf("tick %d admitted %v, want %v", i+1, res.Admitted, want)
			}
			if wantExp := queue.ExpiryOf(now, st.ActiveTTL); !res.ExpiresAt.Equal(wantExp) {
				t.Errorf("tick %d ExpiresAt = %v, want %v", i+1, res.ExpiresAt, wantExp)
			}
			for _, z := range members(t, env, screening, "active") {
				if tok := z.Member.(string); slices.Contains(want, tok) && int64(z.Score) != res.ExpiresAt.UnixMilli() {
					t.Errorf("active score of %s = %v, want %d", tok, z.Score, res.ExpiresAt.UnixMilli())
				}
			}
		}
	})
}

func TestTickOnEmptyLineSkipsQueueEmpty(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		s, _ := newScheduler(t, q, settings(10, 50), "a")

		res, err := s.Tick(t.Context(), screening, tickTimes()(1))
		if err != nil {
			t.Fatal(err)
		}
		if res.Skip != queue.QueueEmpty || len(res.Admitted) != 0 {
			t.Errorf("Tick = skip %q, admitted %v, want skip %q, nobody", res.Skip, res.Admitted, queue.QueueEmpty)
		}
	})
}

func TestTickAtCapacityAdmitsNobody(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 10)
		s, _ := newScheduler(t, q, settings(5, 5), "a")
		at := tickTimes()
		if res, err := s.Tick(t.Context(), screening, at(1)); err != nil || len(res.Admitted) != 5 {
			t.Fatalf("first Tick = %d admitted, %v, want 5 admitted", len(res.Admitted), err)
		}
		waitingBefore := members(t, env, screening, "waiting")

		res, err := s.Tick(t.Context(), screening, at(2))
		if err != nil {
			t.Fatal(err)
		}
		if res.Skip != queue.ActiveCapacityReached || len(res.Admitted) != 0 {
			t.Errorf("Tick = skip %q, admitted %v, want skip %q, nobody", res.Skip, res.Admitted, queue.ActiveCapacityReached)
		}
		if res.Active != 5 || res.Waiting != 5 {
			t.Errorf("Tick counts = %d active, %d waiting, want 5, 5", res.Active, res.Waiting)
		}
		if got := members(t, env, screening, "waiting"); !slices.Equal(got, waitingBefore) {
			t.Errorf("waiting after a capacity skip = %v, want %v", got, waitingBefore)
		}
	})
}

func TestTickAdmitsOnlyTheRoomLeft(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 10)
		s, _ := newScheduler(t, q, settings(5, 7), "a")
		at := tickTimes()
		if res, err := s.Tick(t.Context(), screening, at(1)); err != nil || len(res.Admitted) != 5 {
			t.Fatalf("first Tick = %d admitted, %v, want 5 admitted", len(res.Admitted), err)
		}

		res, err := s.Tick(t.Context(), screening, at(2))
		if err != nil {
			t.Fatal(err)
		}
		if want := tokens[5:7]; !slices.Equal(res.Admitted, want) {
			t.Errorf("Tick with room for 2 admitted %v, want %v", res.Admitted, want)
		}
		if res.Active != 7 {
			t.Errorf("Tick Active = %d, want 7", res.Active)
		}
		if got := zcard(t, env, screening, "active"); got != 7 {
			t.Errorf("ZCARD active = %d, want 7", got)
		}
	})
}

func TestLockMissChangesNothing(t *testing.T) {
	cases := []struct {
		name string
		// other takes the lock, or the tick, before the scheduler's tick number tickNo.
		other func(t *testing.T, q *queue.Queue, tickNo int64)
	}{
		{"another owner holds the lock", func(t *testing.T, q *queue.Queue, tickNo int64) {
			if ok, err := q.TryLock(t.Context(), screening, "other", tickNo-1, time.Minute); err != nil || !ok {
				t.Fatalf("TryLock(other, %d) = %v, %v, want true", tickNo-1, ok, err)
			}
		}},
		{"the tick number is taken", func(t *testing.T, q *queue.Queue, tickNo int64) {
			if ok, err := q.TryLock(t.Context(), screening, "other", tickNo, time.Minute); err != nil || !ok {
				t.Fatalf("TryLock(other, %d) = %v, %v, want true", tickNo, ok, err)
			}
			if ok, err := q.Unlock(t.Context(), screening, "other"); err != nil || !ok {
				t.Fatalf("Unlock(other) = %v, %v, want true", ok, err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testenv.Each(t, func(t *testing.T, env *testenv.Env) {
				q := queue.New(env.Redis, env.Prefix)
				registerN(t, q, screening, 10)
				s, m := newScheduler(t, q, settings(3, 50), "a")
				at := tickTimes()
				if res, err := s.Tick(t.Context(), screening, at(1)); err != nil || len(res.Admitted) != 3 {
					t.Fatalf("first Tick = %d admitted, %v, want 3 admitted", len(res.Admitted), err)
				}
				now := at(3)
				c.other(t, q, now.Truncate(time.Second).UnixMilli())
				waiting, active := members(t, env, screening, "waiting"), members(t, env, screening, "active")

				res, err := s.Tick(t.Context(), screening, now)
				if err != nil {
					t.Fatal(err)
				}
				if res.Skip != queue.LockNotAcquired || len(res.Admitted) != 0 {
					t.Errorf("Tick = skip %q, admitted %v, want skip %q, nobody", res.Skip, res.Admitted, queue.LockNotAcquired)
				}
				if got := members(t, env, screening, "waiting"); !slices.Equal(got, waiting) {
					t.Errorf("waiting after a lock miss = %v, want %v", got, waiting)
				}
				if got := members(t, env, screening, "active"); !slices.Equal(got, active) {
					t.Errorf("active after a lock miss = %v, want %v", got, active)
				}
				if got := testutil.ToFloat64(m.LockMisses.WithLabelValues(screening)); got != 1 {
					t.Errorf("lock misses = %v, want 1", got)
				}
			})
		})
	}
}

func TestSameTickNumberRunsOnceAcrossSchedulers(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 60)
		st := settings(2, 1000)
		a, _ := newScheduler(t, q, st, "a")
		b, _ := newScheduler(t, q, st, "b")
		at := tickTimes()

		// In turn: b, later in the same tick, finds it taken; the next tick is b's to take.
		if res, err := a.Tick(t.Context(), screening, at(1)); err != nil || len(res.Admitted) != 2 {
			t.Fatalf("a.Tick = %d admitted, %v, want 2", len(res.Admitted), err)
		}
		for _, now := range []time.Time{at(1), at(1).Add(900 * time.Millisecond)} {
			if res, err := b.Tick(t.Context(), screening, now); err != nil || res.Skip != queue.LockNotAcquired {
				t.Errorf("b.Tick(%v) in a's tick = skip %q, %v, want %q", now, res.Skip, err, queue.LockNotAcquired)
			}
		}
		if res, err := b.Tick(t.Context(), screening, at(2)); err != nil || len(res.Admitted) != 2 {
			t.Errorf("b.Tick of the next tick = %d admitted, %v, want 2", len(res.Admitted), err)
		}

		// At once: for each tick number exactly one of them admits.
		const ticks = 20
		for i := 3; i < 3+ticks; i++ {
			now := at(i)
			var wg sync.WaitGroup
			var results [2]queue.TickResult
			var errs [2]error
			for j, s := range []*queue.Scheduler{a, b} {
				wg.Go(func() { results[j], errs[j] = s.Tick(t.Context(), screening, now) })
			}
			wg.Wait()
			winners := 0
			for j := range results {
				if errs[j] != nil {
					t.Fatalf("tick %d: %v", i, errs[j])
				}
				switch results[j].Skip {
				case "":
					winners++
				case queue.LockNotAcquired:
				default:
					t.Errorf("tick %d: skip %q, want an admission or %q", i, results[j].Skip, queue.LockNotAcquired)
				}
			}
			if winners != 1 {
				t.Errorf("tick %d: %d schedulers admitted, want 1", i, winners)
			}
		}
		if got, want := zcard(t, env, screening, "active"), int64(2*(2+ticks)); got != want {
			t.Errorf("ZCARD active = %d, want %d", got, want)
		}
	})
}

func TestExpiredAdmissionsAreDroppedAndTheirRoomReused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 10)
		st := settings(5, 5)
		st.ActiveTTL = 10 * time.Second
		s, _ := newScheduler(t, q, st, "a")
		at := tickTimes()
		first, err := s.Tick(t.Context(), screening, at(1))
		if err != nil || len(first.Admitted) != 5 {
			t.Fatalf("first Tick = %d admitted, %v, want 5", len(first.Admitted), err)
		}
		// One tick before the expiry the slots are still held.
		if res, err := s.Tick(t.Context(), screening, first.ExpiresAt.Add(-time.Second)); err != nil || res.Skip != queue.ActiveCapacityReached {
			t.Fatalf("Tick before expiry = skip %q, %v, want %q", res.Skip, err, queue.ActiveCapacityReached)
		}

		// At the expiry they lapse, and the next five take their room.
		res, err := s.Tick(t.Context(), screening, first.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		if want := tokens[5:]; !slices.Equal(res.Admitted, want) {
			t.Errorf("Tick at the expiry admitted %v, want %v", res.Admitted, want)
		}
		if res.Active != 5 {
			t.Errorf("Tick Active = %d, want 5", res.Active)
		}
		if got := tokensOf(members(t, env, screening, "active")); !sameSet(got, tokens[5:]) {
			t.Errorf("active = %v, want only %v", got, tokens[5:])
		}
	})
}

func TestTickOnClosedScreeningSkipsNoValidScreening(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 3)
		if err := q.Close(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		s, _ := newScheduler(t, q, settings(5, 5), "a")

		res, err := s.Tick(t.Context(), screening, tickTimes()(1))
		if err != nil {
			t.Fatal(err)
		}
		if res.Skip != queue.NoValidScreening || len(res.Admitted) != 0 {
			t.Errorf("Tick = skip %q, admitted %v, want skip %q, nobody", res.Skip, res.Admitted, queue.NoValidScreening)
		}
	})
}

func TestTickRecordsMetrics(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		s, m := newScheduler(t, q, settings(2, 3), "a")
		at := tickTimes()
		tick := func(i int, wantSkip queue.SkipReason) {
			t.Helper()
			res, err := s.Tick(t.Context(), screening, at(i))
			if err != nil {
				t.Fatal(err)
			}
			if res.Skip != wantSkip {
				t.Fatalf("tick %d: skip %q, want %q", i, res.Skip, wantSkip)
			}
		}
		tick(1, queue.QueueEmpty)
		registerN(t, q, screening, 5)
		tick(2, "") // admits 2
		tick(3, "") // admits 1: the room left
		tick(4, queue.ActiveCapacityReached)
		if ok, err := q.TryLock(t.Context(), screening, "other", at(5).UnixMilli(), time.Minute); err != nil || !ok {
			t.Fatalf("TryLock(other) = %v, %v, want true", ok, err)
		}
		// Empty the line behind the scheduler's back: a lock miss must leave the gauges at the last tick's counts.
		if err := env.Redis.Del(t.Context(), queue.Key(env.Prefix, screening, "waiting")).Err(); err != nil {
			t.Fatal(err)
		}
		tick(6, queue.LockNotAcquired)

		for _, c := range []struct {
			name string
			got  float64
			want float64
		}{
			{"runs", testutil.ToFloat64(m.Runs.WithLabelValues(screening)), 5},
			{"admitted", testutil.ToFloat64(m.Admitted.WithLabelValues(screening)), 3},
			{"failures", testutil.ToFloat64(m.Failures.WithLabelValues(screening)), 0},
			{"lock misses", testutil.ToFloat64(m.LockMisses.WithLabelValues(screening)), 1},
			{"capacity hits", testutil.ToFloat64(m.CapacityHits.WithLabelValues(screening)), 1},
			{"skips QUEUE_EMPTY", testutil.ToFloat64(m.Skips.WithLabelValues(screening, string(queue.QueueEmpty))), 1},
			{"skips ACTIVE_CAPACITY_REACHED", testutil.ToFloat64(m.Skips.WithLabelValues(screening, string(queue.ActiveCapacityReached))), 1},
			{"skips LOCK_NOT_ACQUIRED", testutil.ToFloat64(m.Skips.WithLabelValues(screening, string(queue.LockNotAcquired))), 1},
			{"skips NO_VALID_SCREENING", testutil.ToFloat64(m.Skips.WithLabelValues(screening, string(queue.NoValidScreening))), 0},
			{"waiting gauge", testutil.ToFloat64(m.Waiting.WithLabelValues(screening)), 2},
			{"active gauge", testutil.ToFloat64(m.Active.WithLabelValues(screening)), 3},
		} {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		if got := testutil.CollectAndCount(m.TickSeconds); got != 1 {
			t.Errorf("tick duration series = %d, want 1", got)
		}
	})
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// An operator who lengthens a running line's interval slows admission; it does not stop it: the next tick
// at a multiple of the new interval still takes the lock (tick numbers are the interval's start in ms, so
// they keep rising; numbered now / interval, they would fall and every tick would be refused).
func TestLongerIntervalKeepsTicking(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 10)
		fast, _ := newScheduler(t, q, settings(2, 50), "a")
		first := tickTimes()(1)
		if res, err := fast.Tick(t.Context(), screening, first); err != nil || len(res.Admitted) != 2 {
			t.Fatalf("Tick at 1s interval = %d admitted, %v, want 2", len(res.Admitted), err)
		}
		slower := settings(2, 50)
		slower.Interval = 10 * time.Second
		slow, _ := newScheduler(t, q, slower, "a")
		next := first.Truncate(slower.Interval).Add(slower.Interval) // where a 10 s loop ticks next
		res, err := slow.Tick(t.Context(), screening, next)
		if err != nil || res.Skip != "" || len(res.Admitted) != 2 {
			t.Errorf("Tick at %v after lengthening the interval to 10s = skip %q, %d admitted, %v; want 2 admitted", next, res.Skip, len(res.Admitted), err)
		}
	})
}

// An admission whose now is older than the latest admission's (a tick that read the clock before a slow
// lock, while a refill elsewhere admitted) admits at the latest admission's now: a user admitted later
// never holds a slot that ends sooner. A now that moves forward is kept as it is.
func TestAdmissionClockNeverRunsBack(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		tokens := registerN(t, q, screening, 3)
		st := settings(1, 3)
		t0 := time.Now().Truncate(time.Second)
		first, err := q.Admit(t.Context(), screening, t0.Add(100*time.Millisecond), st)
		if err != nil || len(first.Admitted) != 1 || first.Admitted[0] != tokens[0] {
			t.Fatalf("first Admit = %v, %v; want %s", first.Admitted, err, tokens[0])
		}
		stale, err := q.Admit(t.Context(), screening, t0, st)
		if err != nil || len(stale.Admitted) != 1 || stale.Admitted[0] != tokens[1] {
			t.Fatalf("stale Admit = %v, %v; want %s", stale.Admitted, err, tokens[1])
		}
		if want := first.ExpiresAt; !stale.ExpiresAt.Equal(want) {
			t.Errorf("admitted with an older now: expires %v, want the latest admission's %v", stale.ExpiresAt, want)
		}
		later, err := q.Admit(t.Context(), screening, t0.Add(time.Second), st)
		if err != nil || len(later.Admitted) != 1 {
			t.Fatalf("later Admit = %v, %v; want one admitted", later.Admitted, err)
		}
		if want := queue.ExpiryOf(t0.Add(time.Second), st.ActiveTTL); !later.ExpiresAt.Equal(want) {
			t.Errorf("admitted with a newer now: expires %v, want %v", later.ExpiresAt, want)
		}
		// The slot in Redis is the one the pass names.
		for _, r := range []queue.TickResult{first, stale, later} {
			got, err := env.Redis.ZScore(t.Context(), queue.Key(env.Prefix, screening, "active"), r.Admitted[0]).Result()
			if err != nil || int64(got) != r.ExpiresAt.UnixMilli() {
				t.Errorf("%s's slot in Redis = %v, %v; want %d", r.Admitted[0], got, err, r.ExpiresAt.UnixMilli())
			}
		}
	})
}
