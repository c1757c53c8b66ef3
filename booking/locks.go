// Seat locks in Redis: a request's hold on the locks of its seats, taken all at once or none (lua/lock.lua),
// checked before commit (lua/held.lua) and released after (lua/unlock.lua), and the waits for a holder.

package booking

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/queue"
)

var (
	//go:embed lua/lock.lua
	lockLua string
	//go:embed lua/unlock.lua
	unlockLua string
	//go:embed lua/held.lua
	heldLua      string
	lockScript   = redis.NewScript(lockLua)
	unlockScript = redis.NewScript(unlockLua)
	holdScript   = redis.NewScript(heldLua)
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

// hold is one request's claim on the locks of its seats, from its first wait to its unlock.
type hold struct {
	screening string
	total     int      // the screening's seat count
	seats     []string // sorted
	// keys are what the lock script takes: the line's closed key, the screening's sold set, then the lock
	// key of each seat (keys[2+i] for seats[i]).
	keys     []string
	owner    string    // the lock owner id; it starts with the instance's, so a waiter knows a holder here
	deadline time.Time // lock_wait from the request's start
	locked   bool      // every seat lock taken, and not released yet
	sold     []string  // seats the request learnt are sold: the unlock adds them to Redis's sold set
	held     bool      // sold holds its own seats, held by its order (not sold): the unlock marks them held
	released int64     // the screening's released count its pass check read (soldSeats.sync)
}

// newHold is the hold, not locked yet, of a request for seats of screening (of total seats).
func (b *Booking) newHold(screening string, total int, seats []string) *hold {
	keys := make([]string, 0, len(seats)+2)
	keys = append(keys, queue.ClosedKey(b.prefix, screening), queue.Key(b.prefix, screening, "sold"))
	for _, s := range seats {
		keys = append(keys, queue.Key(b.prefix, screening, "seat:"+s))
	}
	deadline := time.Now().Add(b.settings.LockWait)
	return &hold{screening: screening, total: total, seats: seats, keys: keys, deadline: deadline,
		owner: b.instance + "/" + queue.NewToken()}
}

// seatKeys are the lock keys of the hold's seats, in the order of its seats.
func (h *hold) seatKeys() []string { return h.keys[2:] }

// seatKey is the lock key of seat, one of the hold's seats.
func (h *hold) seatKey(seat string) string {
	for i, s := range h.seats {
		if s == seat {
			return h.keys[2+i]
		}
	}
	return ""
}

// awaitHolders waits while another request here holds one of the hold's seats, until it releases or
// commits. It returns nil when none is held here, when one is known sold (the caller refuses it, once it
// has checked the pass), or when localHolderCheck passed without a release (the holder's lease may have run
// out: Redis decides); and a LockedError once the deadline has passed.
//
// (Tried and not kept: claiming the seats here before the pass check, so that one request of a crowd went
// on to Redis and the rest waited for it. The burst's p99 got worse, 1.2-1.4x the floor's to 1.6-1.7x:
// the winner was then whichever request came first, not the fastest of those racing for the lock.)
func (b *Booking) awaitHolders(ctx context.Context, h *hold) error {
	for {
		if b.sold.refuse(h.screening, h.seats, h.total) != nil {
			return nil
		}
		seat, released := b.released.heldHere(h.seatKeys(), h.seats, h.owner)
		if released == nil {
			return nil
		}
		if err := b.awaitRelease(ctx, seat, released, h.deadline); err != nil {
			return err
		}
		select {
		case <-released:
		default:
			return nil // localHolderCheck passed
		}
	}
}

// awaitRelease waits until released is closed, localHolderCheck passes, or ctx ends (an error); a
// LockedError for seat if deadline has passed.
func (b *Booking) awaitRelease(ctx context.Context, seat string, released <-chan struct{}, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return &LockedError{Seat: seat}
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

// lock takes every seat lock of the hold or none, retrying with jitter until its deadline (lock_wait from
// the request's start) has passed.
func (b *Booking) lock(ctx context.Context, h *hold) error {
	args := make([]any, 0, len(h.seats)+2)
	args = append(args, h.owner, b.settings.LockLease.Milliseconds())
	for _, s := range h.seats {
		args = append(args, s)
	}
	retry := backoff{step: lockRetryFirst}
	for {
		if err := b.sold.refuse(h.screening, h.seats, h.total); err != nil {
			return err
		}
		claimed, again, err := b.claimHere(ctx, h)
		if err != nil {
			return err
		}
		if again {
			continue // sold, released or refused: look again
		}
		busy, err := b.tryLock(ctx, h, args, claimed)
		if err != nil || busy == nil {
			return err // locked, refused, or failed
		}
		left := time.Until(h.deadline)
		if left <= 0 {
			return &LockedError{Seat: busy.seat}
		}
		if err := b.awaitRetry(ctx, h, busy, &retry, left); err != nil {
			return err
		}
	}
}

// claimHere claims the hold's seats among the requests of this instance. A seat another request here has
// or is asking Redis for is waited for here rather than asked of Redis, which would only say that it is
// held: of the requests for a seat that pass their checks together, one runs the lock script and the rest
// wait for its outcome, instead of a thousand scripts at once.
//
// It reports claimed when the seats are claimed; again when the wait for a holder here ended by a release
// (sold, released or refused: look again); neither when that holder outlived localHolderCheck (its lease
// may have run out, so Redis decides, unclaimed).
func (b *Booking) claimHere(ctx context.Context, h *hold) (claimed, again bool, err error) {
	seat, released := b.released.claim(h.seatKeys(), h.seats, h.owner)
	if released == nil {
		return true, false, nil
	}
	if err := b.awaitRelease(ctx, seat, released, h.deadline); err != nil {
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

// tryLock runs the lock script once, for every seat of the hold at once. It returns nil, nil when it took
// every lock (the hold is locked); a TakenError or ErrSoldOut when Redis knows a seat sold or the screening
// sold out; and otherwise the seat another request holds. A claim here (claimed) becomes the hold if the
// locks were taken and is given up if not, after a refusal is noted in the memo, so the requests it wakes
// find it there.
func (b *Booking) tryLock(ctx context.Context, h *hold, args []any, claimed bool) (*heldBy, error) {
	unclaim := func() {
		if claimed {
			b.released.release(h.seatKeys(), h.owner)
		}
	}
	res, err := lockScript.Run(ctx, b.rdb, h.keys, args...).Slice()
	if err != nil {
		unclaim()
		return nil, fmt.Errorf("booking: lock seats: %w", err)
	}
	switch res[0].(int64) {
	case 1:
		b.released.hold(h.seatKeys(), h.owner)
		h.locked = true
		return nil, nil
	case -1:
		taken := make([]string, 0, len(res)-1)
		for _, s := range res[1:] {
			taken = append(taken, s.(string))
		}
		b.sold.add(h.screening, taken, h.released)
		unclaim()
		return nil, &TakenError{Seats: taken}
	case -2:
		b.sold.close(h.screening, h.released)
		unclaim()
		return nil, fmt.Errorf("booking: reserve: %w", ErrSoldOut)
	}
	unclaim()
	owner, _ := res[2].(string)
	return &heldBy{seat: res[1].(string), owner: owner}, nil
}

// awaitRetry pauses, at most left, before the next try for the seat another request holds (busy). A holder
// in this process wakes us when it releases, so we only check in now and then (in case its lease runs out
// first); a holder elsewhere is polled with back-off. The last pause ends at the deadline, for one last
// try: a waiter waits all of lock_wait.
func (b *Booking) awaitRetry(ctx context.Context, h *hold, busy *heldBy, retry *backoff, left time.Duration) error {
	pause := localHolderCheck
	if !strings.HasPrefix(busy.owner, b.instance+"/") {
		pause = retry.next()
	}
	timer := time.NewTimer(min(pause, left))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("booking: lock seats: %w", ctx.Err())
	case <-b.released.wait(h.seatKey(busy.seat)):
		// Released here: the seat is likely sold (marked before release), or try again now. (The line may
		// have closed with that commit unknown to this instance: then SEAT_TAKEN, and the client's next
		// request reads the closing with its pass.)
		return b.sold.refuse(h.screening, h.seats, h.total)
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

// stillHeld checks, right before commit, that the request still holds every seat lock of its hold: one
// whose lease ran out while it worked rolls back (ErrLockLost) instead of racing the newer holder.
func (b *Booking) stillHeld(ctx context.Context, h *hold) error {
	if b.noHeldCheck {
		return nil
	}
	n, err := holdScript.Run(ctx, b.rdb, h.seatKeys(), h.owner).Int()
	if err != nil {
		return fmt.Errorf("booking: reserve: check locks before commit: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("booking: reserve: the seat locks lapsed before commit: %w", ErrLockLost)
	}
	return nil
}

// unlock releases the hold's seat locks, if it has them, after commit or rollback, adding the seats it
// learnt are sold to Redis's sold set in the same step; with a context of its own, so a cancelled request
// still releases.
func (b *Booking) unlock(ctx context.Context, h *hold) {
	if !h.locked {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	args := make([]any, 0, len(h.sold)+2)
	args = append(args, h.owner, boolFlag(h.held))
	for _, s := range h.sold {
		args = append(args, s)
	}
	keys := make([]string, 0, len(h.keys)+1)
	keys = append(keys, h.keys[1], queue.Key(b.prefix, h.screening, "held"))
	keys = append(keys, h.seatKeys()...)
	// The sold set is a hint for the lock script (SQL stays the guard), so a failure here is not the
	// request's: the locks then lapse by their lease.
	_ = unlockScript.Run(ctx, b.rdb, keys, args...).Err()
	b.released.release(h.seatKeys(), h.owner)
	h.locked = false
}

func boolFlag(v bool) string {
	if v {
		return "1"
	}
	return "0"
}
