// The reservation path: from a request's pass and seats to a committed reservation, in the order of its
// guarantees.

package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// Reservation is a committed booking of one pass.
type Reservation struct {
	ID        int64     `json:"id"`
	Screening string    `json:"screening"`
	Seats     []string  `json:"seats"`
	CreatedAt time.Time `json:"created_at"`
	// SeatsLeft is how many seats of the screening are still available after this reservation (-1 when the
	// count failed after commit). Not sent: a replayed response must equal the first one.
	SeatsLeft int `json:"-"`
}

// Reserve books seats of screening for the holder of pass, without an Idempotency-Key.
func (b *Booking) Reserve(ctx context.Context, screening, pass string, seats []string) (Reservation, error) {
	return b.ReserveOnce(ctx, screening, pass, "", seats)
}

// ReserveOnce books seats of screening for the holder of pass: check the screening exists, verify the pass
// and that its admission still holds the slot; lock every seat at once (waiting up to lock_wait); write in
// one transaction, fenced; release the locks after commit; spend the pass and free the slot; close the line
// if that was the last seat.
//
// With an idempotency key, a retry of a request that reserved (same key, same screening and seats) returns
// that reservation again instead of an error, and the same key with other seats is ErrIdempotencyMismatch.
// Only reservations are remembered: a request that failed booked nothing, and its retry runs anew.
func (b *Booking) ReserveOnce(ctx context.Context, screening, pass, key string, seats []string) (Reservation, error) {
	if err := b.Exists(ctx, screening); err != nil {
		return Reservation{}, err
	}
	claims, err := b.passes.Verify(pass, screening)
	if err != nil {
		return Reservation{}, fmt.Errorf("booking: %w", err)
	}
	seats, err = b.ParseSeats(ctx, screening, seats)
	if err != nil {
		return Reservation{}, err
	}
	hash := requestHash(screening, seats)
	r, err := b.reserve(ctx, claims, key, hash, seats)
	if key != "" && err != nil && !errors.As(err, new(*AfterCommitError)) && mayBeRetry(err) {
		return b.replay(ctx, claims, key, hash, err)
	}
	return r, err
}

// commit writes the reservation w in one transaction, fenced, and commits it only while the request still
// holds every seat lock it took (keys, under owner). Once committed, the requests here waiting for the seats
// learn they are sold.
func (b *Booking) commit(ctx context.Context, w write, keys []string, owner string) (Reservation, error) {
	tx, err := b.store.begin(ctx, w)
	if err != nil {
		return Reservation{}, err
	}
	defer tx.rollback()
	// The statements before the commit are bounded by DBTimeout (a slow database answers 503, not after
	// minutes); the transaction itself and its commit are not, so a commit is never cut off half-known.
	work := ctx
	if b.settings.DBTimeout > 0 {
		var cancel context.CancelFunc
		work, cancel = context.WithTimeout(ctx, b.settings.DBTimeout)
		defer cancel()
	}
	if err := tx.fence(work); err != nil {
		return Reservation{}, err
	}
	if b.afterFence != nil {
		b.afterFence() // tests only: a holder paused here outlives its lease inside its transaction
	}
	r, err := tx.insert(work)
	if err != nil {
		return Reservation{}, err
	}
	if err := b.stillHeld(work, keys, owner); err != nil {
		return Reservation{}, err
	}
	if err := tx.commit(); err != nil {
		return Reservation{}, err
	}
	// The seats are sold: the requests here waiting for them learn it now and are refused at once, not
	// after this request's count, Redis updates and unlock (they find the seats in the memo).
	b.sold.add(w.screening, w.seats)
	b.released.wake(keys)
	return r, nil
}

// seatsLeft counts the screening's seats still available (of total), right after a commit; -1 and the
// error if the count fails.
//
// Counted after commit, not inside the transaction: two reservations committing side by side each see only
// their own insert in there, and neither would notice it sold the last seat. After commit, the later of
// them sees both.
func (b *Booking) seatsLeft(ctx context.Context, screening string, total int) (int, error) {
	sold, err := b.store.seatsSold(ctx, screening)
	if err != nil {
		return -1, fmt.Errorf("booking: reserve: count after commit: %w", err)
	}
	return total - sold, nil
}

