// Tests of the box office: an order held while its buyer pays, confirmed, cancelled or expired, each once;
// a seat in at most one live order; seats that come back to the sale and the line that follows them.

package booking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// holding is the settings of a sale in hold mode whose holds last ttl.
func holding(ttl time.Duration) booking.Settings {
	s := defaults
	s.Checkout, s.HoldTTL, s.Webhooks = booking.CheckoutHold, ttl, true
	return s
}

// clock is a store's clock that a test moves on instead of sleeping for a hold to lapse: the real time and
// what the test added.
type clock struct{ ahead atomic.Int64 }

// clocked sets one new clock on the stores of fs and returns it.
func clocked(fs ...*fixture) *clock {
	c := &clock{}
	for _, f := range fs {
		booking.SetClock(f.store, c.now)
	}
	return c
}

func (c *clock) now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// advance moves the clock on by d.
func (c *clock) advance(d time.Duration) { c.ahead.Add(int64(d)) }

// lapse is how far a test moves its clock to make a hold of a minute lapse.
const lapse = time.Minute + time.Second

// liveRows counts the live rows of a seat: the orders, held or confirmed, that have it.
func liveRows(t *testing.T, f *fixture, screening, seat string) int {
	t.Helper()
	var n int
	err := f.env.DB.GetContext(context.Background(), &n, f.env.DB.Rebind(`SELECT COUNT(*) FROM reservation_seats
		WHERE screening_id = ? AND seat_id = ? AND live`), screening, seat)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// outbox counts the webhooks of type typ written to the outbox.
func outbox(t *testing.T, f *fixture, typ string) int {
	t.Helper()
	var n int
	if err := f.env.DB.GetContext(context.Background(), &n, f.env.DB.Rebind(`SELECT COUNT(*) FROM webhook_outbox WHERE type = ?`), typ); err != nil {
		t.Fatal(err)
	}
	return n
}

// outboxFor counts the outbox's webhooks of type typ about screening.
func outboxFor(t *testing.T, f *fixture, typ, screening string) int {
	t.Helper()
	var n int
	err := f.env.DB.GetContext(context.Background(), &n, f.env.DB.Rebind(`SELECT COUNT(*) FROM webhook_outbox WHERE type = ? AND payload LIKE ?`),
		typ, `%"screening":"`+screening+`"%`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// seatState is the seat's state on the seat map.
func seatState(t *testing.T, f *fixture, screening, seat string) string {
	t.Helper()
	seats, err := f.book.Seats(context.Background(), screening)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seats {
		if s.ID == seat {
			return s.Status
		}
	}
	t.Fatalf("no seat %s in %s", seat, screening)
	return ""
}

// A hold lapses mid-payment while another user takes the seat: one owner, the late confirm is HOLD_EXPIRED,
// never two live orders on the seat.
func TestHoldLapsesWhileAnotherTakesTheSeat(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		clk := clocked(f)
		users := f.admit(t, "s1", 2)
		ctx := context.Background()
		first, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"})
		if err != nil || first.Status != booking.StatusHeld || first.HoldExpiresAt == nil || !booking.ValidOrderCode(first.Code) {
			t.Fatalf("Reserve in hold mode = %+v, %v; want a held order with a code and an expiry", first, err)
		}
		if got := seatState(t, f, "s1", "A1"); got != "held" {
			t.Errorf("A1 on the map while held = %q, want held", got)
		}
		clk.advance(lapse)
		if n, err := f.book.Sweep(ctx, clk.now()); err != nil || n != 1 {
			t.Fatalf("Sweep after the lapse = %d, %v; want 1 expired", n, err)
		}
		if got := seatState(t, f, "s1", "A1"); got != "available" {
			t.Errorf("A1 on the map after the lapse = %q, want available", got)
		}
		second, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1"})
		if err != nil {
			t.Fatalf("Reserve A1 after the lapse = %v, want the seat", err)
		}
		if _, err := f.book.Confirm(ctx, first.Code); !errors.Is(err, booking.ErrHoldExpired) {
			t.Errorf("late Confirm = %v, want ErrHoldExpired", err)
		}
		if n := liveRows(t, f, "s1", "A1"); n != 1 {
			t.Errorf("live orders on A1 = %d, want 1", n)
		}
		if _, err := f.book.Confirm(ctx, second.Code); err != nil {
			t.Errorf("Confirm of the second hold = %v", err)
		}
		if got := seatState(t, f, "s1", "A1"); got != "sold" {
			t.Errorf("A1 on the map once confirmed = %q, want sold", got)
		}
		for typ, want := range map[string]int{"order.held": 2, "order.expired": 1, "order.confirmed": 1} {
			if n := outbox(t, f, typ); n != want {
				t.Errorf("outbox %s = %d, want %d", typ, n, want)
			}
		}
	})
}

// A confirm after the lapse but before the sweeper expires the order itself, and says so.
func TestConfirmAfterTheLapseExpiresTheOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		clk := clocked(f)
		u := f.admit(t, "s1", 1)[0]
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A2"})
		if err != nil {
			t.Fatal(err)
		}
		clk.advance(lapse)
		if _, err := f.book.Confirm(ctx, o.Code); !errors.Is(err, booking.ErrHoldExpired) {
			t.Fatalf("Confirm after the lapse = %v, want ErrHoldExpired", err)
		}
		got, err := f.store.Order(ctx, o.Code)
		if err != nil || got.Status != booking.StatusExpired || liveRows(t, f, "s1", "A2") != 0 {
			t.Errorf("order after the late confirm = %+v, %v; want expired, its seat free", got, err)
		}
		if n, err := f.book.Sweep(ctx, clk.now()); err != nil || n != 0 {
			t.Errorf("Sweep after = %d, %v; want nothing left to expire", n, err)
		}
	})
}

