// What queue's own tests reach that the rest of the server does not: hooks into a Queue or a Scheduler,
// and the reads and steps the scheduler uses inside the package, exported here for the tests only.

package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetNow makes q read the time from now instead of the wall clock, so a test can move time for Register,
// Status, Counts and CheckPass the way it already does for Admit through its now argument.
func SetNow(q *Queue, now func() time.Time) { q.now = now }

// Looping reports whether s runs the admission loop of screening here, so that a freed slot wakes it.
func Looping(s *Scheduler, screening string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops[screening] != nil
}

// RegisterLate sends the registration whose entry Enter returned with an error once more, with the same mark,
// as Redis would run a pipeline it got late.
func RegisterLate(ctx context.Context, q *Queue, screening string, e Entry) (Entry, error) {
	return q.enter(ctx, screening, e.Token, time.Time{}, e.mark)
}

// Wakers counts the schedulers whose Run runs on q: those a freed slot wakes.
func Wakers(q *Queue) int {
	q.wakersMu.Lock()
	defer q.wakersMu.Unlock()
	return len(q.wakers)
}

// RebuildHold is rebuildHold, for a test to bound the hold's TTL.
const RebuildHold = rebuildHold

// ExpiryOf is expiryOf: when an admission at now lapses.
func ExpiryOf(now time.Time, ttl time.Duration) time.Time { return expiryOf(now, ttl) }

// Refill is refill: one admission into the freed slots, without a scheduler.
func (q *Queue) Refill(ctx context.Context, screening string, now time.Time, s Settings) (TickResult, error) {
	return q.refill(ctx, screening, now, s)
}

// TryLock is tryLock: the admission lock for tick number tick, as another instance takes it.
func (q *Queue) TryLock(ctx context.Context, screening, owner string, tick int64, ttl time.Duration) (bool, error) {
	return q.tryLock(ctx, screening, owner, tick, ttl)
}

// Unlock is unlock: the admission lock released if owner still holds it.
func (q *Queue) Unlock(ctx context.Context, screening, owner string) (bool, error) {
	return q.unlock(ctx, screening, owner)
}

// Prefix is the key prefix q writes under.
func (q *Queue) Prefix() string { return q.prefix }

// Ranks returns the zero-based rank of each token (-1 for one not waiting) and the line's length, in one
// round trip: one ZRANK per token, so it is for tests' checks, never per tick (the hub computes ranks
// from Line).
func (q *Queue) Ranks(ctx context.Context, screening string, tokens []string) ([]int64, int64, error) {
	k := q.keys(screening)
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(tokens))
	for i, t := range tokens {
		cmds[i] = pipe.ZRank(ctx, k.waiting, t)
	}
	total := pipe.ZCard(ctx, k.waiting)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("queue: ranks in %s: %w", screening, err)
	}
	ranks := make([]int64, len(tokens))
	for i, c := range cmds {
		ranks[i] = -1
		if c.Err() == nil {
			ranks[i] = c.Val()
		}
	}
	return ranks, total.Val(), nil
}

// SetBeaconPatience bounds how long after its round is due an opening waits for the beacon (SetBeacon
// first), so a test of a beacon that is down need not wait beaconPatience.
func SetBeaconPatience(q *Queue, d time.Duration) { q.beacon.patience = d }

// BeforeOpen makes fn run between an opening's read of the pre-queue and its script, at each try (SetBeacon
// first), so a test can slip an arrival in between.
func BeforeOpen(q *Queue, fn func(try int)) { q.beacon.beforeOpen = fn }
