// Tests of the reservation path: one winner per seat, all seats or none, a pass spent once, the line closed
// at the last seat, and the shortcuts of the requests of one instance.

package booking_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestSameSeatTwiceOneWinner(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		n := 50
		if env.Kind == testenv.Real {
			n = 200
		}
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", n)

		var o outcomes
		together(t, n, 30*time.Second, func(i int) {
			o.add(f.book.Reserve(context.Background(), "s1", users[i].Pass, []string{"A1"}))
		})

		if len(o.won) != 1 || o.taken+o.locked != n-1 {
			t.Errorf("%d users reserving A1 at once: %s; want 1 won, the rest taken or locked", n, &o)
		}
		if got := soldRows(t, env, "s1", "A1"); got != 1 {
			t.Errorf("reservation_seats rows for A1 = %d, want 1", got)
		}
	})
}

// With a lease shorter than the time a request needs, the Redis locks protect nothing: every request may
// reach SQL at once. The check before commit refuses a holder whose lease ran out (ErrLockLost), so perhaps
// nobody wins; and without that check the fence and the UNIQUE (screening, seat) constraint must still let
// exactly one through. Either way a seat is sold at most once and no loser leaves a reservation behind.
func TestDoubleBookingImpossibleWhenLocksLapse(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		n := 30
		if env.Kind == testenv.Real {
			n = 100
		}
		for _, c := range []struct {
			name       string
			checkHeld  bool
			minWinners int
		}{
			{"held check refuses lapsed holders", true, 0},
			{"fence and UNIQUE alone", false, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				id := testenv.Unique("s")
				env.Demo(t, id, 2, 5)
				f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: 2 * time.Second, LockLease: time.Millisecond, MaxSeats: 4})
				if !c.checkHeld {
					booking.SkipHeldCheck(f.book)
				}
				users := f.admit(t, id, n)

				var o outcomes
				together(t, n, 30*time.Second, func(i int) {
					o.add(f.book.Reserve(context.Background(), id, users[i].Pass, []string{"A1", "B1"}))
				})

				if len(o.won) < c.minWinners || len(o.won) > 1 || len(o.won)+o.taken+o.locked+o.lockLost != n {
					t.Errorf("%d users reserving A1+B1 with a 1ms lease: %s; want %d or 1 won, the rest taken, locked or lock lost", n, &o, c.minWinners)
				}
				for _, seat := range []string{"A1", "B1"} {
					if got := soldRows(t, env, id, seat); got != len(o.won) {
						t.Errorf("reservation_seats rows for %s = %d, want %d (one per winner)", seat, got, len(o.won))
					}
				}
				if got := reservationCount(t, env, id); got != len(o.won) {
					t.Errorf("reservations = %d, want %d (a loser must not leave a reservation without seats)", got, len(o.won))
				}
			})
		}
	})
}

func TestMultiSeatRequestLocksNoneWhenOneIsHeld(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		const wait = 200 * time.Millisecond
		f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: wait, LockLease: 10 * time.Second, MaxSeats: 4})
		users := f.admit(t, "s1", 2)
		// Another request holds A2 for longer than this one will wait.
		if err := env.Redis.Set(ctx, queue.Key(env.Prefix, "s1", "seat:A2"), "someone-else", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}

		began := time.Now()
		_, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1", "A2"})
		waited := time.Since(began)

		var locked *booking.LockedError
		if !errors.As(err, &locked) || !errors.Is(err, booking.ErrSeatLocked) {
			t.Fatalf("Reserve(A1+A2) with A2 held = %v, want ErrSeatLocked", err)
		}
		if locked.Seat != "A2" {
			t.Errorf("LockedError.Seat = %q, want A2", locked.Seat)
		}
		// The loop gives up when its next jittered pause (at most 40ms) would overrun lock_wait.
		if min := wait - 40*time.Millisecond; waited < min {
			t.Errorf("Reserve gave up after %v, want at least %v (lock_wait %v)", waited, min, wait)
		}
		if f.seatLocked(t, "s1", "A1") {
			t.Errorf("A1 locked after a refused A1+A2 request, want no lock left behind")
		}
		if got := soldRows(t, env, "s1", "A1"); got != 0 {
			t.Errorf("reservation_seats rows for A1 = %d, want 0", got)
		}
		if err := f.q.CheckPass(ctx, f.claims(t, "s1", users[0].Pass)); err != nil {
			t.Errorf("CheckPass after a refused request = %v, want nil (the pass is not spent)", err)
		}
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1"}); err != nil {
			t.Errorf("Reserve(A1) by another user = %v, want nil", err)
		}
		if got, err := env.Redis.Get(ctx, queue.Key(env.Prefix, "s1", "seat:A2")).Result(); got != "someone-else" {
			t.Errorf("A2's lock = %q (%v), want the other owner's lock left alone", got, err)
		}
	})
}