// A sweep asked to expire a hold that has not lapsed by the store's clock expires nothing, and each move
// gives up after its bounded reads instead of reading the order for ever.
func TestAnExpiryBeforeTheLapseGivesUp(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		u := f.admit(t, "s1", 1)[0]
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := f.book.Sweep(ctx, time.Now().Add(lapse)); n != 0 || err == nil {
			t.Errorf("Sweep ahead of the store's clock = %d, %v; want nothing expired and an error", n, err)
		}
		if got, err := f.store.Order(ctx, o.Code); err != nil || got.Status != booking.StatusHeld {
			t.Errorf("order after = %+v, %v; want it still held", got, err)
		}
	})
}

// Confirming twice returns the order; cancelling twice, confirming a cancelled order, a buyer cancelling a
// paid one, a malformed or unknown code: each a clear error, nothing changed.
func TestOrderTransitionsRefuseWhatTheyCannotDo(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 4)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		users := f.admit(t, "s1", 2)
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1", "A2"})
		if err != nil {
			t.Fatal(err)
		}
		c1, err := f.book.Confirm(ctx, o.Code)
		if err != nil || c1.Status != booking.StatusConfirmed || c1.ConfirmedAt == nil {
			t.Fatalf("Confirm = %+v, %v", c1, err)
		}
		c2, err := f.book.Confirm(ctx, o.Code)
		if err != nil || c2.Status != booking.StatusConfirmed || !c2.ConfirmedAt.Equal(*c1.ConfirmedAt) {
			t.Errorf("Confirm again = %+v, %v; want the same confirmed order", c2, err)
		}
		if _, err := f.book.Cancel(ctx, o.Code, booking.ByBuyer); !errors.Is(err, booking.ErrOrderConfirmed) {
			t.Errorf("buyer Cancel of a confirmed order = %v, want ErrOrderConfirmed", err)
		}
		cancelled, err := f.book.Cancel(ctx, o.Code, booking.ByAdmin)
		if err != nil || cancelled.Status != booking.StatusCancelled || cancelled.CancelledBy != booking.ByAdmin {
			t.Fatalf("admin Cancel = %+v, %v", cancelled, err)
		}
		if _, err := f.book.Cancel(ctx, o.Code, booking.ByAdmin); !errors.Is(err, booking.ErrOrderCancelled) {
			t.Errorf("Cancel twice = %v, want ErrOrderCancelled", err)
		}
		if _, err := f.book.Confirm(ctx, o.Code); !errors.Is(err, booking.ErrOrderCancelled) {
			t.Errorf("Confirm a cancelled order = %v, want ErrOrderCancelled", err)
		}
		for _, code := range []string{"", "short", "UPPERCASEUPPERCASEUPPERCAS", "../../etc/passwd"} {
			if _, err := f.book.Confirm(ctx, code); !errors.Is(err, booking.ErrBadOrderCode) {
				t.Errorf("Confirm(%q) = %v, want ErrBadOrderCode", code, err)
			}
		}
		if _, err := f.book.Cancel(ctx, booking.NewOrderCode(), booking.ByBuyer); !errors.Is(err, booking.ErrOrderNotFound) {
			t.Errorf("Cancel of a guessed code = %v, want ErrOrderNotFound", err)
		}
		// The seats came back: another buyer takes them.
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1", "A2"}); err != nil {
			t.Errorf("Reserve the cancelled order's seats = %v", err)
		}
		if n := outbox(t, f, "order.cancelled"); n != 1 {
			t.Errorf("outbox order.cancelled = %d, want 1", n)
		}
	})
}

