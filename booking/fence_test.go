// Tests of the guards behind the seat locks, for a holder that outlives its lease: the check before commit,
// the fence, and the UNIQUE constraint.

package booking_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

// staleLease is the seat lock lease of the tests where a holder outlives it: short, so the tests are quick,
// and long enough for the newer holder to lock, write and commit well within its own.
const staleLease = 500 * time.Millisecond

// reply is what one Reserve returned.
type reply struct {
	r   booking.Reservation
	err error
}

// inFlight runs reservations on goroutines of their own; the test's cleanup waits for all of them, so none
// outlives the database it writes to.
type inFlight struct{ wg sync.WaitGroup }

func newInFlight(t *testing.T) *inFlight {
	f := &inFlight{}
	t.Cleanup(f.wg.Wait)
	return f
}

// reserve starts b.Reserve and returns where its reply will arrive.
func (f *inFlight) reserve(b *booking.Booking, screening, pass string, seats ...string) <-chan reply {
	out := make(chan reply, 1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		r, err := b.Reserve(context.Background(), screening, pass, seats)
		out <- reply{r, err}
	}()
	return out
}

// await reads a reply, failing the test if none arrives within limit.
func await(t *testing.T, what string, c <-chan reply, limit time.Duration) reply {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v", what, limit)
		return reply{}
	}
}

// pauseFirstAfterFence makes the first reservation of b stop inside its transaction, right after it wrote
// its fence: paused is closed when it gets there, and it goes on once release is called. Later reservations
// pass straight through. The test's cleanup releases it in any case (registered after the caller's
// inFlight, so it runs first).
func pauseFirstAfterFence(t *testing.T, b *booking.Booking) (paused <-chan struct{}, release func()) {
	t.Helper()
	p, resume := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	booking.SetAfterFence(b, func() {
		if first.CompareAndSwap(false, true) {
			close(p)
			<-resume
		}
	})
	var once sync.Once
	release = func() { once.Do(func() { close(resume) }) }
	t.Cleanup(release)
	return p, release
}

// fences returns a seat's fence and, if it is sold, the fence its reservation_seats row recorded (else -1).
func fences(t *testing.T, env *testenv.Env, screening, seat string) (seatFence, soldFence int64) {
	t.Helper()
	ctx := context.Background()
	if err := env.DB.GetContext(ctx, &seatFence, env.DB.Rebind(`SELECT fence FROM seats WHERE screening_id = ? AND seat_id = ?`), screening, seat); err != nil {
		t.Fatal(err)
	}
	var sold []int64
	if err := env.DB.SelectContext(ctx, &sold, env.DB.Rebind(`SELECT fence FROM reservation_seats WHERE screening_id = ? AND seat_id = ?`), screening, seat); err != nil {
		t.Fatal(err)
	}
	if len(sold) == 0 {
		return seatFence, -1
	}
	return seatFence, sold[0]
}