func TestMultiSeatRequestWaitsForALockReleasedInTime(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		key := queue.Key(env.Prefix, "s1", "seat:A2")
		if err := env.Redis.Set(ctx, key, "someone-else", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		// A2 is released once the request's first lock script has found it held: the request then waits for
		// it, and must take it on a later try.
		tried := make(chan struct{})
		var once sync.Once
		testenv.OnReply(env.Redis, func(cmd redis.Cmder) {
			if isLockScript(cmd) {
				once.Do(func() { close(tried) })
			}
		})
		released := make(chan error, 1)
		go func() {
			<-tried
			released <- env.Redis.Del(ctx, key).Err()
		}()

		r, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A2", "A1"})
		if rerr := <-released; rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			t.Fatalf("Reserve(A2+A1) with A2 released after a first try, within a 2s lock_wait = %v, want nil", err)
		}
		if want := []string{"A1", "A2"}; !slices.Equal(r.Seats, want) {
			t.Errorf("Reservation.Seats = %v, want %v", r.Seats, want)
		}
		for _, seat := range r.Seats {
			if f.seatLocked(t, "s1", seat) {
				t.Errorf("%s still locked after commit, want released", seat)
			}
		}
	})
}

// Overlapping multi-seat requests, listed in opposite orders: with locks holding (no request reaches SQL
// with a seat another holds) and with locks lapsing (SQL transactions race for the same seats).
func TestOverlappingRequestsNeverDeadlockOrPartiallyBook(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		n := 40
		if env.Kind == testenv.Real {
			n = 120
		}
		for _, c := range []struct {
			lease     time.Duration
			checkHeld bool
			// minWinners: with locks holding, or with only the fence and the UNIQUE constraint in the way,
			// the first request to write its seats commits; the check before commit may refuse them all.
			minWinners int
		}{
			{10 * time.Second, true, 1},
			{time.Millisecond, false, 1},
			{time.Millisecond, true, 0},
		} {
			lease := c.lease
			name := fmt.Sprintf("lease %v", lease)
			if !c.checkHeld {
				name += ", fence and UNIQUE alone"
			}
			t.Run(name, func(t *testing.T) {
				id := testenv.Unique("s")
				env.Demo(t, id, 1, 9)
				f := newFixture(t, env, env.Prefix, booking.Settings{LockWait: 300 * time.Millisecond, LockLease: lease, MaxSeats: 4})
				if !c.checkHeld {
					booking.SkipHeldCheck(f.book)
				}
				users := f.admit(t, id, n)
				// Request i wants a run of two or three neighbours, every other pair of them listed backwards:
				// chains of overlaps in opposite orders, the shape that deadlocks seat-by-seat locking.
				requests := make([][]string, n)
				for i := range requests {
					width := 2 + i%2
					start := i % (10 - width)
					var seats []string
					for k := range width {
						seats = append(seats, fmt.Sprintf("A%d", start+1+k))
					}
					if i%4 >= 2 {
						slices.Reverse(seats)
					}
					requests[i] = seats
				}

				var o outcomes
				together(t, n, 30*time.Second, func(i int) {
					o.add(f.book.Reserve(context.Background(), id, users[i].Pass, requests[i]))
				})

				if len(o.won) < c.minWinners || len(o.won)+o.taken+o.locked+o.soldOut+o.lockLost != n {
					t.Errorf("%d overlapping requests: %s; want at least %d won, the rest taken, locked, sold out or lock lost", n, &o, c.minWinners)
				}
				// Every winner holds all its seats in SQL, and nothing else is booked.
				got := bookedSeats(t, env, id)
				want := map[int64][]string{}
				for _, r := range o.won {
					want[r.ID] = r.Seats
				}
				if len(got) != len(want) {
					t.Errorf("database holds %d reservations with seats %v, want the %d winners %v", len(got), got, len(want), want)
				}
				for rid, seats := range want {
					if !slices.Equal(got[rid], seats) {
						t.Errorf("reservation %d holds %v in SQL, want %v", rid, got[rid], seats)
					}
				}
				if got := reservationCount(t, env, id); got != len(o.won) {
					t.Errorf("reservations = %d, want %d (one per winner)", got, len(o.won))
				}
				if lease < time.Second {
					return // lapsed locks vanish by themselves
				}
				locks, err := env.Redis.Keys(context.Background(), queue.Key(env.Prefix, id, "seat:*")).Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(locks) != 0 {
					t.Errorf("seat locks left after every request returned: %v, want none", locks)
				}
			})
		}
	})
}

