// Tests of a solution spent once: of many sockets showing one solution at once exactly one spends it, an
// unspent one can be spent again, and the mark lapses after the challenge does.

package queue_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestASolutionIsSpentOnceAcrossConcurrentSockets(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		q := queue.New(env.Redis, env.Prefix)
		expires := time.Now().Add(time.Minute)
		var fresh atomic.Int32
		var wg sync.WaitGroup
		for range 30 {
			wg.Go(func() {
				ok, err := q.SpendSolution(t.Context(), screening, "sig-1", expires)
				if err != nil {
					t.Error(err)
				}
				if ok {
					fresh.Add(1)
				}
			})
		}
		wg.Wait()
		if fresh.Load() != 1 {
			t.Fatalf("%d of 30 sockets spent one solution, want exactly 1", fresh.Load())
		}
		if ok, _ := q.SpendSolution(t.Context(), "other", "sig-1", expires); !ok {
			t.Error("a solution's mark in one screening refused it in another")
		}
		if err := q.UnspendSolution(t.Context(), screening, "sig-1"); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.SpendSolution(t.Context(), screening, "sig-1", expires); err != nil || !ok {
			t.Errorf("after UnspendSolution: SpendSolution = %v, %v; want fresh", ok, err)
		}
		ttl, err := env.Redis.PTTL(t.Context(), queue.Key(env.Prefix, screening, "pow:sig-1")).Result()
		if err != nil || ttl <= time.Minute-5*time.Second || ttl > time.Minute+time.Second {
			t.Errorf("the mark's TTL = %v, %v; want the challenge's minute and a second", ttl, err)
		}
	})
}
