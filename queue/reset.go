// Resetting a sale (Reset): the line of a screening emptied, as if no one had ever come, for a demo run
// again or a test sale done with. What stays is what numbers the line and its events (epoch, seq, head), so
// every instance following it reads the reset as one more event; and the operator's own state (the pause,
// the leader lock, whether the line opened).

package queue

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/reset.lua
	resetLua string

	resetScript = redis.NewScript(resetLua)
)

// resetScanCount is how many keys one SCAN of a reset asks for, and how many one UNLINK drops.
const resetScanCount = 500

// Reset empties the screening's sale in Redis, in three steps:
//
//  1. The line closes (reason ReasonReset): registration and reservations are refused (booking's seat-lock
//     script reads the closing), the waiting line and the pre-queue are dropped, and every instance closes
//     the screening's sockets with 1012, so each comes back with its token into the fresh line.
//  2. between runs: the caller's own part (booking's orders in SQL). An error from it stops the reset there,
//     the line still closed for the reset: reset again.
//  3. Every key of the screening's hash tag goes but the numbering (epoch, seq, head), the leader lock, the
//     pause and the opening: the admitted and their passes, the seat locks and the sold and held seats
//     (booking's, which share the tag), the counters, the marks. Then the line opens again as new
//     (reset.lua), every instance is told (EventReopened: it reads the line whole), and the schedulers here
//     read their sales now.
//
// It returns the reset's epoch. A socket's registration between steps 1 and 3 is refused as closed.
func (q *Queue) Reset(ctx context.Context, screening string, between func(context.Context) error) (int64, error) {
	if _, err := q.close(ctx, screening, ReasonReset, false); err != nil {
		return 0, err
	}
	if between != nil {
		if err := between(ctx); err != nil {
			return 0, err
		}
	}
	k := q.keys(screening)
	if err := q.dropKeysOf(ctx, screening, k); err != nil {
		return 0, err
	}
	epoch, err := resetScript.Run(ctx, q.rdb, []string{k.closed, k.allHeld, k.epoch, k.released, k.reopened, k.head, k.seq, k.left, k.leftNew, k.log},
		reopenedMark.Milliseconds(), q.now().UnixMilli(), q.logFlag()).Int64()
	if err != nil {
		return 0, fmt.Errorf("queue: reset %s: %w", screening, err)
	}
	ev := Event{Kind: EventReopened, Screening: screening, TickAtMs: q.now().UnixMilli(), Epoch: epoch}
	err = q.publish(ctx, screening, ev)
	q.slotFreed(screening)
	q.refreshSchedulers()
	if err != nil {
		// The line is reset; instances learn it from the next tick's epoch gap.
		return epoch, fmt.Errorf("queue: reset %s but could not tell the instances: %w", screening, err)
	}
	return epoch, nil
}

// dropKeysOf unlinks every key of the screening's hash tag but those reset.lua keeps or moves. The keys of
// one tag live on one node, so on a Redis Cluster the scan runs on the master that holds the tag's slot.
func (q *Queue) dropKeysOf(ctx context.Context, screening string, k keys) error {
	keep := map[string]bool{
		k.epoch: true, k.seq: true, k.numbering: true, k.head: true, k.lock: true, k.paused: true, k.opened: true,
		k.closed: true, k.released: true, // reset.lua's to drop or move, last
		k.log: true, // the admission log goes on: the reset is a closing and a reopening in it
	}
	var node redis.Cmdable = q.rdb
	if c, ok := q.rdb.(*redis.ClusterClient); ok {
		master, err := c.MasterForKey(ctx, k.epoch)
		if err != nil {
			return fmt.Errorf("queue: reset %s: the node of its keys: %w", screening, err)
		}
		node = master
	}
	pattern := globEscape(Key(q.prefix, screening, "")) + "*"
	var cursor uint64
	for {
		found, next, err := node.Scan(ctx, cursor, pattern, resetScanCount).Result()
		if err != nil {
			return fmt.Errorf("queue: reset %s: scan: %w", screening, err)
		}
		drop := found[:0]
		for _, key := range found {
			if !keep[key] {
				drop = append(drop, key)
			}
		}
		if len(drop) > 0 {
			if err := node.Unlink(ctx, drop...).Err(); err != nil {
				return fmt.Errorf("queue: reset %s: unlink: %w", screening, err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// globEscape makes s match only itself in a SCAN pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
