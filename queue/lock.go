// The per-screening admission lock, taken per tick number, so that each tick runs on one instance only.

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/lock.lua
	lockLua string
	//go:embed lua/unlock.lua
	unlockLua string

	lockScript   = redis.NewScript(lockLua)
	unlockScript = redis.NewScript(unlockLua)
)

// tryLock takes the screening's admission lock for tick number tick (the start of its interval, Unix ms). It fails when another
// owner holds the lock, or when any owner already took this tick.
func (q *Queue) tryLock(ctx context.Context, screening, owner string, tick int64, ttl time.Duration) (bool, error) {
	k := q.keys(screening)
	n, err := lockScript.Run(ctx, q.rdb, []string{k.lock, k.lastTick}, owner, ttl.Milliseconds(), tick).Int()
	if err != nil {
		return false, fmt.Errorf("queue: lock %s: %w", screening, err)
	}
	return n == 1, nil
}

// unlock releases the screening's admission lock if owner still holds it.
func (q *Queue) unlock(ctx context.Context, screening, owner string) (bool, error) {
	n, err := unlockScript.Run(ctx, q.rdb, []string{q.keys(screening).lock}, owner).Int()
	if err != nil {
		return false, fmt.Errorf("queue: unlock %s: %w", screening, err)
	}
	return n == 1, nil
}