func TestSeatSoldElsewhereIsTakenAndRedisLearnsIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		// Another deployment over the same database, with its own Redis keys: this one's Redis never hears
		// of its sales.
		other := newFixture(t, env, env.Prefix+"other:", defaults)
		if _, err := other.book.Reserve(ctx, "s1", other.admit(t, "s1", 1)[0].Pass, []string{"A1", "A3"}); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		if f.soldInRedis(t, "s1", "A1") {
			t.Fatal("A1 in this prefix's sold set before any request here; the test needs Redis not to know")
		}

		_, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A3", "A2", "A1"})

		var taken *booking.TakenError
		if !errors.As(err, &taken) || !errors.Is(err, booking.ErrSeatTaken) {
			t.Fatalf("Reserve(A1+A2+A3) with A1, A3 sold only in SQL = %v, want ErrSeatTaken", err)
		}
		if want := []string{"A1", "A3"}; !slices.Equal(taken.Seats, want) {
			t.Errorf("TakenError.Seats = %v, want %v (every sold seat SQL found)", taken.Seats, want)
		}
		for _, seat := range []string{"A1", "A3"} {
			if !f.soldInRedis(t, "s1", seat) {
				t.Errorf("%s not in the sold set after SQL refused it, want Redis to learn it", seat)
			}
		}
		if f.soldInRedis(t, "s1", "A2") || soldRows(t, env, "s1", "A2") != 0 || f.seatLocked(t, "s1", "A2") {
			t.Errorf("A2 marked, sold or locked after a refused A1+A2+A3 request, want it untouched")
		}
		// The loser keeps its admission and can pick another seat.
		if _, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A2"}); err != nil {
			t.Errorf("Reserve(A2) with the loser's pass = %v, want nil", err)
		}
	})
}

func TestTakenNamesEverySoldSeat(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 2)
		if _, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1", "A3"}); err != nil {
			t.Fatal(err)
		}

		_, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A3", "A2", "A1"})

		var taken *booking.TakenError
		if !errors.As(err, &taken) {
			t.Fatalf("Reserve(A1+A2+A3) with A1, A3 sold = %v, want ErrSeatTaken", err)
		}
		if want := []string{"A1", "A3"}; !slices.Equal(taken.Seats, want) {
			t.Errorf("TakenError.Seats = %v, want %v", taken.Seats, want)
		}
		f.untouched(t, "s1", "A2")
	})
}