// rowLockWaiters counts the PostgreSQL sessions waiting for a row of this schema's seats table that another
// transaction holds.
func rowLockWaiters(t *testing.T, env *testenv.Env) int {
	t.Helper()
	var n int
	err := env.DB.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM pg_locks w WHERE NOT w.granted AND w.pid IN (
		SELECT pid FROM pg_locks WHERE locktype = 'tuple' AND relation = 'seats'::regclass)`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitersOn counts the PostgreSQL sessions waiting for transaction tx to end.
func waitersOn(t *testing.T, tx *sqlx.Tx) int {
	t.Helper()
	var n int
	err := tx.GetContext(context.Background(), &n, `SELECT COUNT(*) FROM pg_locks w JOIN pg_locks h
		ON h.locktype = 'transactionid' AND w.locktype = 'transactionid' AND w.transactionid = h.transactionid
		WHERE h.pid = pg_backend_pid() AND h.granted AND NOT w.granted`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A holder whose lease ran out while it was inside its transaction must lose to the request that took the
// seat after it: the stale holder books nothing and is told so (ErrLockLost, a 409), the newer holder gets
// the seat, and the seat is sold once.
func TestStaleHolderLosesToNewerHolder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		// A pauses after its fence until its lease has run out and B holds the lock. On PostgreSQL, B then
		// waits for A's row lock on A1; on SQLite (one connection) for A's transaction to end. When A goes
		// on, the check before commit finds the lock is B's.
		t.Run("the check before commit", func(t *testing.T) {
			ctx := context.Background()
			id := testenv.Unique("s")
			env.Demo(t, id, 2, 5)
			f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: 10 * time.Second, LockLease: staleLease, MaxSeats: 4})
			users := f.admit(t, id, 2)
			running := newInFlight(t)
			paused, release := pauseFirstAfterFence(t, f.book)

			a := running.reserve(f.book, id, users[0].Pass, "A1")
			select {
			case <-paused:
			case r := <-a:
				t.Fatalf("A returned %v before its fence, want it paused after", r.err)
			case <-time.After(5 * time.Second):
				t.Fatal("A did not reach its fence within 5s")
			}
			testenv.WaitFor(t, 5*time.Second, "A's lock on A1 to lapse", func() bool { return !f.seatLocked(t, id, "A1") })
			b := running.reserve(f.book, id, users[1].Pass, "A1")
			testenv.WaitFor(t, 5*time.Second, "B to lock A1", func() bool { return f.seatLocked(t, id, "A1") })
			if env.Kind == testenv.Real {
				testenv.WaitFor(t, 5*time.Second, "B to wait for A's row lock", func() bool { return rowLockWaiters(t, env) > 0 })
			}
			release()
			ra := await(t, "A (the stale holder)", a, 10*time.Second)
			rb := await(t, "B (the newer holder)", b, 10*time.Second)

			if !errors.Is(ra.err, booking.ErrLockLost) {
				t.Errorf("stale holder's Reserve(A1) = %+v, %v; want ErrLockLost", ra.r, ra.err)
			}
			if rb.err != nil || !slices.Equal(rb.r.Seats, []string{"A1"}) {
				t.Fatalf("newer holder's Reserve(A1) = %+v, %v; want A1, nil", rb.r, rb.err)
			}
			if got, want := bookedSeats(t, env, id), map[int64][]string{rb.r.ID: {"A1"}}; !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("database holds %v, want only the newer holder's %v", got, want)
			}
			if got := reservationCount(t, env, id); got != 1 {
				t.Errorf("reservations = %d, want 1", got)
			}
			if seatFence, soldFence := fences(t, env, id, "A1"); seatFence <= 0 || seatFence != soldFence {
				t.Errorf("A1 fence = %d, its sale recorded %d; want the same positive number (the winner's)", seatFence, soldFence)
			}
			// The stale holder booked nothing: its pass is not spent, and asking again it learns the seat is sold.
			if err := f.q.CheckPass(ctx, f.claims(t, id, users[0].Pass)); err != nil {
				t.Errorf("CheckPass of the stale holder = %v, want nil (nothing was booked)", err)
			}
			if _, err := f.book.Reserve(ctx, id, users[0].Pass, []string{"A1"}); !errors.Is(err, booking.ErrSeatTaken) {
				t.Errorf("stale holder's retry of A1 = %v, want ErrSeatTaken", err)
			}
		})

		// Without the check before commit (SkipHeldCheck), the fence is the guard: A takes its fencing number
		// and then waits (for a row lock the test holds) past its lease; B, the newer holder, fences A2 with a
		// higher number and commits; when A goes on, its UPDATE … WHERE fence < its number misses A2, and it
		// rolls back with ErrLockLost. SQLite runs one transaction at a time, so no newer holder can write
		// while the stale one is in its transaction: this order exists on PostgreSQL only.
		t.Run("the fence", func(t *testing.T) {
			if env.Kind != testenv.Real {
				t.Skip("SQLite serialises transactions: a newer holder cannot fence while a stale one is in its transaction")
			}
			ctx := context.Background()
			id := testenv.Unique("s")
			env.Demo(t, id, 2, 5)
			f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: 10 * time.Second, LockLease: staleLease, MaxSeats: 4})
			booking.SkipHeldCheck(f.book)
			users := f.admit(t, id, 2)
			running := newInFlight(t)

			hold, err := env.DB.BeginTxx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback()
			if _, err := hold.ExecContext(ctx, `SELECT seat_id FROM seats WHERE screening_id = $1 AND seat_id = 'A1' FOR UPDATE`, id); err != nil {
				t.Fatal(err)
			}

			a := running.reserve(f.book, id, users[0].Pass, "A1", "A2")
			testenv.WaitFor(t, 5*time.Second, "A to wait for the row lock on A1 (its fencing number taken)", func() bool { return waitersOn(t, hold) == 1 })
			testenv.WaitFor(t, 5*time.Second, "A's locks to lapse", func() bool { return !f.seatLocked(t, id, "A1") && !f.seatLocked(t, id, "A2") })
			rb := await(t, "B (the newer holder of A2)", running.reserve(f.book, id, users[1].Pass, "A2"), 10*time.Second)
			if rb.err != nil {
				t.Fatalf("newer holder's Reserve(A2) = %v, want nil", rb.err)
			}
			if err := hold.Rollback(); err != nil {
				t.Fatal(err)
			}
			ra := await(t, "A (the stale holder)", a, 10*time.Second)

			if !errors.Is(ra.err, booking.ErrLockLost) {
				t.Errorf("stale holder's Reserve(A1+A2) after B fenced A2 = %+v, %v; want ErrLockLost", ra.r, ra.err)
			}
			if got, want := bookedSeats(t, env, id), map[int64][]string{rb.r.ID: {"A2"}}; !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("database holds %v, want only the newer holder's %v", got, want)
			}
			if got := reservationCount(t, env, id); got != 1 {
				t.Errorf("reservations = %d, want 1", got)
			}
			if seatFence, soldFence := fences(t, env, id, "A2"); seatFence <= 0 || seatFence != soldFence {
				t.Errorf("A2 fence = %d, its sale recorded %d; want the same positive number (B's)", seatFence, soldFence)
			}
			if seatFence, soldFence := fences(t, env, id, "A1"); seatFence != 0 || soldFence != -1 {
				t.Errorf("A1 fence = %d, sale fence %d; want 0 and unsold (the stale holder's write rolled back)", seatFence, soldFence)
			}
		})
	})
}

// The stale holder that reached SQL first, with nothing to stop it before commit (SkipHeldCheck), keeps the
// seat it fenced first; the newer holder, waiting behind it, finds the seat sold. Still one sale.
func TestStaleHolderFirstToFenceStillSellsTheSeatOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: 10 * time.Second, LockLease: staleLease, MaxSeats: 4})
		booking.SkipHeldCheck(f.book)
		users := f.admit(t, "s1", 2)
		running := newInFlight(t)
		paused, release := pauseFirstAfterFence(t, f.book)

		a := running.reserve(f.book, "s1", users[0].Pass, "A1")
		select {
		case <-paused:
		case <-time.After(5 * time.Second):
			t.Fatal("A did not reach its fence within 5s")
		}
		testenv.WaitFor(t, 5*time.Second, "A's lock on A1 to lapse", func() bool { return !f.seatLocked(t, "s1", "A1") })
		b := running.reserve(f.book, "s1", users[1].Pass, "A1")
		testenv.WaitFor(t, 5*time.Second, "B to lock A1", func() bool { return f.seatLocked(t, "s1", "A1") })
		if env.Kind == testenv.Real {
			testenv.WaitFor(t, 5*time.Second, "B to wait for A's row lock", func() bool { return rowLockWaiters(t, env) > 0 })
		}
		release()
		ra := await(t, "A (the stale holder)", a, 10*time.Second)
		rb := await(t, "B (the newer holder)", b, 10*time.Second)

		if ra.err != nil {
			t.Errorf("stale holder's Reserve(A1), first at SQL, unchecked = %v, want nil", ra.err)
		}
		if !errors.Is(rb.err, booking.ErrSeatTaken) {
			t.Errorf("newer holder's Reserve(A1) behind it = %+v, %v; want ErrSeatTaken", rb.r, rb.err)
		}
		if got := soldRows(t, env, "s1", "A1"); got != 1 {
			t.Errorf("reservation_seats rows for A1 = %d, want 1", got)
		}
		if got := reservationCount(t, env, "s1"); got != 1 {
			t.Errorf("reservations = %d, want 1", got)
		}
	})
}

// A seat sold by a transaction the Redis locks never saw (the test's own, not yet committed while the
// reservation reads) is caught by the UNIQUE constraint when the reservation writes its rows: the request is
// told exactly which of its seats is sold, books nothing, and leaves the other seat free. PostgreSQL only:
// SQLite runs one transaction at a time.
func TestSeatSoldPastTheLocksIsNamedByTheConstraint(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	ctx := context.Background()
	id := testenv.Unique("s")
	env.Demo(t, id, 1, 3)
	f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: 2 * time.Second, LockLease: 10 * time.Second, MaxSeats: 4})
	users := f.admit(t, id, 1)
	running := newInFlight(t)

	sell, err := env.DB.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sell.Rollback()
	var rid int64
	if err := sell.GetContext(ctx, &rid, `INSERT INTO reservations (screening_id, holder, pass_id, code) VALUES ($1, 'elsewhere', 'pass-elsewhere', 'elsewhere') RETURNING id`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := sell.ExecContext(ctx, `INSERT INTO reservation_seats (reservation_id, screening_id, seat_id) VALUES ($1, $2, 'A2')`, rid, id); err != nil {
		t.Fatal(err)
	}

	c := running.reserve(f.book, id, users[0].Pass, "A1", "A2")
	testenv.WaitFor(t, 5*time.Second, "the reservation's insert to wait for the other sale of A2", func() bool { return waitersOn(t, sell) == 1 })
	if err := sell.Commit(); err != nil {
		t.Fatal(err)
	}
	r := await(t, "Reserve(A1+A2)", c, 10*time.Second)

	var taken *booking.TakenError
	if !errors.As(r.err, &taken) || !slices.Equal(taken.Seats, []string{"A2"}) {
		t.Errorf("Reserve(A1+A2) with A2 sold meanwhile = %+v, %v; want a TakenError naming A2 alone", r.r, r.err)
	}
	if got := soldRows(t, env, id, "A1"); got != 0 {
		t.Errorf("reservation_seats rows for A1 = %d, want 0 (nothing half-booked)", got)
	}
	if got := reservationCount(t, env, id); got != 1 {
		t.Errorf("reservations = %d, want 1 (the other sale's)", got)
	}
}
