// What the tests of booking share: a fixture over one env, admitted users, and readers of what SQL and Redis
// hold.

package booking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// secret signs every pass of these tests.
var secret = []byte("test-secret-0123456789abcdef0123456789")

// defaults are generous lock timings: a test that needs a short wait or lease says so.
var defaults = booking.Settings{LockWait: 2 * time.Second, LockLease: 10 * time.Second, MaxSeats: 4}

// fixture is a reservation service over one env and one Redis prefix, with the queue that admits its users.
type fixture struct {
	env    *testenv.Env
	prefix string
	q      *queue.Queue
	passes *pass.Issuer
	store  *booking.Store
	book   *booking.Booking
}

func newFixture(t testing.TB, env *testenv.Env, prefix string, s booking.Settings) *fixture {
	t.Helper()
	q := queue.New(env.Redis, prefix)
	passes := pass.NewSecretIssuer(secret)
	store := booking.NewStore(env.DB)
	return &fixture{
		env: env, prefix: prefix, q: q, passes: passes, store: store,
		book: booking.New(store, q, q, passes, s),
	}
}

// user is an admitted token with its signed pass.
type user = testenv.Admitted

// admit puts n fresh tokens in the screening's line and admits them in one tick, as the scheduler would.
func (f *fixture) admit(t testing.TB, screening string, n int) []user {
	t.Helper()
	return testenv.AdmitNew(t, f.q, f.passes, screening, n)
}

// admitTokens registers tokens and admits them at now; the same tokens admitted at the same now in another
// prefix get the same expiry, hence the same pass.
func (f *fixture) admitTokens(t testing.TB, screening string, now time.Time, tokens ...string) []user {
	t.Helper()
	return testenv.Admit(t, f.q, f.passes, screening, now, tokens...)
}

// claims verifies a pass the test signed.
func (f *fixture) claims(t *testing.T, screening, pass string) pass.Claims {
	t.Helper()
	c, err := f.passes.Verify(pass, screening)
	if err != nil {
		t.Fatalf("Verify(own pass) = %v", err)
	}
	return c
}

// soldRows counts the reservation_seats rows of one seat: the database's own answer to "how often sold".
func soldRows(t *testing.T, env *testenv.Env, screening, seat string) int {
	t.Helper()
	var n int
	err := env.DB.GetContext(context.Background(), &n,
		env.DB.Rebind(`SELECT COUNT(*) FROM reservation_seats WHERE screening_id = ? AND seat_id = ?`), screening, seat)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bookedSeats returns what the database holds: reservation id -> its seats, sorted.
func bookedSeats(t *testing.T, env *testenv.Env, screening string) map[int64][]string {
	t.Helper()
	var rows []struct {
		ID   int64  `db:"reservation_id"`
		Seat string `db:"seat_id"`
	}
	err := env.DB.SelectContext(context.Background(), &rows,
		env.DB.Rebind(`SELECT reservation_id, seat_id FROM reservation_seats WHERE screening_id = ?`), screening)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]string{}
	for _, r := range rows {
		out[r.ID] = append(out[r.ID], r.Seat)
	}
	for _, seats := range out {
		slices.Sort(seats)
	}
	return out
}

// reservationCount counts the reservations rows of a screening.
func reservationCount(t *testing.T, env *testenv.Env, screening string) int {
	t.Helper()
	var n int
	err := env.DB.GetContext(context.Background(), &n,
		env.DB.Rebind(`SELECT COUNT(*) FROM reservations WHERE screening_id = ?`), screening)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// seatLocked reports whether a seat's lock key exists.
func (f *fixture) seatLocked(t *testing.T, screening, seat string) bool {
	t.Helper()
	n, err := f.env.Redis.Exists(context.Background(), queue.Key(f.prefix, screening, "seat:"+seat)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// untouched fails the test if a refused request left seat locked or sold.
func (f *fixture) untouched(t *testing.T, screening, seat string) {
	t.Helper()
	if f.seatLocked(t, screening, seat) || soldRows(t, f.env, screening, seat) != 0 {
		t.Errorf("%s locked or sold after a refused request, want it untouched", seat)
	}
}

// soldInRedis reports whether the seat is in the screening's sold set.
func (f *fixture) soldInRedis(t *testing.T, screening, seat string) bool {
	t.Helper()
	ok, err := f.env.Redis.SIsMember(context.Background(), queue.Key(f.prefix, screening, "sold"), seat).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// outcomes tallies concurrent reservations: who won, who lost how, and anything unexpected.
type outcomes struct {
	mu         sync.Mutex
	won        []booking.Reservation
	taken      int
	locked     int
	spent      int
	soldOut    int
	lockLost   int
	unexpected []error
}

func (o *outcomes) add(r booking.Reservation, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		o.won = append(o.won, r)
	case errors.Is(err, booking.ErrSeatTaken):
		o.taken++
	case errors.Is(err, booking.ErrSeatLocked):
		o.locked++
	case errors.Is(err, queue.ErrPassSpent):
		o.spent++
	case errors.Is(err, booking.ErrSoldOut):
		o.soldOut++
	case errors.Is(err, booking.ErrLockLost):
		o.lockLost++
	default:
		o.unexpected = append(o.unexpected, err)
	}
}

func (o *outcomes) String() string {
	return fmt.Sprintf("%d won, %d taken, %d locked, %d spent, %d sold out, %d lock lost, %d unexpected %v",
		len(o.won), o.taken, o.locked, o.spent, o.soldOut, o.lockLost, len(o.unexpected), first(o.unexpected, 3))
}

func first(errs []error, n int) []error {
	if len(errs) > n {
		return errs[:n]
	}
	return errs
}

// together runs fn(i) for i in [0, n) on n goroutines released at once, and waits for all of them, failing
// the test if they do not finish within limit (a deadlock).
func together(t *testing.T, n int, limit time.Duration, fn func(i int)) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	close(start)
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%d concurrent reservations did not all return within %v: deadlock?", n, limit)
	}
}

// unsignedPass is u's pass with alg "none": every claim right, no signature.
func unsignedPass(t *testing.T, u user) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{
		Subject: u.Token, Audience: jwt.ClaimStrings{"s1"}, ExpiresAt: jwt.NewNumericDate(u.ExpiresAt),
		ID: pass.ID("s1", u.Token, u.ExpiresAt),
	}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tampered is the claims of other under the signature of pass.
func tampered(pass, other string) string {
	p, o := strings.Split(pass, "."), strings.Split(other, ".")
	return o[0] + "." + o[1] + "." + p[2]
}
