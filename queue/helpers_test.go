// Helpers the queue tests share: settings, tick times, schedulers, registrations, reads of Redis and a clock.

package queue_test

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// screening is the id most tests queue for; every Env has its own key prefix, so they never meet.
const screening = "s1"

// settings is a screening's pace with a one-second tick and a one-minute admission.
func settings(batch, maxActive int) queue.Settings {
	return queue.Settings{
		Interval: time.Second, BatchSize: batch, MaxActive: maxActive,
		ActiveTTL: time.Minute, LockTTL: 5 * time.Second,
	}
}

// tickTimes returns the start of tick i, i = 0, 1, ...: whole seconds from now on, so each is a new tick
// number for a one-second interval.
func tickTimes() func(i int) time.Time {
	base := time.Now().Truncate(time.Second)
	return func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
}

func newScheduler(t *testing.T, q *queue.Queue, s queue.Settings, owner string) (*queue.Scheduler, *queue.Metrics) {
	t.Helper()
	m := queue.NewMetrics(prometheus.NewRegistry())
	return queue.NewScheduler(q, nil, s, owner, m, slog.New(slog.DiscardHandler)), m
}

// registerN puts n new tokens in line one after another and returns them in registration order.
func registerN(t *testing.T, q *queue.Queue, screening string, n int) []string {
	t.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		e, err := q.Register(t.Context(), screening, "")
		if err != nil {
			t.Fatalf("Register #%d: %v", i, err)
		}
		tokens[i] = e.Token
	}
	return tokens
}

// members reads one of a screening's sorted sets straight from Redis, in score order.
func members(t *testing.T, env *testenv.Env, screening, name string) []redis.Z {
	t.Helper()
	zs, err := env.Redis.ZRangeWithScores(t.Context(), queue.Key(env.Prefix, screening, name), 0, -1).Result()
	if err != nil {
		t.Fatalf("ZRANGE %s: %v", name, err)
	}
	return zs
}

// tokensOf returns the members of zs, in order.
func tokensOf(zs []redis.Z) []string {
	out := make([]string, len(zs))
	for i, z := range zs {
		out[i] = z.Member.(string)
	}
	return out
}

// zrank is the token's ZRANK in the screening's line read straight from Redis, -1 when it is not there.
func zrank(t *testing.T, env *testenv.Env, screening, token string) int64 {
	t.Helper()
	r, err := env.Redis.ZRank(t.Context(), queue.Key(env.Prefix, screening, "waiting"), token).Result()
	if errors.Is(err, redis.Nil) {
		return -1
	}
	if err != nil {
		t.Fatalf("ZRANK %s: %v", token, err)
	}
	return r
}

// zcard is the size of one of a screening's sorted sets, read straight from Redis.
func zcard(t *testing.T, env *testenv.Env, screening, name string) int64 {
	t.Helper()
	n, err := env.Redis.ZCard(t.Context(), queue.Key(env.Prefix, screening, name)).Result()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", name, err)
	}
	return n
}

// clock is a settable time for queue.SetNow.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(q *queue.Queue, start time.Time) *clock {
	c := &clock{now: start}
	queue.SetNow(q, c.Now)
	return c
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
