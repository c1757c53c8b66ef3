// Tests that the scheduler keeps the line of an ended sale closed.

package queue_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// sales is a Screenings whose list a test changes while the scheduler runs.
type sales struct {
	mu     sync.Mutex
	ids    []string
	ended  bool
	paused bool
	reads  int // how many times a scheduler read the list: once per refresh
}

func (s *sales) Sales(context.Context, time.Time) ([]queue.Sale, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	out := make([]queue.Sale, len(s.ids))
	for i, id := range s.ids {
		out[i] = queue.Sale{ID: id, Ended: s.ended, Paused: s.paused}
	}
	return out, nil
}

func (s *sales) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// refreshes has sched read list n times, one after another, and returns once the last of those refreshes
// has ended: it waits for one read more, as Run refreshes one at a time.
func refreshes(t *testing.T, sched *queue.Scheduler, list *sales, n int) {
	t.Helper()
	for range n + 1 {
		before := list.readCount()
		sched.Refresh()
		for deadline := time.Now().Add(5 * time.Second); list.readCount() == before; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the scheduler did not refresh within 5s of being asked")
			}
		}
	}
}

func (s *sales) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
}

// paused reads whether the screening's line is paused in Redis.
func paused(t *testing.T, env *testenv.Env) bool {
	t.Helper()
	n, err := env.Redis.Exists(t.Context(), queue.Key(env.Prefix, screening, "paused")).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// A sale the operator paused has its pause put back by the scheduler when Redis forgot it (a restart
// without persistence), but not right after a resume the list read before it did not see.
func TestPausedSaleIsKeptPaused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 1)
		list := &sales{ids: []string{screening}, paused: true}
		st := settings(1, 1)
		st.Interval = noTicks
		s := queue.NewScheduler(q, list, st, "a", queue.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
		runScheduler(t, s, screening)
		deadline := time.Now().Add(5 * time.Second)
		for !paused(t, env) {
			if time.Now().After(deadline) {
				t.Fatal("a sale listed paused is not paused in Redis after 5s")
			}
			s.Refresh()
			time.Sleep(10 * time.Millisecond)
		}
		// The operator resumes: a list still saying paused does not pause it again.
		if err := q.Resume(t.Context(), screening); err != nil {
			t.Fatal(err)
		}
		refreshes(t, s, list, 5)
		if paused(t, env) {
			t.Error("a line resumed a moment ago was paused again by a stale list")
		}
	})
}

// A sale that ended (sold out, or closed by the operator) has its line closed by the scheduler, even when
// the reservation that sold the last seat could not close it, and again when Redis forgot it: whoever
// still waits is told, and no one else joins.
func TestEndedSaleHasItsLineClosed(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		registerN(t, q, screening, 3)
		list := &sales{ids: []string{screening}}
		st := settings(1, 1)
		st.Interval = noTicks
		s := queue.NewScheduler(q, list, st, "a", queue.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
		runScheduler(t, s, screening)
		if closed, err := q.Closed(t.Context(), screening); err != nil || closed {
			t.Fatalf("Closed while on sale = %v, %v; want false", closed, err)
		}

		list.end() // sold out
		s.Refresh()
		deadline := time.Now().Add(5 * time.Second)
		for {
			closed, err := q.Closed(t.Context(), screening)
			if err != nil {
				t.Fatal(err)
			}
			if closed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the line of a sale that left the list is still open after 5s, want it closed")
			}
			time.Sleep(10 * time.Millisecond)
		}
		// The refresh closes the line as it goes through the list, and stops the loops that left it after.
		for queue.Looping(s, screening) {
			if time.Now().After(deadline) {
				t.Fatal("the admission loop of an ended sale still runs after 5s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := q.Register(t.Context(), screening, ""); err == nil {
			t.Error("Register on an ended sale = nil, want ErrClosed")
		}

		// Redis forgets the flag (a restart without persistence): the scheduler closes the line again.
		if err := env.Redis.Del(t.Context(), queue.ClosedKey(env.Prefix, screening)).Err(); err != nil {
			t.Fatal(err)
		}
		s.Refresh()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if closed, err := q.Closed(t.Context(), screening); err != nil || closed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the line of an ended sale that Redis forgot is still open after 5s, want it closed again")
			}
		}
	})
}