// The database refuses a second live order on a seat, whatever the locks did; an ended order's row does not
// count.
func TestASeatIsInOneLiveOrderByTheDatabase(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 2)
		ctx := context.Background()
		db := env.DB
		insert := func(code string) (int64, error) {
			var id int64
			err := db.GetContext(ctx, &id, db.Rebind(`INSERT INTO reservations (screening_id, holder, pass_id, code) VALUES ('s1', 'h', ?, ?) RETURNING id`), code, code)
			if err != nil {
				return 0, err
			}
			_, err = db.ExecContext(ctx, db.Rebind(`INSERT INTO reservation_seats (reservation_id, screening_id, seat_id) VALUES (?, 's1', 'A1')`), id)
			return id, err
		}
		first, err := insert("one")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := insert("two"); err == nil {
			t.Fatal("a second live order on A1 was written; want the unique index to refuse it")
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE reservation_seats SET live = FALSE WHERE reservation_id = ?`), first); err != nil {
			t.Fatal(err)
		}
		if _, err := insert("three"); err != nil {
			t.Errorf("a live order on A1 once the first ended = %v, want it written", err)
		}
	})
}

// Two instances sweeping at once expire each lapsed hold exactly once: one transition, one webhook.
func TestTwoSweepersExpireEachHoldOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		n := 20
		env.Demo(t, "s1", 4, 10)
		a := newFixture(t, env, env.Prefix, holding(time.Minute))
		b := newFixture(t, env, env.Prefix, holding(time.Minute))
		clk := clocked(a, b)
		users := a.admit(t, "s1", n)
		ctx := context.Background()
		for i, u := range users {
			if _, err := a.book.Reserve(ctx, "s1", u.Pass, []string{fmt.Sprintf("%c%d", 'A'+i/10, i%10+1)}); err != nil {
				t.Fatal(err)
			}
		}
		clk.advance(lapse)
		var wg sync.WaitGroup
		counts := make([]int, 4)
		for i := range counts {
			wg.Go(func() {
				f := a
				if i%2 == 1 {
					f = b
				}
				got, err := f.book.Sweep(ctx, clk.now())
				if err != nil {
					t.Errorf("Sweep = %v", err)
				}
				counts[i] = got
			})
		}
		wg.Wait()
		total := 0
		for _, c := range counts {
			total += c
		}
		if total != n || outbox(t, a, "order.expired") != n {
			t.Errorf("four sweeps on two instances expired %v (%d) with %d webhooks; want %d, each once", counts, total, outbox(t, a, "order.expired"), n)
		}
	})
}

// A held order keeps its holder's admission slot until it ends, and frees it when it is confirmed.
func TestAHeldOrderKeepsTheSlot(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		u := f.admit(t, "s1", 1)[0]
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		active := queue.Key(f.prefix, "s1", "active")
		score, err := env.Redis.ZScore(ctx, active, u.Token).Result()
		if err != nil || int64(score) != o.HoldExpiresAt.UnixMilli() {
			t.Fatalf("slot while held = %v, %v; want it kept until the hold's expiry %d", score, err, o.HoldExpiresAt.UnixMilli())
		}
		if _, err := f.book.Confirm(ctx, o.Code); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Redis.ZScore(ctx, active, u.Token).Result(); err == nil {
			t.Error("slot still taken after the confirm, want it freed")
		}
	})
}

// A cancellation after the sale sold out reopens it: the line opens again and a new user buys the seat.
func TestCancelAfterSoldOutReopens(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 2)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 2)
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A2"}); err != nil {
			t.Fatal(err)
		}
		if closed, _ := f.q.Closed(ctx, "s1"); !closed {
			t.Fatal("line open after the last seat, want closed")
		}
		if _, err := f.book.Cancel(ctx, o.Code, booking.ByAdmin); err != nil {
			t.Fatal(err)
		}
		if closed, _ := f.q.Closed(ctx, "s1"); closed {
			t.Fatal("line still closed after a refund, want it reopened")
		}
		late := f.admit(t, "s1", 1)[0]
		r, err := f.book.Reserve(ctx, "s1", late.Pass, []string{"A1"})
		if err != nil || r.Status != booking.StatusConfirmed {
			t.Fatalf("Reserve after the reopening = %+v, %v", r, err)
		}
		if closed, _ := f.q.Closed(ctx, "s1"); !closed {
			t.Error("line open after the seat sold again, want closed")
		}
	})
}

// In hold mode a sale whose seats are all held is not sold out: the line stays open (all_held); once every
// hold is confirmed it sells out.
func TestAllHeldIsNotSoldOut(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 2)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		users := f.admit(t, "s1", 3)
		ctx := context.Background()
		var codes []string
		for i, seat := range []string{"A1", "A2"} {
			o, err := f.book.Reserve(ctx, "s1", users[i].Pass, []string{seat})
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, o.Code)
		}
		if closed, _ := f.q.Closed(ctx, "s1"); closed {
			t.Fatal("line closed with every seat only held, want it open")
		}
		// Asking by count now is refused, saying how many seats may come back.
		var ne *booking.NotEnoughError
		if _, err := f.book.ReserveBest(ctx, "s1", users[2].Pass, "", 1); !errors.As(err, &ne) || ne.Held != 2 {
			t.Fatalf("ReserveBest(1) with every seat held = %v, want NOT_ENOUGH_SEATS with 2 held", err)
		}
		sum, err := f.store.Screening(ctx, "s1")
		if err != nil || sum.SeatsHeld != 2 || sum.SeatsAvailable != 0 {
			t.Fatalf("summary = %+v, %v; want 2 held, 0 available", sum, err)
		}
		for _, c := range codes {
			if _, err := f.book.Confirm(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if closed, _ := f.q.Closed(ctx, "s1"); !closed {
			t.Error("line open with every seat confirmed, want it sold out")
		}
		if n := outbox(t, f, "screening.sold_out"); n != 1 {
			t.Errorf("outbox screening.sold_out = %d, want 1", n)
		}
	})
}

// Best available: a crowd asking for two seats each gets them, adjacent, the middle rows first, without
// two orders on a seat.
func TestBestAvailableSpreadsACrowd(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		n := 20
		env.Demo(t, "s1", 5, 10)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", n)
		got := make([]booking.Reservation, n)
		errs := make([]error, n)
		var mu sync.Mutex
		picked := map[string]int{}
		picks := 0
		booking.SetBestPick(f.book, func(seats []string) {
			mu.Lock()
			defer mu.Unlock()
			picks++
			for _, s := range seats {
				picked[s]++
			}
		})
		together(t, n, 30*time.Second, func(i int) {
			got[i], errs[i] = f.book.ReserveBest(context.Background(), "s1", users[i].Pass, "", 2)
		})
		seen := map[string]bool{}
		for i, r := range got {
			if errs[i] != nil {
				t.Errorf("user %d: ReserveBest(2) = %v", i, errs[i])
				continue
			}
			if len(r.Seats) != 2 || r.Seats[0][0] != r.Seats[1][0] {
				t.Errorf("user %d got %v, want two seats of one row", i, r.Seats)
			}
			for _, s := range r.Seats {
				if seen[s] {
					t.Errorf("seat %s in two orders", s)
				}
				seen[s] = true
			}
		}
		// The requests of one moment each pick seats of their own, once: none picks the seats another here
		// has just picked and loses them to it.
		if picks != n {
			t.Errorf("%d picks for %d requests, want one each", picks, n)
		}
		for s, k := range picked {
			if k > 1 {
				t.Errorf("seat %s picked %d times", s, k)
			}
		}
		if !slices.ContainsFunc(got, func(r booking.Reservation) bool {
			return slices.Contains(r.Seats, "C5") || slices.Contains(r.Seats, "C6")
		}) {
			t.Errorf("nobody got the middle of row C: %v", got)
		}
		if _, err := f.book.ReserveBest(context.Background(), "s1", f.admit(t, "s1", 1)[0].Pass, "", 9); err == nil {
			t.Error("ReserveBest(9) over max_seats 4 = nil, want a bad request")
		}
	})
}

// soldReads counts the reads of a screening's sold set alone (best available's).
type soldReads struct {
	*queue.Queue
	n atomic.Int64
}

func (s *soldReads) SoldSeats(ctx context.Context, screening string) ([]string, error) {
	s.n.Add(1)
	return s.Queue.SoldSeats(ctx, screening)
}

// The requests by count of one moment share one read of the sold set; a request that would be refused
// reads it again first, so a seat back on sale since the shared read is found.
func TestBestAvailableCrowdSharesOneReadOfTheSoldSet(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		n := 20
		env.Demo(t, "s1", 3, 10)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		reads := &soldReads{Queue: f.q}
		f.book = booking.New(f.store, reads, f.q, f.passes, holding(time.Minute))
		var mu sync.Mutex
		frozen := time.Now()
		booking.SetViewClock(f.book, func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return frozen
		})
		users := f.admit(t, "s1", n+2)
		got := make([]booking.Reservation, n)
		errs := make([]error, n)
		together(t, n, 30*time.Second, func(i int) {
			got[i], errs[i] = f.book.ReserveBest(context.Background(), "s1", users[i].Pass, "", 1)
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("user %d: ReserveBest(1) = %v", i, err)
			}
		}
		if r := reads.n.Load(); r != 1 {
			t.Errorf("%d reads of the sold set for a crowd of %d at one moment, want 1", r, n)
		}
		// Ten seats left: the last users take them, and a request after them is refused (the view, read
		// again, says every seat taken). Then one is cancelled: the view still says taken, and the next
		// request reads again rather than refuse.
		ctx := context.Background()
		var last booking.Reservation
		for i := 0; i < 10; i++ {
			r, err := f.book.ReserveBest(ctx, "s1", f.admit(t, "s1", 1)[0].Pass, "", 1)
			if err != nil {
				t.Fatalf("seat %d of the last ten: %v", i, err)
			}
			last = r
		}
		mu.Lock()
		frozen = frozen.Add(time.Hour)
		mu.Unlock()
		if _, err := f.book.ReserveBest(ctx, "s1", users[n].Pass, "", 1); !errors.Is(err, booking.ErrNotEnoughSeats) {
			t.Fatalf("ReserveBest(1) with every seat held = %v, want NOT_ENOUGH_SEATS", err)
		}
		if _, err := f.book.Cancel(ctx, last.Code, booking.ByAdmin); err != nil {
			t.Fatal(err)
		}
		r, err := f.book.ReserveBest(ctx, "s1", users[n+1].Pass, "", 1)
		if err != nil || !slices.Equal(r.Seats, last.Seats) {
			t.Fatalf("ReserveBest(1) after a cancel = %+v, %v; want the seat back on sale, %v", r, err, last.Seats)
		}
	})
}

// With Redis restarted empty mid-sale, holds still lapse and their seats still return: the sweeper reads SQL,
// and the seat map rebuilds the sold and held sets from it.
func TestHoldsLapseAfterRedisForgotThem(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		clk := clocked(f)
		users := f.admit(t, "s1", 2)
		ctx := context.Background()
		held, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		sold, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.book.Confirm(ctx, sold.Code); err != nil {
			t.Fatal(err)
		}
		env.FlushPrefix(t)
		if a1, a2 := seatState(t, f, "s1", "A1"), seatState(t, f, "s1", "A2"); a1 != "held" || a2 != "sold" {
			t.Errorf("map after Redis forgot = A1 %s, A2 %s; want held, sold (from SQL)", a1, a2)
		}
		clk.advance(lapse)
		if n, err := f.book.Sweep(ctx, clk.now()); err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want the hold expired", n, err)
		}
		if got, _ := f.store.Order(ctx, held.Code); got.Status != booking.StatusExpired {
			t.Errorf("hold after the sweep = %s, want expired", got.Status)
		}
		if a1 := seatState(t, f, "s1", "A1"); a1 != "available" {
			t.Errorf("A1 after the sweep = %s, want available", a1)
		}
	})
}

// A confirm that finds the hold lapsed is HOLD_EXPIRED even when what follows the expiry fails (Redis
// refusing the seat sets' script): never an answer that says the order moved.
func TestALateConfirmIsRefusedWhenTheExpirysFollowUpFails(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		clk := clocked(f)
		u := f.admit(t, "s1", 1)[0]
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		cut := redis.NewClient(env.Redis.(*redis.Client).Options())
		t.Cleanup(func() { cut.Close() })
		cut.AddHook(testenv.Refuse{Names: []string{"evalsha", "eval"}, Err: errors.New("connection reset")})
		late := booking.New(f.store, queue.New(cut, f.prefix), f.q, f.passes, holding(100*time.Millisecond))
		clk.advance(lapse) // late shares f's store, hence its clock
		if got, err := late.Confirm(ctx, o.Code); !errors.Is(err, booking.ErrHoldExpired) {
			t.Fatalf("late Confirm with the follow-up failing = %+v, %v; want ErrHoldExpired", got, err)
		}
		if got, _ := f.store.Order(ctx, o.Code); got.Status != booking.StatusExpired {
			t.Errorf("order after = %s, want expired", got.Status)
		}
	})
}

// A release whose follow-up in Redis failed leaves the seat marked taken there; the reconciler gives it
// back to the sale from SQL.
func TestReconcileGivesBackASeatRedisKeptTaken(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		users := f.admit(t, "s1", 2)
		ctx := context.Background()
		if _, err := f.book.Seats(ctx, "s1"); err != nil { // the sets loaded, as during a sale
			t.Fatal(err)
		}
		o, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.book.Cancel(ctx, o.Code, booking.ByBuyer); err != nil {
			t.Fatal(err)
		}
		// As if seats.lua had failed after the commit: A1 still marked taken and held.
		env.Redis.SAdd(ctx, queue.Key(f.prefix, "s1", "sold"), "A1")
		env.Redis.SAdd(ctx, queue.Key(f.prefix, "s1", "held"), "A1")
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1"}); !errors.Is(err, booking.ErrSeatTaken) {
			t.Fatalf("Reserve of a seat Redis kept taken = %v, want it refused (the stranding reconcile mends)", err)
		}
		n, err := f.book.Reconcile(ctx, time.Now())
		if err != nil || n != 2 {
			t.Fatalf("Reconcile = %d, %v; want A1 out of the sold and held sets", n, err)
		}
		if got := seatState(t, f, "s1", "A1"); got != "available" {
			t.Errorf("A1 after the reconcile = %s, want available", got)
		}
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1"}); err != nil {
			t.Errorf("Reserve A1 after the reconcile = %v", err)
		}
		if n, err := f.book.Reconcile(ctx, time.Now()); err != nil || n != 0 {
			t.Errorf("Reconcile again = %d, %v; want nothing to correct", n, err)
		}
	})
}

// After Redis lost the seat sets (a restart), nothing loads them until a seat map is read, yet the unlocks
// add to the sold set what they learnt, and best available and the lock script read it as it is. A seat
// such a set keeps taken after SQL gave it back is corrected by the reconciler all the same, and the set is
// marked loaded.
func TestReconcileMendsASoldSetRedisNeverLoaded(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		users := f.admit(t, "s1", 2)
		ctx := context.Background()
		o, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.book.Cancel(ctx, o.Code, booking.ByBuyer); err != nil {
			t.Fatal(err)
		}
		// A stale hint: an unlock that learnt A1 was taken, run after the cancel gave it back.
		sold := queue.Key(f.prefix, "s1", "sold")
		env.Redis.SAdd(ctx, sold, "A1")
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1"}); !errors.Is(err, booking.ErrSeatTaken) {
			t.Fatalf("Reserve of a seat Redis kept taken = %v, want it refused (the stranding reconcile mends)", err)
		}
		n, err := f.book.Reconcile(ctx, time.Now())
		if err != nil || n != 1 {
			t.Fatalf("Reconcile = %d, %v; want A1 out of the sold set", n, err)
		}
		if got, _ := env.Redis.SMembers(ctx, sold).Result(); !slices.Equal(got, []string{"-"}) {
			t.Errorf("sold set after the reconcile = %v, want only the loaded mark", got)
		}
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A1"}); err != nil {
			t.Errorf("Reserve A1 after the reconcile = %v", err)
		}
	})
}

// A screening's sold_out and reopened webhooks are written in the transaction of the move that caused them,
// once each, even when the last two moves run at once on two instances' stores.
func TestTheLastConfirmationsWriteOneSoldOutAndTheFirstReleasesOneReopened(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		for round := range 5 {
			id := fmt.Sprintf("edge%d", round)
			env.Demo(t, id, 1, 4)
			f := newFixture(t, env, env.Prefix+id+":", holding(time.Minute))
			g := newFixture(t, env, env.Prefix+id+":", holding(time.Minute)) // another instance
			users := f.admit(t, id, 2)
			ctx := context.Background()
			var codes []string
			for i, seats := range [][]string{{"A1", "A2"}, {"A3", "A4"}} {
				o, err := f.book.Reserve(ctx, id, users[i].Pass, seats)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, o.Code)
			}
			both := func(do func(b *booking.Booking, code string) error) {
				var wg sync.WaitGroup
				for i, b := range []*booking.Booking{f.book, g.book} {
					wg.Go(func() {
						if err := do(b, codes[i]); err != nil && !errors.As(err, new(*booking.AfterCommitError)) {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			}
			both(func(b *booking.Booking, code string) error { _, err := b.Confirm(ctx, code); return err })
			if n := outboxFor(t, f, "screening.sold_out", id); n != 1 {
				t.Fatalf("round %d: screening.sold_out written %d times by the two last confirmations, want 1", round, n)
			}
			both(func(b *booking.Booking, code string) error {
				_, err := b.Cancel(ctx, code, booking.ByAdmin)
				return err
			})
			if n := outboxFor(t, f, "screening.reopened", id); n != 1 {
				t.Fatalf("round %d: screening.reopened written %d times by two refunds at once, want 1", round, n)
			}
		}
	})
}
