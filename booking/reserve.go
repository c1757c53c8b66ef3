// The reservation path: from a request's pass and seats to a committed reservation, in the order of its
// guarantees.

package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/pass"
)

// Reservation is a committed booking of one pass: an order of the box office (orders.go), held while its
// buyer pays or confirmed.
type Reservation struct {
	ID        int64     `json:"id"`
	Code      string    `json:"code"`
	Status    string    `json:"status"`
	Screening string    `json:"screening"`
	Seats     []string  `json:"seats"`
	CreatedAt time.Time `json:"created_at"`
	// HoldExpiresAt is when a held order lapses (and when it would have).
	HoldExpiresAt *time.Time `json:"hold_expires_at,omitempty"`
	ConfirmedAt   *time.Time `json:"confirmed_at,omitempty"`
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
	if err := offerBounds(claims, len(seats)); err != nil {
		return Reservation{}, err
	}
	hash := requestHash(screening, seats)
	r, err := b.reserve(ctx, claims, key, hash, seats)
	if key != "" && err != nil && !errors.As(err, new(*AfterCommitError)) && mayBeRetry(err) {
		return b.replay(ctx, claims, key, hash, err)
	}
	return r, err
}

// reserve runs a request whose pass verified and whose seats are known, in the order of its guarantees: wait
// for a holder here; check the pass, and what is known sold; lock every seat or none; write and commit while
// the locks hold; then settle what follows. The locks are released on every way out.
func (b *Booking) reserve(ctx context.Context, claims pass.Claims, key, hash string, seats []string) (Reservation, error) {
	return b.reserveSeats(ctx, claims, key, hash, seats, false, "")
}

// reserveSeats is reserve; with noWait, it does not wait for a seat another request holds, its seats claimed
// among the requests here before anything else (the claim is given up on every way out): a LockedError at
// once when another request here has one of them, before any Redis call (best available picks again).
// A non-empty owner is a lock owner id (lockOwner) that already claimed the seats here (releases.pickClaim):
// the request goes on with it, and gives the claim up on every way out.
func (b *Booking) reserveSeats(ctx context.Context, claims pass.Claims, key, hash string, seats []string, noWait bool, owner string) (Reservation, error) {
	cat, err := b.catalog(ctx, claims.Screening)
	if err != nil {
		return Reservation{}, err
	}
	sl := b.newSeatLocks(claims.Screening, len(cat.seats), seats)
	if owner != "" {
		sl.owner = owner
		defer b.released.release(sl.lockKeys(), sl.owner)
	}
	if noWait {
		sl.deadline = time.Now()
		if owner == "" {
			if seat, _ := b.released.claim(sl.lockKeys(), sl.seats, sl.owner); seat != "" {
				return Reservation{}, &LockedError{Seat: seat}
			}
			defer b.released.release(sl.lockKeys(), sl.owner)
		}
	}
	// A seat another request here holds is waited for here, before any Redis call: the losers of a burst on
	// a few seats wait without a lock script each, and check their pass once the winner has committed.
	if err := b.awaitSeatLocks(ctx, sl); err != nil {
		return Reservation{}, err
	}
	defer b.unlock(ctx, sl) // a refusal or a failure once locked; a reservation unlocks as it settles
	if err := b.checkPass(ctx, claims, sl); err != nil {
		return Reservation{}, err
	}
	if err := b.lock(ctx, sl); err != nil {
		return Reservation{}, err
	}
	// One database slot from the transaction to the count after it (pool.go): the count does not queue
	// behind other requests while this one's locks and its hold's clock run.
	ctx, endSession, err := b.store.session(ctx)
	if err != nil {
		return Reservation{}, err
	}
	defer endSession()
	sl.endSession = endSession
	r, err := b.commit(ctx, sl, write{
		screening: sl.screening, holder: claims.Token, passID: claims.ID, seats: seats, total: sl.total,
		idempotencyKey: key, hash: hash, code: NewOrderCode(), checkout: b.Checkout(),
		holdTTL: b.settings.HoldTTL, webhooks: b.settings.Webhooks,
	})
	if err != nil {
		return Reservation{}, b.refused(ctx, sl, err)
	}
	return b.settle(ctx, claims, sl, r)
}

// checkPass checks the pass and that its admission still holds the slot, reading with it whether the line
// is closed; then it refuses, with no lock, a seat this instance saw sold (a spent pass was told so first,
// and a closed line was just read with the pass).
func (b *Booking) checkPass(ctx context.Context, claims pass.Claims, sl *seatLocks) error {
	line, err := b.admissions.CheckPassLine(ctx, claims)
	if err != nil {
		return fmt.Errorf("booking: %w", err)
	}
	b.sold.sync(sl.screening, line.Released)
	sl.released = line.Released
	if line.Closed {
		b.sold.close(sl.screening, sl.released) // until seats come back: the memo answers SOLD_OUT, as the lock script would
	}
	return b.sold.refuse(sl.screening, sl.seats, sl.total)
}