func TestSeatForgottenByRedisIsTakenAndRedisRelearnsIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 2)
		if _, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"B3"}); err != nil {
			t.Fatal(err)
		}
		if !f.soldInRedis(t, "s1", "B3") {
			t.Fatalf("B3 not in the sold set after its reservation, want it there")
		}
		if err := env.Redis.Del(ctx, queue.Key(env.Prefix, "s1", "sold")).Err(); err != nil {
			t.Fatal(err)
		}
		// Another instance on the same Redis and database: the one that sold B3 remembers it sold it and
		// refuses B3 without asking Redis (TestSeatSoldHereIsRefusedWithNoLockOrScript).
		g := newFixture(t, env, env.Prefix, defaults)

		_, err := g.book.Reserve(ctx, "s1", users[1].Pass, []string{"B3"})

		if !errors.Is(err, booking.ErrSeatTaken) {
			t.Fatalf("Reserve(B3) after Redis forgot it was sold = %v, want ErrSeatTaken", err)
		}
		if !f.soldInRedis(t, "s1", "B3") {
			t.Errorf("B3 not in the sold set after SQL refused it, want Redis to relearn it")
		}
		if got := soldRows(t, env, "s1", "B3"); got != 1 {
			t.Errorf("reservation_seats rows for B3 = %d, want 1", got)
		}
	})
}

func TestInvalidPassesAreRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		sign := func(p *pass.Issuer, screening, token string, exp time.Time) string {
			t.Helper()
			s, err := p.Issue(screening, token, exp)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		passes := map[string]string{
			"forged":           sign(pass.NewSecretIssuer([]byte("not-the-secret-0123456789abcdef")), "s1", u.Token, u.ExpiresAt),
			"expired":          sign(f.passes, "s1", u.Token, time.Now().Add(-time.Minute).Truncate(time.Second)),
			"other screening":  sign(f.passes, "s2", u.Token, u.ExpiresAt),
			"garbage":          "not-a-pass",
			"empty":            "",
			"tampered payload": tampered(u.Pass, sign(f.passes, "s1", queue.NewToken(), u.ExpiresAt)),
			"unsigned (none)":  unsignedPass(t, u),
			"malformed token":  sign(f.passes, "s1", "NOT-A-TOKEN", u.ExpiresAt),
		}
		for name, p := range passes {
			t.Run(name, func(t *testing.T) {
				_, err := f.book.Reserve(ctx, "s1", p, []string{"A1"})
				if !errors.Is(err, pass.ErrInvalid) {
					t.Errorf("Reserve with a %s pass = %v, want pass.ErrInvalid", name, err)
				}
			})
		}
		if got := soldRows(t, env, "s1", "A1"); got != 0 {
			t.Errorf("reservation_seats rows for A1 = %d, want 0", got)
		}
		if _, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"}); err != nil {
			t.Errorf("Reserve with the real pass afterwards = %v, want nil", err)
		}
	})
}

func TestPassOfAnAdmissionThatEndedIsNotActive(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		if left, err := f.q.Leave(ctx, "s1", u.Token); err != nil || !left {
			t.Fatalf("Leave = %v, %v; want true, nil", left, err)
		}
		_, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"})
		if !errors.Is(err, queue.ErrNotActive) {
			t.Errorf("Reserve with the pass of a left admission = %v, want ErrNotActive", err)
		}

		// A well-signed pass for a token that was never admitted.
		never, err := f.passes.Issue("s1", queue.NewToken(), time.Now().Add(time.Minute).Truncate(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.book.Reserve(ctx, "s1", never, []string{"A1"})
		if !errors.Is(err, queue.ErrNotActive) {
			t.Errorf("Reserve with the pass of a token never admitted = %v, want ErrNotActive", err)
		}
		if got := soldRows(t, env, "s1", "A1"); got != 0 {
			t.Errorf("reservation_seats rows for A1 = %d, want 0", got)
		}
	})
}

func TestPassReservesOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		if _, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}
		_, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A2"})
		if !errors.Is(err, queue.ErrPassSpent) {
			t.Errorf("second Reserve with one pass = %v, want ErrPassSpent", err)
		}
		if got := soldRows(t, env, "s1", "A2"); got != 0 {
			t.Errorf("reservation_seats rows for A2 = %d, want 0", got)
		}
	})
}

func TestSamePassConcurrentlyReservesOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		const pairs = 20
		env.Demo(t, "s1", 2, pairs)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", pairs)
		results := make([]outcomes, pairs)

		// Request 2i and 2i+1 use user i's pass for different seats.
		together(t, 2*pairs, 30*time.Second, func(i int) {
			seat := fmt.Sprintf("%c%d", 'A'+i%2, i/2+1)
			results[i/2].add(f.book.Reserve(context.Background(), "s1", users[i/2].Pass, []string{seat}))
		})

		for i := range results {
			o := &results[i]
			if len(o.won) != 1 || o.spent != 1 {
				t.Errorf("pair %d: two requests with one pass: %s; want 1 won, 1 spent", i, o)
			}
		}
		if got := reservationCount(t, env, "s1"); got != pairs {
			t.Errorf("reservations = %d, want %d (one per pass)", got, pairs)
		}
		booked := 0
		for _, seats := range bookedSeats(t, env, "s1") {
			booked += len(seats)
		}
		if booked != pairs {
			t.Errorf("seats booked = %d, want %d", booked, pairs)
		}
	})
}

// Redis forgot that a pass was spent (here: it was spent through another prefix over the same database);
// the UNIQUE pass constraint still refuses it, and the seat it asked for stays free.
func TestPassSpentInSQLButUnknownToRedisIsSpent(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		other := newFixture(t, env, env.Prefix+"other:", defaults)
		tok, now := queue.NewToken(), time.Now()
		u := f.admitTokens(t, "s1", now, tok)[0]
		// Same screening, token and expiry: the same admission id, so u's pass is valid in both prefixes.
		if o := other.admitTokens(t, "s1", now, tok)[0]; !o.ExpiresAt.Equal(u.ExpiresAt) {
			t.Fatalf("the two admissions expire at %v and %v; the test needs the same", o.ExpiresAt, u.ExpiresAt)
		}
		if _, err := other.book.Reserve(ctx, "s1", u.Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}

		_, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A2"})

		if !errors.Is(err, queue.ErrPassSpent) {
			t.Fatalf("Reserve with a pass spent only in SQL = %v, want ErrPassSpent", err)
		}
		if got := soldRows(t, env, "s1", "A2"); got != 0 {
			t.Errorf("reservation_seats rows for A2 = %d, want 0", got)
		}
		if f.seatLocked(t, "s1", "A2") {
			t.Errorf("A2 still locked after the refused request, want released")
		}
		if _, err := f.book.Reserve(ctx, "s1", f.admit(t, "s1", 1)[0].Pass, []string{"A2"}); err != nil {
			t.Errorf("Reserve(A2) by another user = %v, want nil", err)
		}
	})
}

