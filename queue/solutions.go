// A proof of work spent once: the mark a solved challenge leaves in Redis when it buys a place
// (SpendSolution), so that the same solution shown again is refused on every instance, and its undoing
// when the place could not be given after all (UnspendSolution).

package queue

import (
	"context"
	"fmt"
	"time"
)

// SpendSolution marks the challenge id (its signature) of the screening spent until its expiry, and reports
// whether it was fresh: false means another socket spent it already (a replay). The mark outlives the
// challenge by a second, so a solution is refused as spent before it could be refused as expired.
func (q *Queue) SpendSolution(ctx context.Context, screening, id string, expires time.Time) (fresh bool, err error) {
	if !ValidScreening(screening) {
		return false, fmt.Errorf("queue: %q: %w", screening, ErrBadScreening)
	}
	now := q.now() // one clock for the mark's TTL and its value
	ttl := max(expires.Sub(now)+time.Second, time.Second)
	fresh, err = q.rdb.SetNX(ctx, q.solutionKey(screening, id), now.UnixMilli(), ttl).Result()
	if err != nil {
		return false, fmt.Errorf("queue: spend a solution in %s: %w", screening, err)
	}
	return fresh, nil
}

// UnspendSolution takes back SpendSolution, for a socket whose place could not be registered after its
// solution was spent: the client may show it again.
func (q *Queue) UnspendSolution(ctx context.Context, screening, id string) error {
	if !ValidScreening(screening) {
		return fmt.Errorf("queue: %q: %w", screening, ErrBadScreening)
	}
	if err := q.rdb.Del(ctx, q.solutionKey(screening, id)).Err(); err != nil {
		return fmt.Errorf("queue: unspend a solution in %s: %w", screening, err)
	}
	return nil
}

func (q *Queue) solutionKey(screening, id string) string { return Key(q.prefix, screening, "pow:"+id) }