// commit writes the reservation w in one transaction, fenced, and commits it only while the request still
// has every seat lock. Once committed, the requests here waiting for the seats learn they are sold.
func (b *Booking) commit(ctx context.Context, sl *seatLocks, w write) (Reservation, error) {
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
	if err := b.stillHeld(work, sl); err != nil {
		return Reservation{}, err
	}
	if err := tx.commit(); err != nil {
		return Reservation{}, err
	}
	// The seats are sold: the requests here waiting for them learn it now and are refused at once, not
	// after this request's count, Redis updates and unlock (they find the seats in the memo).
	b.sold.add(sl.screening, sl.seats, sl.released)
	b.released.wake(sl.lockKeys())
	return r, nil
}

// refused notes what a refused write taught, and returns its error: seats SQL says are sold go to the memo
// here and, with the unlock, to Redis's sold set, so the next request for them is refused before any lock;
// a screening SQL says is sold out closes its line.
func (b *Booking) refused(ctx context.Context, sl *seatLocks, err error) error {
	var taken *TakenError
	if errors.As(err, &taken) {
		b.sold.add(sl.screening, taken.Seats, sl.released)
		sl.sold = taken.Seats
	}
	if errors.Is(err, ErrSoldOut) {
		// No seat is free in SQL; sold out if none is only held (a Redis that forgot the held seats lets a
		// request this far), else every seat is held and the line waits.
		left, cerr := b.seatsLeft(ctx, sl)
		sl.endSession()
		if cerr == nil {
			cerr = b.noneLeft(ctx, sl, left)
		}
		if cerr != nil {
			return errors.Join(err, cerr)
		}
	}
	return err
}

// settle does what follows a commit, which cannot undo it: count the seats left, spend the pass (a held
// order keeps its slot until the hold lapses; a confirmed one frees it, and a failure leaves it to expire by
// time), close the line if that was the last seat (or, while some are only held, tell the line they all
// are), release the locks with the seats marked taken, and hand the seat change to the admitted sockets'
// news (news.go, sent without the request waiting). Spending the pass and releasing the locks go to Redis
// side by side: the winner waits one round trip for both, not two. A failure among these is an
// AfterCommitError, with the reservation.
func (b *Booking) settle(ctx context.Context, claims pass.Claims, sl *seatLocks, r Reservation) (Reservation, error) {
	var after []error
	left, err := b.seatsLeft(ctx, sl)
	sl.endSession() // the last statement: Redis alone from here
	if err != nil {
		after = append(after, err)
	}
	r.SeatsLeft = left.available
	sl.sold, sl.held = r.Seats, r.Status == StatusHeld
	if sl.held {
		b.metrics.transition("hold", nil)
	}
	spent := make(chan error, 1)
	go func() {
		if sl.held {
			spent <- b.admissions.KeepOrderSlot(ctx, claims, *r.HoldExpiresAt, len(r.Seats))
			return
		}
		spent <- b.admissions.FinishSeats(ctx, claims, len(r.Seats))
	}()
	if err == nil {
		after = append(after, b.noneLeft(ctx, sl, left))
	}
	b.unlock(ctx, sl)
	b.news.add(sl.screening, r.Seats, r.Status)
	after = append(after, <-spent)
	if err := errors.Join(after...); err != nil {
		return r, &AfterCommitError{Err: err}
	}
	return r, nil
}

// noneLeft closes the line when no seat of the screening is left and every one is sold (before the locks
// go, so a request that waited for them is told SOLD_OUT), or tells the line they are all held when some
// are only held (the line stays open: a hold may lapse).
func (b *Booking) noneLeft(ctx context.Context, sl *seatLocks, left counts) error {
	switch {
	case left.available > 0:
		return nil
	case left.held == 0:
		b.sold.close(sl.screening, sl.released)
		return b.sellOut(ctx, sl.screening)
	}
	waitlist, err := b.store.waitlist(ctx, sl.screening, b.settings.Waitlist)
	if err != nil {
		return err
	}
	return b.admissions.AllHeld(ctx, sl.screening, waitlist)
}

// counts are a screening's seats by state.
type counts struct{ available, held, sold int }

// seatsLeft counts the seats of the request's screening by state, right after its commit; available -1 and
// the error if the count fails.
//
// Counted after commit, not inside the transaction: two reservations committing side by side each see only
// their own insert in there, and neither would notice it took the last seat. After commit, the later of
// them sees both.
func (b *Booking) seatsLeft(ctx context.Context, sl *seatLocks) (counts, error) {
	c, err := b.store.seatsTaken(ctx, sl.screening, sl.total)
	if err != nil {
		return counts{available: -1}, fmt.Errorf("booking: reserve: count after commit: %w", err)
	}
	return c, nil
}

// offerBounds refuses a request for more seats than a waitlist's offer gave the pass (claims.Seats).
func offerBounds(claims pass.Claims, count int) error {
	if claims.Seats > 0 && count > claims.Seats {
		return badRequest("%d seats requested, but this offer is for %d", count, claims.Seats)
	}
	return nil
}