func TestReservationFreesTheSlotAndSpendsThePass(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		if _, active, _ := f.q.Counts(ctx, "s1"); active != 1 {
			t.Fatalf("active before = %d, want 1", active)
		}

		before := time.Now()
		r, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"B2", "A3"})
		if err != nil {
			t.Fatal(err)
		}

		if r.ID <= 0 || r.Screening != "s1" || !slices.Equal(r.Seats, []string{"A3", "B2"}) || r.SeatsLeft != 8 {
			t.Errorf("Reservation = %+v, want an id, screening s1, seats [A3 B2], 8 seats left", r)
		}
		if r.CreatedAt.Before(before.Add(-time.Second)) || r.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("Reservation.CreatedAt = %v, want about %v", r.CreatedAt, before)
		}
		if _, active, err := f.q.Counts(ctx, "s1"); err != nil || active != 0 {
			t.Errorf("active after the reservation = %d (%v), want 0", active, err)
		}
		if err := f.q.CheckPass(ctx, f.claims(t, "s1", u.Pass)); !errors.Is(err, queue.ErrPassSpent) {
			t.Errorf("CheckPass after the reservation = %v, want ErrPassSpent", err)
		}
		if e, err := f.q.Status(ctx, "s1", u.Token); err != nil || e.State != queue.Unknown {
			t.Errorf("Status after the reservation = %v (%v), want %v", e.State, err, queue.Unknown)
		}
		for _, seat := range r.Seats {
			if got := soldRows(t, env, "s1", seat); got != 1 {
				t.Errorf("reservation_seats rows for %s = %d, want 1", seat, got)
			}
			if !f.soldInRedis(t, "s1", seat) {
				t.Errorf("%s not in the sold set after its reservation", seat)
			}
		}
	})
}

func TestLastSeatClosesTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 3)
		if _, err := f.q.Register(ctx, "s1", queue.NewToken()); err != nil {
			t.Fatal(err)
		}

		r, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"})
		if err != nil || r.SeatsLeft != 2 {
			t.Fatalf("Reserve(A1) = %d left, %v; want 2, nil", r.SeatsLeft, err)
		}
		if closed, _ := f.q.Closed(ctx, "s1"); closed {
			t.Fatalf("line closed with 2 seats left, want open")
		}
		r, err = f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A3", "A2"})
		if err != nil || r.SeatsLeft != 0 {
			t.Fatalf("Reserve(A2+A3) = %d left, %v; want 0, nil", r.SeatsLeft, err)
		}

		if closed, err := f.q.Closed(ctx, "s1"); err != nil || !closed {
			t.Errorf("Closed after the last seat = %v (%v), want true", closed, err)
		}
		if waiting, _, _ := f.q.Counts(ctx, "s1"); waiting != 0 {
			t.Errorf("waiting after the last seat = %d, want 0 (the line is dispersed)", waiting)
		}
		if _, err := f.q.Register(ctx, "s1", ""); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Register after the last seat = %v, want ErrClosed", err)
		}
		// A latecomer admitted before the close is told the screening is sold out, not merely that its seat
		// is taken (every seat is).
		_, err = f.book.Reserve(ctx, "s1", users[2].Pass, []string{"A1"})
		if !errors.Is(err, booking.ErrSoldOut) {
			t.Errorf("Reserve after the last seat = %v, want ErrSoldOut", err)
		}
	})
}

// When SQL knows the screening is sold out but Redis does not (its sold set and closed flag are gone), a
// request is refused with ErrSoldOut and the line is closed then.
func TestSoldOutInSQLIsSoldOutAndClosesTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 2)
		other := newFixture(t, env, env.Prefix+"other:", defaults)
		if _, err := other.book.Reserve(ctx, "s1", other.admit(t, "s1", 1)[0].Pass, []string{"A1", "A2"}); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 2)

		_, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A2"})

		if !errors.Is(err, booking.ErrSoldOut) {
			t.Fatalf("Reserve(A2) with every seat sold only in SQL = %v, want ErrSoldOut", err)
		}
		if closed, err := f.q.Closed(ctx, "s1"); err != nil || !closed {
			t.Errorf("Closed after ErrSoldOut = %v (%v), want true", closed, err)
		}
		if _, err := f.q.Register(ctx, "s1", ""); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Register after ErrSoldOut = %v, want ErrClosed", err)
		}
	})
}

