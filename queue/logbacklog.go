// The admission log's backlog: records the line's scripts appended to the screening's log stream that the
// log's writer has not stored in the database yet (the operator's view; docs/operations.md section 17).

package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// storedKept bounds the stored records LogBacklog looks for still in the stream: the writer's trim keeps the
// last one it stored (XTRIM MINID), and a trim that failed leaves a batch or two until the next succeeds.
const storedKept = 4096

// LogBacklog returns how many of the screening's records wait in Redis after the stream id stored ("" or
// "0": none stored yet), the last the database holds. Exact while fewer than storedKept stored records are
// still in the stream; more than that (trims failing for a long time) counts the excess as waiting.
func (q *Queue) LogBacklog(ctx context.Context, screening, stored string) (int64, error) {
	key := q.keys(screening).log
	pipe := q.rdb.Pipeline()
	n := pipe.XLen(ctx, key)
	var old *redis.XMessageSliceCmd
	if stored != "" && stored != "0" {
		old = pipe.XRangeN(ctx, key, "-", stored, storedKept)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("queue: the log backlog of %s: %w", screening, err)
	}
	waiting := n.Val()
	if old != nil {
		waiting -= int64(len(old.Val()))
	}
	return max(waiting, 0), nil
}
