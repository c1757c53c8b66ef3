// Leaving: a token taken out of a screening when its client says so, its slot freed and refilled at once.

package queue

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/leave.lua
	leaveLua string

	leaveScript = redis.NewScript(leaveLua)
)

// Leave takes token out of the screening: out of the line, and its admission slot freed if it had one.
// It reports whether the token was anywhere; when it was, the admission loops running on q here are woken
// to refill a freed slot at once.
func (q *Queue) Leave(ctx context.Context, screening, token string) (bool, error) {
	if err := q.check(screening, token); err != nil {
		return false, err
	}
	k := q.keys(screening)
	res, err := leaveScript.Run(ctx, q.rdb, []string{k.waiting, k.active, k.changed, k.freed, k.left, k.leftNew, k.pre, k.gone, k.log, k.preinfo},
		token, q.now().UnixMilli(), q.logFlag()).Int64Slice()
	if err != nil {
		return false, fmt.Errorf("queue: leave %s: %w", screening, err)
	}
	left := res[0]+res[1] > 0
	if left {
		q.slotFreed(screening)
	}
	return left, nil
}
