// The reconciler: the seat sets in Redis (sold, held) are brought back to what SQL says, for the screenings
// whose orders ended lately. A transition's follow-up in Redis can fail after its commit (Redis cut at that
// moment): a released seat then stays marked taken, and the lock script would refuse it to everyone.

package booking

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/queue"
)

const (
	// reconcileEvery is how often the sweeper's lease holder reconciles; reconcileWindow how far back an
	// order's end makes its screening one to reconcile.
	reconcileEvery  = 2 * time.Second
	reconcileWindow = 10 * time.Minute
)

// Reconcile brings the sold and held sets in Redis of every screening with an order ended since
// now - reconcileWindow back to what SQL says, and returns how many seats it corrected.
func (b *Booking) Reconcile(ctx context.Context, now time.Time) (int, error) {
	var ids []string
	err := b.store.db.SelectContext(ctx, &ids, b.store.db.Rebind(`SELECT DISTINCT screening_id FROM reservations WHERE ended_at > ?`),
		now.Add(-reconcileWindow).UTC())
	if err != nil {
		return 0, fmt.Errorf("booking: reconcile: %w", err)
	}
	total := 0
	for _, id := range ids {
		n, err := b.reconcile(ctx, id)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// reconcile brings one screening's sets back to SQL. Redis is read first, then SQL: a seat Redis marked
// taken and SQL, read after, says available was released (its order's commit came before the read); a
// seat SQL says taken is marked so. A sale that commits between the reads is marked by its own unlock.
func (b *Booking) reconcile(ctx context.Context, screening string) (int, error) {
	soldKey, heldKey := queue.Key(b.prefix, screening, "sold"), queue.Key(b.prefix, screening, "held")
	pipe := b.rdb.Pipeline()
	soldCmd, heldCmd := pipe.SMembers(ctx, soldKey), pipe.SMembers(ctx, heldKey)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("booking: reconcile %s: %w", screening, err)
	}
	if !slices.Contains(soldCmd.Val(), soldSentinel) {
		return 0, nil // not loaded: the next seat map reads SQL whole
	}
	fromSQL, err := b.store.Seats(ctx, screening)
	if err != nil {
		return 0, err
	}
	var fix setFix
	fix.compare(soldCmd.Val(), fromSQL, func(st string) bool { return st != "available" })
	sold, held := fix, setFix{}
	held.compare(heldCmd.Val(), fromSQL, func(st string) bool { return st == "held" })
	if sold.empty() && held.empty() {
		return 0, nil
	}
	pipe = b.rdb.TxPipeline()
	sold.apply(ctx, pipe, soldKey)
	held.apply(ctx, pipe, heldKey)
	if len(sold.remove) > 0 || len(held.remove) > 0 {
		pipe.Incr(ctx, queue.ReleasedKey(b.prefix, screening)) // every instance forgets what it remembered
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("booking: reconcile %s: %w", screening, err)
	}
	return len(sold.add) + len(sold.remove) + len(held.add) + len(held.remove), nil
}

// setFix is what a set in Redis lacks (add) and has too many of (remove) against SQL.
type setFix struct{ add, remove []any }

// compare finds the fix of a set holding members, against the seats of SQL in it when in says so.
func (f *setFix) compare(members []string, fromSQL []SeatStatus, in func(status string) bool) {
	have := make(map[string]bool, len(members))
	for _, m := range members {
		have[m] = true
	}
	for _, s := range fromSQL {
		switch want := in(s.Status); {
		case want && !have[s.ID]:
			f.add = append(f.add, s.ID)
		case !want && have[s.ID]:
			f.remove = append(f.remove, s.ID)
		}
	}
}

func (f setFix) empty() bool { return len(f.add) == 0 && len(f.remove) == 0 }

// apply queues the fix of the set at key on pipe.
func (f setFix) apply(ctx context.Context, pipe interface {
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	SRem(ctx context.Context, key string, members ...any) *redis.IntCmd
}, key string) {
	if len(f.add) > 0 {
		pipe.SAdd(ctx, key, f.add...)
	}
	if len(f.remove) > 0 {
		pipe.SRem(ctx, key, f.remove...)
	}
}
