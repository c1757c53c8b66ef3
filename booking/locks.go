// A request's seat locks: taken in Redis all at once or none, checked before commit and released after
// (the scripts are the queue's, under its keys: queue/seats.go), and the waits for another request holding
// them.

package booking

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/queue"
)

// The pause between two tries for a held seat lock starts at lockRetryFirst and doubles up to lockRetryCap,
// each one jittered over its upper half: a crowd waiting on one seat retries a few times, not in step, and
// does not flood Redis while the holder commits.
const (
	lockRetryFirst = 16 * time.Millisecond
	lockRetryCap   = 64 * time.Millisecond
	// localHolderCheck is how long a waiter for a holder in this process sleeps if no release wakes it.
	localHolderCheck = 250 * time.Millisecond
)

// seatLocks is one request's claim on the locks of its seats, from its first wait to its unlock.
type seatLocks struct {
	screening string
	total     int      // the screening's seat count
	seats     []string // sorted
	// keys are the queue's keys of the locks (keys.Locks()[i] for seats[i]) and what the lock script reads.
	keys     queue.SeatKeys
	owner    string    // the lock owner id; it starts with the instance's, so a waiter knows a holder here
	deadline time.Time // lock_wait from the request's start
	locked   bool      // every seat lock taken, and not released yet
	sold     []string  // seats the request learnt are sold: the unlock adds them to Redis's sold set
	held     bool      // sold holds its own seats, held by its order (not sold): the unlock marks them held
	released int64     // the screening's released count its pass check read (soldSeats.sync)
	// endSession gives back the request's database slot (Store.session) after its last statement.
	endSession func()
}

// newSeatLocks is the seat locks, not taken yet, of a request for seats of screening (of total seats).
func (b *Booking) newSeatLocks(screening string, total int, seats []string) *seatLocks {
	keys := b.seats.SeatKeys(screening, seats)
	deadline := time.Now().Add(b.settings.LockWait)
	return &seatLocks{screening: screening, total: total, seats: seats, keys: keys, deadline: deadline,
		owner: b.lockOwner()}
}

// lockOwner is a new lock owner id for a request here: it starts with the instance's, so a waiter knows a
// holder here.
func (b *Booking) lockOwner() string { return b.instance + "/" + ids.New() }

// lockKeys are the lock keys of the request's seats, in the order of its seats.
func (sl *seatLocks) lockKeys() []string { return sl.keys.Locks() }

// lockKey is the lock key of seat, one of the request's seats.
func (sl *seatLocks) lockKey(seat string) string {
	for i, s := range sl.seats {
		if s == seat {
			return sl.keys.Locks()[i]
		}
	}
	return ""
}

// awaitSeatLocks waits while another request here holds one of the request's seat locks, until it releases or
// commits. It returns nil when none is held here, when one is known sold (the caller refuses it, once it
// has checked the pass), or when localHolderCheck passed without a release (the holder's lease may have run
// out: Redis decides); and a LockedError once the deadline has passed.
//
// (Tried and not kept: claiming the seats here before the pass check, so that one request of a crowd went
// on to Redis and the rest waited for it. The burst's p99 got worse, 1.2-1.4x the floor's to 1.6-1.7x:
// the winner was then whichever request came first, not the fastest of those racing for the lock.)
func (b *Booking) awaitSeatLocks(ctx context.Context, sl *seatLocks) error {
	for {
		if b.sold.refuse(sl.screening, sl.seats, sl.total) != nil {
			return nil
		}
		seat, released := b.released.lockedHere(sl.lockKeys(), sl.seats, sl.owner)
		if released == nil {
			return nil
		}
		if err := b.awaitRelease(ctx, sl, seat, released); err != nil {
			return err
		}
		select {
		case <-released:
		default:
			return nil // localHolderCheck passed
		}
	}
}

// awaitRelease waits, for the request's seat locks sl, until released (another request here holding seat)
// is closed, localHolderCheck passes, or ctx ends (an error); a LockedError for seat if sl's deadline has
// passed.
func (b *Booking) awaitRelease(ctx context.Context, sl *seatLocks, seat string, released <-chan struct{}) error {
	left := time.Until(sl.deadline)
	if left <= 0 {
		return &LockedError{Seat: seat}
	}
	if b.seatWait != nil {
		b.seatWait(sl.owner, seat) // tests only
	}
	timer := time.NewTimer(min(localHolderCheck, left))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("booking: lock seats: %w", ctx.Err())
	case <-released:
	case <-timer.C:
	}
	return nil
}

// lock takes every seat lock of the request or none, retrying with jitter until its deadline (lock_wait from
// the request's start) has passed.
func (b *Booking) lock(ctx context.Context, sl *seatLocks) error {
	args := make([]any, 0, len(sl.seats)+2)
	args = append(args, sl.owner, b.settings.LockLease.Milliseconds())
	for _, s := range sl.seats {
		args = append(args, s)
	}
	retry := backoff{step: lockRetryFirst}
	for {
		if err := b.sold.refuse(sl.screening, sl.seats, sl.total); err != nil {
			return err
		}
		claimed, again, err := b.claimHere(ctx, sl)
		if err != nil {
			return err
		}
		if again {
			continue // sold, released or refused: look again
		}
		busy, err := b.tryLock(ctx, sl, args, claimed)
		if err != nil || busy == nil {
			return err // locked, refused, or failed
		}
		left := time.Until(sl.deadline)
		if left <= 0 {
			return &LockedError{Seat: busy.seat}
		}
		if err := b.awaitRetry(ctx, sl, busy, &retry, left); err != nil {
			return err
		}
	}
}