// Reservations racing for the last seats must still close the line: some reservation has to see that no
// seat is left. Several screenings, because one race may happen to run in sequence.
func TestConcurrentLastSeatsCloseTheLine(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		const seats, rounds = 20, 5
		f := newFixture(t, env, env.Prefix, defaults)
		for round := range rounds {
			id := fmt.Sprintf("s%d", round)
			env.Demo(t, id, 1, seats)
			users := f.admit(t, id, seats)

			var o outcomes
			together(t, seats, 30*time.Second, func(i int) {
				o.add(f.book.Reserve(ctx, id, users[i].Pass, []string{fmt.Sprintf("A%d", i+1)}))
			})
			if len(o.won) != seats {
				t.Fatalf("%s: %d users each reserving their own seat: %s; want all %d won", id, seats, &o, seats)
			}

			left := make([]int, 0, seats)
			for _, r := range o.won {
				left = append(left, r.SeatsLeft)
			}
			slices.Sort(left)
			if left[0] != 0 {
				t.Errorf("%s: SeatsLeft of the %d reservations = %v, want one to report 0", id, seats, left)
			}
			if closed, err := f.q.Closed(ctx, id); err != nil || !closed {
				t.Errorf("%s: Closed after every seat was sold concurrently = %v (%v), want true", id, closed, err)
			}
		}
	})
}

// A seat this instance sold (or heard is sold) is refused at once: no lock script, no wait, no SQL; and
// every seat the request names that is known sold is named.
func TestSeatSoldHereIsRefusedWithNoLockOrScript(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		counted := testenv.CountCalls(env.Redis)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 2)
		if _, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1", "A3"}); err != nil {
			t.Fatal(err)
		}
		before := counted.Scripts.Load()

		_, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A3", "A2", "A1"})

		var taken *booking.TakenError
		if !errors.As(err, &taken) || !slices.Equal(taken.Seats, []string{"A1", "A3"}) {
			t.Fatalf("Reserve(A1+A2+A3) after this instance sold A1, A3 = %v, want ErrSeatTaken naming A1, A3", err)
		}
		if n := counted.Scripts.Load() - before; n != 0 {
			t.Errorf("the refusal ran %d Redis scripts, want none", n)
		}
		f.untouched(t, "s1", "A2")
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A2"}); err != nil {
			t.Errorf("Reserve(A2) with the refused user's pass = %v, want nil", err)
		}
	})
}

// Requests for a seat that a request of this instance holds wait here for its release, without a lock
// script each: when the holder commits they are refused SEAT_TAKEN, and Redis ran the holder's scripts only.
// The test waits until every waiter has told it that it waits (booking.SetSeatWait), so a waiter that never
// waited fails it rather than passing unseen.
func TestWaitersOnAHolderHereRunNoLockScript(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		paused, release := pauseFirstAfterFence(t, f.book)
		counted := testenv.CountCalls(env.Redis)
		const waiters = 20
		users := f.admit(t, "s1", waiters+1)
		waiting := make(chan string, waiters)
		booking.SetSeatWait(f.book, func(owner, _ string) {
			select {
			case waiting <- owner:
			default: // a waiter that waits again (after localHolderCheck) is counted already
			}
		})

		holder := make(chan error, 1)
		go func() {
			_, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"B2"})
			holder <- err
		}()
		<-paused // the holder has B2's lock and is inside its transaction
		before := counted.Scripts.Load()
		errs := make(chan error, waiters)
		for i := 1; i <= waiters; i++ {
			go func() {
				_, err := f.book.Reserve(ctx, "s1", users[i].Pass, []string{"B2", "B4"})
				errs <- err
			}()
		}
		waited := map[string]bool{}
		for timeout := time.After(10 * time.Second); len(waited) < waiters; {
			select {
			case owner := <-waiting:
				waited[owner] = true
			case <-timeout:
				t.Fatalf("%d of %d requests for B2 waited for its holder here, want all", len(waited), waiters)
			}
		}
		during := counted.Scripts.Load() - before
		release()

		if err := <-holder; err != nil {
			t.Fatalf("holder: %v", err)
		}
		for range waiters {
			var taken *booking.TakenError
			if err := <-errs; !errors.As(err, &taken) || !slices.Equal(taken.Seats, []string{"B2"}) {
				t.Errorf("waiter: %v, want SEAT_TAKEN naming B2", err)
			}
		}
		if during != 0 {
			t.Errorf("%d waiters for a holder here ran %d Redis scripts while it held B2, want none", waiters, during)
		}
		f.untouched(t, "s1", "B4")
	})
}

