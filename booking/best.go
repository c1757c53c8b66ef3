// Best available: a reservation that asks for a number of seats, not for seats by name. The server picks the
// best free seats together (pickBest), and locks them as any reservation does, without waiting: a seat
// another request holds or just took is left out and the pick made again, so a crowd asking for seats at
// once spreads over the house instead of queueing on the same few locks.

package booking

import (
	"context"
	"errors"
	"fmt"

	"github.com/waitroom/waitroom/queue"
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
	hash := requestHash(screening, []string{fmt.Sprintf("#%d", count)})
	r, err := b.reserveBest(ctx, claims, key, hash, count)
	if key != "" && err != nil && !errors.As(err, new(*AfterCommitError)) && (mayBeRetry(err) || errors.Is(err, ErrNotEnoughSeats)) {
		return b.replay(ctx, claims, key, hash, err)
	}
	return r, err
}

// reserveBest picks and reserves, leaving out on each try the seats the last found taken or locked.
func (b *Booking) reserveBest(ctx context.Context, claims queue.Claims, key, hash string, count int) (Reservation, error) {
	cat, err := b.catalog(ctx, claims.Screening)
	if err != nil {
		return Reservation{}, err
	}
	out := map[string]bool{}
	var last error
	for range bestTries {
		taken, err := b.takenSeats(ctx, claims.Screening)
		if err != nil {
			return Reservation{}, err
		}
		seats := pickBest(cat.seats, func(id string) bool { return out[id] || taken[id] }, count)
		if seats == nil {
			return Reservation{}, fmt.Errorf("booking: %d seats in %s: %w", count, claims.Screening, ErrNotEnoughSeats)
		}
		r, err := b.reserveNow(ctx, claims, key, hash, seats)
		var locked *LockedError
		var sold *TakenError
		switch {
		case errors.As(err, &locked):
			out[locked.Seat] = true
		case errors.As(err, &sold):
			for _, s := range sold.Seats {
				out[s] = true
			}
		default:
			return r, err
		}
		last = err
	}
	return Reservation{}, last
}

// takenSeats is what Redis's sold set says is taken (held or sold) in the screening, as a set; nil when it
// does not know (the pick then leaves it to the locks and the database to refuse).
func (b *Booking) takenSeats(ctx context.Context, screening string) (map[string]bool, error) {
	ids, err := b.rdb.SMembers(ctx, queue.Key(b.prefix, screening, "sold")).Result()
	if err != nil {
		return nil, fmt.Errorf("booking: best available in %s: %w", screening, err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
