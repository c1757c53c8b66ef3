// Resetting a sale: refused while it has orders unless forced, then as new in SQL and Redis, with the old
// passes worthless; archiving keeps a screening out of nothing but the public list.

package booking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestResetWithOrdersIsRefusedUnlessForced(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 3)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", 2)
		if _, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}
		waiter := queue.NewToken()
		if _, err := f.q.Register(ctx, "s1", waiter); err != nil {
			t.Fatal(err)
		}

		if _, err := f.book.ResetSale(ctx, "s1", false); !errors.Is(err, booking.ErrSaleHasOrders) {
			t.Fatalf("ResetSale(unforced) with a confirmed order = %v, want ErrSaleHasOrders", err)
		}
		if n := reservationCount(t, env, "s1"); n != 1 {
			t.Errorf("orders after a refused reset = %d, want 1", n)
		}
		if waiting, active, _ := f.q.Counts(ctx, "s1"); waiting != 1 || active != 1 {
			t.Errorf("line after a refused reset = %d waiting, %d active; want 1 and 1 (untouched)", waiting, active)
		}

		res, err := f.book.ResetSale(ctx, "s1", true)
		if err != nil {
			t.Fatalf("ResetSale(forced) = %v", err)
		}
		if res.Orders != 1 || res.Live != 1 {
			t.Errorf("ResetSale(forced) deleted %d orders (%d live), want 1 (1)", res.Orders, res.Live)
		}
		if n := reservationCount(t, env, "s1"); n != 0 {
			t.Errorf("orders after a forced reset = %d, want 0", n)
		}
		if f.soldInRedis(t, "s1", "A1") || f.seatLocked(t, "s1", "A1") {
			t.Errorf("A1 sold or locked in Redis after the reset, want neither")
		}
		if waiting, active, err := f.q.Counts(ctx, "s1"); err != nil || waiting != 0 || active != 0 {
			t.Errorf("line after the reset = %d waiting, %d active (%v); want 0 and 0", waiting, active, err)
		}
		// The pass admitted before the reset is worth nothing now; a new admission buys the seat again.
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A2"}); err == nil {
			t.Errorf("Reserve with a pass of before the reset = nil error, want it refused")
		}
		again := f.admit(t, "s1", 1)
		if _, err := f.book.Reserve(ctx, "s1", again[0].Pass, []string{"A1"}); err != nil {
			t.Errorf("Reserve(A1) after the reset = %v, want it sold again", err)
		}
	})
}

func TestResetReopensASoldOutSale(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		f := newFixture(t, env, env.Prefix, defaults)
		buyer := f.admit(t, "s1", 1)[0]
		if _, err := f.q.Register(ctx, "s1", queue.NewToken()); err != nil { // waits, then is dropped by the sell-out
			t.Fatal(err)
		}
		if _, err := f.book.Reserve(ctx, "s1", buyer.Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}
		if closed, err := f.q.Closed(ctx, "s1"); err != nil || !closed {
			t.Fatalf("Closed after the last seat = %v (%v), want true", closed, err)
		}
		sales, err := f.store.Sales(ctx, time.Now())
		if err != nil || len(sales) != 1 || !sales[0].Ended {
			t.Fatalf("Sales before the reset = %+v (%v), want s1 ended", sales, err)
		}

		if _, err := f.book.ResetSale(ctx, "s1", true); err != nil {
			t.Fatalf("ResetSale = %v", err)
		}

		if closed, err := f.q.Closed(ctx, "s1"); err != nil || closed {
			t.Errorf("Closed after the reset = %v (%v), want false", closed, err)
		}
		sales, err = f.store.Sales(ctx, time.Now())
		if err != nil || len(sales) != 1 || sales[0].Ended {
			t.Errorf("Sales after the reset = %+v (%v), want s1 not ended", sales, err)
		}
		sum, err := f.store.Screening(ctx, "s1")
		if err != nil || sum.SeatsAvailable != 1 || sum.SeatsSold != 0 {
			t.Errorf("Screening after the reset = %d available, %d sold (%v); want 1 and 0", sum.SeatsAvailable, sum.SeatsSold, err)
		}
		// The first to come after the reset is first in line, as every instance computes it from the line.
		e, err := f.q.Register(ctx, "s1", queue.NewToken())
		if err != nil {
			t.Fatal(err)
		}
		line, err := f.q.Line(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if rank, ok := line.Rank(e.Seq); e.ZeroBasedRank != 0 || !ok || rank != 0 {
			t.Errorf("first after the reset: ZRANK %d, Line.Rank = %d, %v; want 0, 0, true", e.ZeroBasedRank, rank, ok)
		}
	})
}

func TestResetOfAnUnknownOrArchivedScreeningIsRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		f := newFixture(t, env, env.Prefix, defaults)
		if _, err := f.book.ResetSale(ctx, "nope", true); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("ResetSale(nope) = %v, want ErrUnknownScreening", err)
		}
		if err := f.store.SetArchived(ctx, "s1", true, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := f.book.ResetSale(ctx, "s1", true); !errors.Is(err, booking.ErrArchived) {
			t.Errorf("ResetSale(archived) = %v, want ErrArchived", err)
		}
	})
}

func TestArchiveClosesTheSaleAndUnarchiveListsIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		store := booking.NewStore(env.DB)
		if err := store.SetArchived(ctx, "s1", true, time.Now()); err != nil {
			t.Fatal(err)
		}
		sum, err := store.Screening(ctx, "s1")
		if err != nil || sum.ArchivedAt == nil || sum.ClosedAt == nil {
			t.Fatalf("Screening after archive = archived %v, closed %v (%v); want both set", sum.ArchivedAt, sum.ClosedAt, err)
		}
		if err := store.SetArchived(ctx, "s1", false, time.Now()); err != nil {
			t.Fatal(err)
		}
		sum, err = store.Screening(ctx, "s1")
		if err != nil || sum.ArchivedAt != nil || sum.ClosedAt == nil {
			t.Errorf("Screening after unarchive = archived %v, closed %v (%v); want not archived, still closed", sum.ArchivedAt, sum.ClosedAt, err)
		}
		if err := store.SetArchived(ctx, "nope", true, time.Now()); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("SetArchived(nope) = %v, want ErrUnknownScreening", err)
		}
	})
}
