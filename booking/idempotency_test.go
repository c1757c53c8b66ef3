// Tests of a retry under the same Idempotency-Key.

package booking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// sameReservation reports whether two answers name the same booking: id, screening, seats and time.
func sameReservation(a, b booking.Reservation) bool {
	return a.ID == b.ID && a.Screening == b.Screening && slices.Equal(a.Seats, b.Seats) && a.CreatedAt.Equal(b.CreatedAt)
}

// A retry of a request that reserved, under the same Idempotency-Key, gets that reservation again, whether
// it comes after the first or alongside it; the same key asking for other seats is refused; and without a
// key a second request with the pass is told the pass is spent.
func TestIdempotentRetryReturnsTheSameReservation(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 2, 10)
		f := newFixture(t, env, env.Prefix, defaults)

		t.Run("one after the other", func(t *testing.T) {
			ctx := context.Background()
			u := f.admit(t, "s1", 1)[0]
			const key = "retry-1"
			first, err := f.book.ReserveOnce(ctx, "s1", u.Pass, key, []string{"A2", "A1"})
			if err != nil {
				t.Fatalf("ReserveOnce(%q, A2+A1) = %v, want nil", key, err)
			}
			// The same request again, its seats listed in another order: the same request all the same.
			again, err := f.book.ReserveOnce(ctx, "s1", u.Pass, key, []string{"A1", "A2"})
			if err != nil || !sameReservation(again, first) {
				t.Errorf("retry ReserveOnce(%q, A1+A2) = %+v, %v; want %+v, nil", key, again, err, first)
			}
			if got := bookedSeats(t, env, "s1")[first.ID]; !slices.Equal(got, []string{"A1", "A2"}) {
				t.Errorf("reservation %d holds %v in SQL, want [A1 A2]", first.ID, got)
			}

			_, err = f.book.ReserveOnce(ctx, "s1", u.Pass, key, []string{"A3"})
			if !errors.Is(err, booking.ErrIdempotencyMismatch) {
				t.Errorf("ReserveOnce(%q, A3) after it reserved A1+A2 = %v, want ErrIdempotencyMismatch", key, err)
			}
			_, err = f.book.ReserveOnce(ctx, "s1", u.Pass, "another-key", []string{"A1", "A2"})
			if !errors.Is(err, queue.ErrPassSpent) {
				t.Errorf("ReserveOnce(another key, A1+A2) = %v, want ErrPassSpent", err)
			}
			_, err = f.book.Reserve(ctx, "s1", u.Pass, []string{"A1", "A2"})
			if !errors.Is(err, queue.ErrPassSpent) {
				t.Errorf("Reserve without a key, after the pass reserved = %v, want ErrPassSpent", err)
			}
			if got := soldRows(t, env, "s1", "A3"); got != 0 {
				t.Errorf("reservation_seats rows for A3 = %d, want 0", got)
			}

			// A key belongs to the pass that used it: another pass with the same key reserves anew.
			other, err := f.book.ReserveOnce(ctx, "s1", f.admit(t, "s1", 1)[0].Pass, key, []string{"A3"})
			if err != nil || other.ID == first.ID || !slices.Equal(other.Seats, []string{"A3"}) {
				t.Errorf("another pass's ReserveOnce(%q, A3) = %+v, %v; want a new reservation of A3", key, other, err)
			}
		})

		t.Run("a failed request is not remembered", func(t *testing.T) {
			ctx := context.Background()
			u := f.admit(t, "s1", 1)[0]
			const key = "retry-2"
			if _, err := f.book.ReserveOnce(ctx, "s1", u.Pass, key, []string{"A1"}); !errors.Is(err, booking.ErrSeatTaken) {
				t.Fatalf("ReserveOnce(%q, A1) with A1 sold = %v, want ErrSeatTaken", key, err)
			}
			r, err := f.book.ReserveOnce(ctx, "s1", u.Pass, key, []string{"A4"})
			if err != nil || !slices.Equal(r.Seats, []string{"A4"}) {
				t.Errorf("ReserveOnce(%q, A4) after the key's request failed = %+v, %v; want A4, nil", key, r, err)
			}
		})

		t.Run("side by side", func(t *testing.T) {
			ctx := context.Background()
			const pairs = 10
			users := f.admit(t, "s1", pairs)
			before := reservationCount(t, env, "s1")
			replies := make([]reply, 2*pairs)
			// Requests 2i and 2i+1 are one request of user i sent twice at once, under one key.
			together(t, 2*pairs, 30*time.Second, func(i int) {
				seat := fmt.Sprintf("B%d", i/2+1)
				r, err := f.book.ReserveOnce(ctx, "s1", users[i/2].Pass, fmt.Sprintf("pair-%d", i/2), []string{seat})
				replies[i] = reply{r, err}
			})
			for p := range pairs {
				a, b := replies[2*p], replies[2*p+1]
				if a.err != nil || b.err != nil || !sameReservation(a.r, b.r) {
					t.Errorf("pair %d: one request sent twice at once = (%+v, %v) and (%+v, %v); want the same reservation twice", p, a.r, a.err, b.r, b.err)
				}
			}
			if got := reservationCount(t, env, "s1") - before; got != pairs {
				t.Errorf("reservations made by %d pairs = %d, want %d (one per pair)", pairs, got, pairs)
			}
		})
	})
}
