// A lease in Redis that one instance at a time holds and renews (booking's sweeper): RenewLease.

package queue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var renewScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0`)

// RenewLease takes the lease name under the queue's prefix for owner, or renews it if owner holds it, for
// lease; it reports whether owner holds it now. Its error is Redis's.
func (q *Queue) RenewLease(ctx context.Context, name, owner string, lease time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, q.rdb, []string{q.prefix + name}, owner, lease.Milliseconds()).Int()
	return n == 1, err
}