// claimHere claims the request's seats among the requests of this instance. A seat another request here has
// or is asking Redis for is waited for here rather than asked of Redis, which would only say that it is
// held: of the requests for a seat that pass their checks together, one runs the lock script and the rest
// wait for its outcome, instead of a thousand scripts at once.
//
// It reports claimed when the seats are claimed; again when the wait for a holder here ended by a release
// (sold, released or refused: look again); neither when that holder outlived localHolderCheck (its lease
// may have run out, so Redis decides, unclaimed).
func (b *Booking) claimHere(ctx context.Context, sl *seatLocks) (claimed, again bool, err error) {
	seat, released := b.released.claim(sl.lockKeys(), sl.seats, sl.owner)
	if released == nil {
		return true, false, nil
	}
	if err := b.awaitRelease(ctx, sl, seat, released); err != nil {
		return false, false, err
	}
	select {
	case <-released:
		return false, true, nil
	default:
		return false, false, nil
	}
}

// heldBy is a seat the lock script found locked, with the owner id holding it.
type heldBy struct{ seat, owner string }

// tryLock runs the lock script once, for every seat of the request at once. It returns nil, nil when it took
// every lock (sl is locked); a TakenError or ErrSoldOut when Redis knows a seat sold or the screening sold
// out; and otherwise the seat another request holds. A claim here (claimed) becomes the locks if the
// locks were taken and is given up if not, after a refusal is noted in the memo, so the requests it wakes
// find it there.
func (b *Booking) tryLock(ctx context.Context, sl *seatLocks, args []any, claimed bool) (*heldBy, error) {
	unclaim := func() {
		if claimed {
			b.released.release(sl.lockKeys(), sl.owner)
		}
	}
	res, err := b.seats.LockSeats(ctx, sl.keys, args)
	if err != nil {
		unclaim()
		return nil, fmt.Errorf("booking: lock seats: %w", err)
	}
	switch res.Outcome {
	case queue.SeatsLocked:
		b.released.took(sl.lockKeys(), sl.owner)
		sl.locked = true
		return nil, nil
	case queue.SeatsTaken:
		b.sold.add(sl.screening, res.Taken, sl.released)
		unclaim()
		return nil, &TakenError{Seats: res.Taken}
	case queue.SeatsSoldOut:
		b.sold.close(sl.screening, sl.released)
		unclaim()
		return nil, fmt.Errorf("booking: reserve: %w", ErrSoldOut)
	}
	unclaim()
	return &heldBy{seat: res.Seat, owner: res.Owner}, nil
}

// awaitRetry pauses, at most left, before the next try for the seat another request holds (busy). A holder
// in this process wakes us when it releases, so we only check in now and then (in case its lease runs out
// first); a holder elsewhere is polled with back-off. The last pause ends at the deadline, for one last
// try: a waiter waits all of lock_wait.
func (b *Booking) awaitRetry(ctx context.Context, sl *seatLocks, busy *heldBy, retry *backoff, left time.Duration) error {
	pause := localHolderCheck
	if !strings.HasPrefix(busy.owner, b.instance+"/") {
		pause = retry.next()
	}
	timer := time.NewTimer(min(pause, left))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("booking: lock seats: %w", ctx.Err())
	case <-b.released.wait(sl.lockKey(busy.seat)):
		// Released here: the seat is likely sold (marked before release), or try again now. (The line may
		// have closed with that commit unknown to this instance: then SEAT_TAKEN, and the client's next
		// request reads the closing with its pass.)
		return b.sold.refuse(sl.screening, sl.seats, sl.total)
	case <-timer.C:
		return nil
	}
}

// backoff is the pause between two tries for a seat held on another instance (see lockRetryFirst).
type backoff struct{ step time.Duration }

// next returns the pause before the next try, jittered over the upper half of the step, and doubles the
// step up to lockRetryCap.
func (r *backoff) next() time.Duration {
	pause := r.step/2 + rand.N(r.step/2)
	r.step = min(2*r.step, lockRetryCap)
	return pause
}

// stillHeld checks, right before commit, that the request still holds every one of its seat locks: one
// whose lease ran out while it worked rolls back (ErrLockLost) instead of racing the newer holder.
func (b *Booking) stillHeld(ctx context.Context, sl *seatLocks) error {
	if b.noHeldCheck {
		return nil
	}
	held, err := b.seats.SeatLocksHeld(ctx, sl.keys, sl.owner)
	if err != nil {
		return fmt.Errorf("booking: reserve: check locks before commit: %w", err)
	}
	if !held {
		return fmt.Errorf("booking: reserve: the seat locks lapsed before commit: %w", ErrLockLost)
	}
	return nil
}

// unlock releases the request's seat locks, if it has them, after commit or rollback, adding the seats it
// learnt are sold to Redis's sold set in the same step; with a context of its own, so a cancelled request
// still releases.
func (b *Booking) unlock(ctx context.Context, sl *seatLocks) {
	if !sl.locked {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	args := make([]any, 0, len(sl.sold)+2)
	args = append(args, sl.owner, boolFlag(sl.held))
	for _, s := range sl.sold {
		args = append(args, s)
	}
	// The sold set is a hint for the lock script (SQL stays the guard), so a failure here is not the
	// request's: the locks then lapse by their lease.
	_ = b.seats.UnlockSeats(ctx, sl.keys, args)
	b.released.release(sl.lockKeys(), sl.owner)
	sl.locked = false
}

func boolFlag(v bool) string {
	if v {
		return "1"
	}
	return "0"
}