// Requests for one seat that pass their checks together take turns at Redis: one of them runs the lock
// script and the others wait here for its outcome (a burst used to send one script each, the losers'
// answered "held"). While the winner holds the seat no other lock script runs, and its commit refuses the
// rest.
func TestRequestsRacingForASeatHereRunOneLockScript(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		paused, release := pauseFirstAfterFence(t, f.book)
		var locks atomic.Int64
		testenv.OnReply(env.Redis, func(cmd redis.Cmder) {
			if isLockScript(cmd) {
				locks.Add(1)
			}
		})
		const n = 50
		users := f.admit(t, "s1", n)
		start := make(chan struct{})
		errs := make(chan error, n)
		for i := range n {
			go func() {
				<-start
				_, err := f.book.Reserve(ctx, "s1", users[i].Pass, []string{"B2"})
				errs <- err
			}()
		}
		close(start)
		select {
		case <-paused: // one of them holds B2 and is inside its transaction
		case <-time.After(10 * time.Second):
			t.Fatal("no request reached its transaction within 10s")
		}
		// Read at once: those that passed their checks with the winner's have had their turn by now (without
		// the claim, their scripts ran beside the winner's), and a wait here is not yet old enough
		// (localHolderCheck) for a waiter to ask Redis.
		during := locks.Load()
		release()

		won, taken := 0, 0
		for range n {
			var te *booking.TakenError
			switch err := <-errs; {
			case err == nil:
				won++
			case errors.As(err, &te) && slices.Equal(te.Seats, []string{"B2"}):
				taken++
			default:
				t.Errorf("Reserve(B2) = %v, want nil or SEAT_TAKEN naming B2", err)
			}
		}
		if won != 1 || taken != n-1 {
			t.Errorf("%d requests for B2: %d won, %d taken; want 1 and %d", n, won, taken, n-1)
		}
		if during != 1 {
			t.Errorf("%d requests for B2 released together ran %d lock scripts by the time the winner held it, want 1", n, during)
		}
	})
}

// A screening that sold out through another instance is SOLD_OUT here too, also for a seat this instance
// remembers selling: a client whose seat map shows nothing left is told the sale is over, not to pick again.
func TestSoldOutElsewhereIsSoldOutForASeatSoldHere(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 2)
		f := newFixture(t, env, env.Prefix, defaults)
		g := newFixture(t, env, env.Prefix, defaults) // another instance on the same Redis and database
		users := f.admit(t, "s1", 3)
		if _, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}
		r, err := g.book.Reserve(ctx, "s1", users[1].Pass, []string{"A2"})
		if err != nil || r.SeatsLeft != 0 {
			t.Fatalf("the last seat: %+v, %v; want it sold with 0 left", r, err)
		}

		_, err = f.book.Reserve(ctx, "s1", users[2].Pass, []string{"A1"})

		if !errors.Is(err, booking.ErrSoldOut) {
			t.Fatalf("Reserve(A1) on the instance that sold it, after the other sold the last seat = %v, want ErrSoldOut", err)
		}
	})
}

// isLockScript reports whether cmd ran the seat-lock script (by its hash, or its source after NOSCRIPT).
func isLockScript(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) > 1 && (args[0] == "evalsha" && args[1] == booking.LockScriptHash ||
		args[0] == "eval" && fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprint(args[1])))) == booking.LockScriptHash)
}