func (b *Booking) reserve(ctx context.Context, claims queue.Claims, key, hash string, seats []string) (Reservation, error) {
	screening := claims.Screening
	cat, err := b.catalog(ctx, screening)
	if err != nil {
		return Reservation{}, err
	}
	lockKeys := make([]string, 0, len(seats)+2)
	lockKeys = append(lockKeys, queue.ClosedKey(b.prefix, screening), queue.Key(b.prefix, screening, "sold"))
	for _, s := range seats {
		lockKeys = append(lockKeys, queue.Key(b.prefix, screening, "seat:"+s))
	}
	deadline := time.Now().Add(b.settings.LockWait)
	owner := b.instance + "/" + queue.NewToken()
	// A seat another request here holds is waited for here, before any Redis call: the losers of a burst on
	// a few seats wait without a lock script each, and check their pass once the winner has committed.
	if err := b.awaitHolders(ctx, screening, len(cat.seats), lockKeys[2:], seats, owner, deadline); err != nil {
		return Reservation{}, err
	}
	locked := false
	var sold []string // seats this request learnt are sold: the unlock adds them to Redis's sold set
	unlock := func() {
		// After commit or rollback; with a context of its own so a cancelled request still releases.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		args := make([]any, 0, len(sold)+1)
		args = append(args, owner)
		for _, s := range sold {
			args = append(args, s)
		}
		// The sold set is a hint for the lock script (SQL stays the guard), so a failure here is not the
		// request's: the locks then lapse by their lease.
		_ = unlockScript.Run(ctx, b.rdb, lockKeys[1:], args...).Err()
		b.released.release(lockKeys[2:], owner)
		locked = false
	}
	defer func() {
		if locked {
			unlock()
		}
	}()
	closed, err := b.admissions.CheckPassLine(ctx, claims)
	if err != nil {
		return Reservation{}, fmt.Errorf("booking: %w", err)
	}
	if closed {
		b.sold.close(screening) // for good: the memo below answers SOLD_OUT, as the lock script would
	}
	// A seat this instance saw sold is refused with no lock (a spent pass was told so first, above; and a
	// closed line was just read with the pass).
	if err := b.sold.refuse(screening, seats, len(cat.seats)); err != nil {
		return Reservation{}, err
	}
	if err := b.lock(ctx, screening, len(cat.seats), lockKeys, owner, seats, deadline); err != nil {
		return Reservation{}, err
	}
	locked = true

	r, err := b.commit(ctx, write{
		screening: screening, holder: claims.Token, passID: claims.ID, seats: seats, total: len(cat.seats),
		idempotencyKey: key, hash: hash,
	}, lockKeys[2:], owner)
	var taken *TakenError
	if errors.As(err, &taken) {
		// Redis learns what SQL knew (with the unlock), so the next request for these seats is refused
		// before any lock.
		b.sold.add(screening, taken.Seats)
		sold = taken.Seats
	}
	if errors.Is(err, ErrSoldOut) {
		b.sold.close(screening)
		if cerr := b.admissions.Close(ctx, screening); cerr != nil {
			return Reservation{}, errors.Join(err, cerr)
		}
	}
	if err != nil {
		return Reservation{}, err
	}
	var after []error
	if r.SeatsLeft, err = b.seatsLeft(ctx, screening, len(cat.seats)); err != nil {
		after = append(after, err)
	}
	// The reservation is committed: what follows cannot undo it. Freeing the slot (a failure leaves it to
	// expire by time) and releasing the locks with the seats marked sold go to Redis side by side: the
	// winner waits one round trip for both, not two.
	sold = r.Seats
	finished := make(chan error, 1)
	go func() { finished <- b.admissions.Finish(ctx, claims) }()
	if r.SeatsLeft == 0 {
		// The line closes before the locks go, so a request that waited for them is told SOLD_OUT.
		b.sold.close(screening)
		if err := b.admissions.Close(ctx, screening); err != nil {
			after = append(after, err)
		}
	}
	unlock()
	if err := <-finished; err != nil {
		after = append(after, err)
	}
	if err := errors.Join(after...); err != nil {
		return r, &AfterCommitError{Err: err}
	}
	return r, nil
}
