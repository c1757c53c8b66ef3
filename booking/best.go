// Best available: a reservation that asks for a number of seats, not for seats by name. The server picks the
// best free seats together (pickBest), and locks them as any reservation does, without waiting: a seat
// another request holds or just took is left out and the pick made again, so a crowd asking for seats at
// once spreads over the house instead of queueing on the same few locks.

package booking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/waitroom/waitroom/pass"
)

// bestTries bounds the picks of one best-available request: each retry leaves out the seats the last one
// found taken or held by another.
const bestTries = 8

// ReserveBest books count seats of screening, the best free ones together, for the holder of pass, with an
// optional Idempotency-Key (a retry under it answers the reservation it made). ErrNotEnoughSeats when count
// seats cannot be found free; otherwise what ReserveOnce answers.
func (b *Booking) ReserveBest(ctx context.Context, screening, pass, key string, count int) (Reservation, error) {
	if err := b.Exists(ctx, screening); err != nil {
		return Reservation{}, err
	}
	claims, err := b.passes.Verify(pass, screening)
	if err != nil {
		return Reservation{}, fmt.Errorf("booking: %w", err)
	}
	if count < 1 || count > b.settings.MaxSeats {
		return Reservation{}, badRequest("%d seats requested, 1 to %d per reservation", count, b.settings.MaxSeats)
	}
	if err := offerBounds(claims, count); err != nil {
		return Reservation{}, err
	}
	hash := requestHash(screening, []string{fmt.Sprintf("#%d", count)})
	r, err := b.reserveBest(ctx, claims, key, hash, count)
	if key != "" && err != nil && !errors.As(err, new(*AfterCommitError)) && (mayBeRetry(err) || errors.Is(err, ErrNotEnoughSeats)) {
		return b.replay(ctx, claims, key, hash, err)
	}
	return r, err
}

// reserveBest picks and reserves. A pick leaves out the seats Redis knows taken, those the requests of this
// instance hold the locks of, and those an earlier try of this request found held by another (which likely
// holds the rest of that block too); it claims what it picks among the requests here in the same step
// (releases.pickClaim), so a crowd asking at once gets one set of seats each, at once, and none picks
// again for losing a race here. When the picks run out that way, the best seats not known taken are
// reserved waiting for their locks, as a named request does (a holder that fails gives them back), and a
// seat found taken then is left out of the next pick.
func (b *Booking) reserveBest(ctx context.Context, claims pass.Claims, key, hash string, count int) (Reservation, error) {
	cat, err := b.catalog(ctx, claims.Screening)
	if err != nil {
		return Reservation{}, err
	}
	prefix := b.seats.SeatLockPrefix(claims.Screening)
	tried, sold := map[string]bool{}, map[string]bool{}
	// A try that waited and failed found a seat sold (or waited all of lock_wait): the tries are bounded by
	// the house.
	tries := bestTries + len(cat.seats)/count + 1
	fresh := false // read the sold set from Redis, not the view shared here
	for try := 0; try < tries; try++ {
		taken, err := b.takenSeats(ctx, claims.Screening, fresh)
		if err != nil {
			return Reservation{}, err
		}
		refreshed := fresh
		fresh = false
		wait := try >= bestTries
		owner := b.lockOwner()
		seats := b.released.pickClaim(prefix, owner, func(heldHere func(string) bool) []string {
			return b.sold.with(claims.Screening, func(known map[string]bool) []string {
				return pickBest(cat.seats, func(id string) bool {
					return taken[id] || known[id] || sold[id] || heldHere(id) || (!wait && tried[id])
				}, count)
			})
		})
		claimed := seats != nil
		if seats == nil && wait {
			seats = pickBest(cat.seats, func(id string) bool { return taken[id] || sold[id] }, count)
		}
		switch {
		case seats == nil && !wait:
			try = bestTries - 1 // only what others hold is left: wait for it
			continue
		case seats == nil && !refreshed:
			// The shared view is up to takenMaxAge old: a seat may have come back since. Look again at
			// Redis's sold set itself before refusing.
			fresh = true
			try--
			continue
		case seats == nil:
			return Reservation{}, b.notEnough(ctx, claims.Screening, count)
		}
		if b.bestPick != nil {
			b.bestPick(seats)
		}
		if !claimed {
			owner = "" // seats others here hold: reserve waits for them as a named request does
		}
		r, err := b.reserveSeats(ctx, claims, key, hash, seats, !wait, owner)
		var soldErr *TakenError
		switch {
		case errors.As(err, &soldErr):
			for _, s := range soldErr.Seats {
				sold[s] = true
			}
		case !errors.As(err, new(*LockedError)):
			return r, err
		}
		for _, s := range seats {
			tried[s] = true
		}
	}
	return Reservation{}, fmt.Errorf("booking: %d seats in %s after %d tries: %w", count, claims.Screening, tries, ErrSeatLocked)
}

// notEnough is the refusal of a request for count seats of screening that are not free: a NotEnoughError
// saying how many seats are only held (their orders may lapse or be cancelled, so a client may wait for
// them to come back rather than ask again at once).
func (b *Booking) notEnough(ctx context.Context, screening string, count int) error {
	e := &NotEnoughError{Count: count}
	if _, held, err := b.seats.SeatSets(ctx, screening); err == nil {
		e.Held = len(held)
	}
	return fmt.Errorf("booking: %d seats in %s: %w", count, screening, e)
}

// takenMaxAge is how old the view of a screening's sold set that best-available requests share may be: the
// requests of one moment read it once, not once each (a thousand replies of up to the whole house). A pick
// from a view that missed a sale meets the memo of this instance's own sales, then the lock script's
// refusal, and picks again; a seat back on sale is missed for as long, and a refusal looks at Redis first.
const takenMaxAge = 100 * time.Millisecond

// takenViews are the views of the screenings' sold sets that best-available requests share.
type takenViews struct {
	mu    sync.Mutex
	views map[string]*takenView
}

// takenView is one screening's: seats is never written once published, and mu is held while it is read
// again, so the requests that find it old share the one read.
type takenView struct {
	mu    sync.Mutex
	at    time.Time // when the read of seats started
	seats map[string]bool
}

func (t *takenViews) of(screening string) *takenView {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.views == nil {
		t.views = map[string]*takenView{}
	}
	v := t.views[screening]
	if v == nil {
		v = &takenView{}
		t.views[screening] = v
	}
	return v
}

// takenSeats is what Redis's sold set says is taken (held or sold) in the screening, as a set the caller
// only reads: the shared view when it is younger than takenMaxAge and fresh is false, else read now.
func (b *Booking) takenSeats(ctx context.Context, screening string, fresh bool) (map[string]bool, error) {
	now := time.Now
	if b.viewClock != nil {
		now = b.viewClock
	}
	v := b.taken.of(screening)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !fresh && v.seats != nil && now().Sub(v.at) < takenMaxAge {
		return v.seats, nil
	}
	at := now()
	ids, err := b.seats.SoldSeats(ctx, screening)
	if err != nil {
		return nil, fmt.Errorf("booking: best available in %s: %w", screening, err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	v.seats, v.at = out, at
	return out, nil
}
