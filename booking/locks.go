// Seat locks in Redis: the lock, unlock and held scripts, and a request's wait for the locks of its seats,
// all at once or none.

package booking

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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

// stillHeld checks, right before commit, that the request still holds every seat lock it took (keys, under
// owner): one whose lease ran out while it worked rolls back (ErrLockLost) instead of racing the newer
// holder.
func (b *Booking) stillHeld(ctx context.Context, keys []string, owner string) error {
	if b.noHeldCheck {
		return nil
	}
	n, err := holdScript.Run(ctx, b.rdb, keys, owner).Int()
	if err != nil {
		return fmt.Errorf("booking: reserve: check locks before commit: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("booking: reserve: the seat locks lapsed before commit: %w", ErrLockLost)
	}
	return nil
}

// awaitHolders waits while another request here holds one of seats (their lock keys keys), until it
// releases or commits. It returns nil when none is held here, when one is known sold (the caller refuses
// it, once it has checked the pass), or when localHolderCheck passed without a release (the holder's lease
// may have run out: Redis decides); and a LockedError once deadline has passed.
//
// (Tried and not kept: claiming the seats here before the pass check, so that one request of a crowd went
// on to Redis and the rest waited for it. The burst's p99 got worse, 1.2-1.4x the floor's to 1.6-1.7x:
// the winner was then whichever request came first, not the fastest of those racing for the lock.)
func (b *Booking) awaitHolders(ctx context.Context, screening string, total int, keys, seats []string, owner string, deadline time.Time) error {
	for {
		if b.sold.refuse(screening, seats, total) != nil {
			return nil
		}
		seat, released := b.released.heldHere(keys, seats, owner)
		if released == nil {
			return nil
		}
		if err := b.awaitRelease(ctx, seat, released, deadline); err != nil {
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

// lock takes every seat lock or none, retrying with jitter until deadline (lock_wait from the request's
// start) has passed.
func (b *Booking) lock(ctx context.Context, screening string, total int, keys []string, owner string, seats []string, deadline time.Time) error {
	args := make([]any, 0, len(seats)+2)
	args = append(args, owner, b.settings.LockLease.Milliseconds())
	for _, s := range seats {
		args = append(args, s)
	}
	step := lockRetryFirst
	keyOf := make(map[string]string, len(seats))
	for i, s := range seats {
		keyOf[s] = keys[i+2]
	}
	for {
		if err := b.sold.refuse(screening, seats, total); err != nil {
			return err
		}
		// A seat another request here has or is asking Redis for: wait here for it rather than ask Redis,
		// which would only say that it is held. Claiming the seats here before the lock script means that of
		// the requests for a seat that pass their checks together, one runs the script and the rest wait
		// for its outcome, instead of a thousand scripts at once.
		seat, released := b.released.claim(keys[2:], seats, owner)
		if released != nil {
			if err := b.awaitRelease(ctx, seat, released, deadline); err != nil {
				return err
			}
			select {
			case <-released:
				continue // sold, released or refused: look again
			default:
				// The holder here outlived localHolderCheck: its lease may have run out, so Redis decides.
			}
		}
		claimed := released == nil
		unclaim := func() {
			if claimed {
				b.released.release(keys[2:], owner)
			}
		}
		res, err := lockScript.Run(ctx, b.rdb, keys, args...).Slice()
		if err != nil {
			unclaim()
			return fmt.Errorf("booking: lock seats: %w", err)
		}
		// A refusal is noted before the claim goes, so the requests it wakes find it in the memo.
		switch res[0].(int64) {
		case 1:
			b.released.hold(keys[2:], owner)
			return nil
		case -1:
			taken := make([]string, 0, len(res)-1)
			for _, s := range res[1:] {
				taken = append(taken, s.(string))
			}
			b.sold.add(screening, taken)
			unclaim()
			return &TakenError{Seats: taken}
		case -2:
			b.sold.close(screening)
			unclaim()
			return fmt.Errorf("booking: reserve: %w", ErrSoldOut)
		}
		unclaim()
		left := time.Until(deadline)
		if left <= 0 {
			return &LockedError{Seat: res[1].(string)}
		}
		// A holder in this process wakes us when it releases, so we only check in now and then (in case
		// its lease runs out first); a holder elsewhere is polled with back-off. The last pause ends at the
		// deadline, for one last try: a waiter waits all of lock_wait.
		pause := step/2 + rand.N(step/2)
		if holder, _ := res[2].(string); strings.HasPrefix(holder, b.instance+"/") {
			pause = localHolderCheck
		} else {
			step = min(2*step, lockRetryCap)
		}
		pause = min(pause, left)
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("booking: lock seats: %w", ctx.Err())
		case <-b.released.wait(keyOf[res[1].(string)]):
			timer.Stop() // released here: the seat is likely sold (marked before release), or try again now
			// (The line may have closed with that commit unknown to this instance: then SEAT_TAKEN, and the
			// client's next request reads the closing with its pass.)
			if err := b.sold.refuse(screening, seats, total); err != nil {
				return err
			}
		case <-timer.C:
		}
	}
}
