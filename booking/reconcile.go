// The reconciler: the seat sets in Redis (sold, held) are brought back to what SQL says, for the screenings
// whose orders ended lately. A transition's follow-up in Redis can fail after its commit (Redis cut at that
// moment): a released seat then stays marked taken, and the lock script would refuse it to everyone.

package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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
	// One screening whose reconcile fails (its sets unreadable, a cut mid-way) does not hold up the others.
	total := 0
	var errs []error
	for _, id := range ids {
		n, err := b.reconcile(ctx, id)
		errs = append(errs, err)
		total += n
	}
	return total, errors.Join(errs...)
}

// reconcile brings one screening's sets back to SQL. Redis is read first, then SQL: a seat Redis marked
// taken and SQL, read after, says available was released (its order's commit came before the read); a
// seat SQL says taken is marked so. A sale that commits between the reads is marked by its own unlock.
func (b *Booking) reconcile(ctx context.Context, screening string) (int, error) {
	inSold, inHeld, err := b.seats.SeatSets(ctx, screening)
	if err != nil {
		return 0, fmt.Errorf("booking: reconcile %s: %w", screening, err)
	}
	fromSQL, err := b.store.Seats(ctx, screening)
	if err != nil {
		return 0, err
	}
	var sold, held setFix
	sold.compare(inSold, fromSQL, func(st string) bool { return st != "available" })
	held.compare(inHeld, fromSQL, func(st string) bool { return st == "held" })
	// A sold set without its sentinel was not loaded from SQL since Redis last lost it, yet may hold seats:
	// the unlocks since add what they learnt, and one of those can be stale (a seat SQL said taken, given
	// back before the unlock ran). Best available reads the set as it is, so it is corrected here all the
	// same, and marked loaded: after the fix it holds what SQL said.
	loaded := slices.Contains(inSold, soldSentinel)
	if sold.empty() && held.empty() && loaded {
		return 0, nil
	}
	n := len(sold.add) + len(sold.remove) + len(held.add) + len(held.remove)
	if !loaded {
		sold.add = append(sold.add, soldSentinel)
	}
	// One transaction; a removal moves the released count too, so every instance forgets what it remembered.
	fixes := queue.SeatSetFix{SoldAdd: sold.add, SoldRemove: sold.remove, HeldAdd: held.add, HeldRemove: held.remove}
	if err := b.seats.FixSeatSets(ctx, screening, fixes); err != nil {
		return 0, fmt.Errorf("booking: reconcile %s: %w", screening, err)
	}
	return n, nil
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
