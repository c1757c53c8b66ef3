// Tests of the store: screenings known, created once, counted, and listed for the scheduler.

package booking_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

func TestExistsKnowsScreenings(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 1)
		f := newFixture(t, env, env.Prefix, defaults)
		if err := f.book.Exists(ctx, "s1"); err != nil {
			t.Errorf("Exists(s1) = %v, want nil", err)
		}
		for _, id := range []string{"nope", "", "bad id", "s1}:x", strings.Repeat("x", 65)} {
			if err := f.book.Exists(ctx, id); !errors.Is(err, booking.ErrUnknownScreening) {
				t.Errorf("Exists(%.20q) = %v, want ErrUnknownScreening", id, err)
			}
		}
	})
}

func TestEnsureScreeningIsIdempotent(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		store := booking.NewStore(env.DB)
		now := time.Now().UTC().Truncate(time.Second)
		sc := booking.Screening{ID: "s1", Name: "First", StartsAt: now.Add(time.Hour), SaleOpensAt: now}
		created, err := store.EnsureScreening(ctx, sc, booking.Grid(2, 3))
		if err != nil || !created {
			t.Fatalf("first EnsureScreening = %v, %v; want true, nil", created, err)
		}
		again := booking.Screening{ID: "s1", Name: "Second", StartsAt: now.Add(2 * time.Hour), SaleOpensAt: now}
		created, err = store.EnsureScreening(ctx, again, booking.Grid(5, 5))
		if err != nil || created {
			t.Errorf("second EnsureScreening = %v, %v; want false, nil", created, err)
		}
		seats, err := store.Seats(ctx, "s1")
		if err != nil || len(seats) != 6 {
			t.Errorf("Seats(s1) after a second EnsureScreening = %d seats, %v; want 6, nil", len(seats), err)
		}
		sum, err := store.Screening(ctx, "s1")
		if err != nil || sum.Name != "First" || !sum.StartsAt.Equal(sc.StartsAt) {
			t.Errorf("Screening(s1) = %q at %v, %v; want %q at %v", sum.Name, sum.StartsAt, err, "First", sc.StartsAt)
		}
	})
}

func TestConcurrentEnsureScreeningCreatesOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		store := booking.NewStore(env.DB)
		now := time.Now().UTC().Truncate(time.Second)
		const n = 8
		results := make([]bool, n)
		errs := make([]error, n)
		together(t, n, 30*time.Second, func(i int) {
			results[i], errs[i] = store.EnsureScreening(ctx, booking.Screening{ID: "s1", Name: "S", StartsAt: now, SaleOpensAt: now}, booking.Grid(3, 3))
		})
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Errorf("EnsureScreening #%d = %v, want nil", i, errs[i])
			}
			if results[i] {
				created++
			}
		}
		if created != 1 {
			t.Errorf("%d concurrent EnsureScreening created %d, want 1", n, created)
		}
		if seats, err := store.Seats(ctx, "s1"); err != nil || len(seats) != 9 {
			t.Errorf("Seats(s1) = %d, %v; want 9, nil", len(seats), err)
		}
	})
}

func TestStoreCountsSeats(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		store := booking.NewStore(env.DB)
		later := booking.Screening{ID: "later", Name: "Later", StartsAt: now.Add(3 * time.Hour), SaleOpensAt: now.Add(time.Hour)}
		if _, err := store.EnsureScreening(ctx, later, booking.Grid(1, 4)); err != nil {
			t.Fatal(err)
		}
		env.Demo(t, "s1", 2, 12) // starts in an hour: listed before "later"
		f := newFixture(t, env, env.Prefix, defaults)
		if _, err := f.book.Reserve(ctx, "s1", f.admit(t, "s1", 1)[0].Pass, []string{"B10", "A2"}); err != nil {
			t.Fatal(err)
		}

		list, err := store.Screenings(ctx)
		if err != nil {
			t.Fatal(err)
		}
		type counts struct {
			id               string
			total, available int
		}
		var got []counts
		for _, s := range list {
			got = append(got, counts{s.ID, s.SeatsTotal, s.SeatsAvailable})
		}
		if want := []counts{{"s1", 24, 22}, {"later", 4, 4}}; !slices.Equal(got, want) {
			t.Errorf("Screenings() = %+v, want %+v", got, want)
		}
		if len(list) == 2 && (!list[1].StartsAt.Equal(later.StartsAt) || !list[1].SaleOpensAt.Equal(later.SaleOpensAt)) {
			t.Errorf("Screenings()[1] times = %v, %v; want %v, %v", list[1].StartsAt, list[1].SaleOpensAt, later.StartsAt, later.SaleOpensAt)
		}

		sum, err := store.Screening(ctx, "s1")
		if err != nil || sum.SeatsTotal != 24 || sum.SeatsAvailable != 22 {
			t.Errorf("Screening(s1) = %d total, %d available, %v; want 24, 22, nil", sum.SeatsTotal, sum.SeatsAvailable, err)
		}
		if _, err := store.Screening(ctx, "nope"); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("Screening(nope) = %v, want ErrUnknownScreening", err)
		}

		saleIDs := func(until time.Time) []string {
			t.Helper()
			sales, err := store.Sales(ctx, until)
			if err != nil {
				t.Fatalf("Sales(%v) = %v", until, err)
			}
			var ids []string
			for _, s := range sales {
				ids = append(ids, s.ID)
			}
			return ids
		}
		if got, want := saleIDs(now), []string{"s1"}; !slices.Equal(got, want) {
			t.Errorf("Sales(now) = %v, want %v", got, want)
		}
		if got, want := saleIDs(now.Add(2*time.Hour)), []string{"later", "s1"}; !slices.Equal(got, want) {
			t.Errorf("Sales(now+2h) = %v, want %v", got, want)
		}

		seats, err := store.Seats(ctx, "s1")
		if err != nil || len(seats) != 24 {
			t.Fatalf("Seats(s1) = %d seats, %v; want 24, nil", len(seats), err)
		}
		// Row, then number as a number: A1 … A12, B1 … B12.
		if seats[0].ID != "A1" || seats[9].ID != "A10" || seats[11].ID != "A12" || seats[12].ID != "B1" {
			t.Errorf("Seats(s1) order starts %v, … %v, want A1 … A10, A11, A12, B1", seats[0].ID, []string{seats[9].ID, seats[10].ID, seats[11].ID, seats[12].ID})
		}
		var sold []string
		for _, s := range seats {
			if s.Status == "sold" {
				sold = append(sold, s.ID)
			} else if s.Status != "available" {
				t.Errorf("Seats(s1) %s status %q, want sold or available", s.ID, s.Status)
			}
		}
		if want := []string{"A2", "B10"}; !slices.Equal(sold, want) {
			t.Errorf("sold seats = %v, want %v", sold, want)
		}
		if seats[1].Row != "A" || seats[1].Number != 2 {
			t.Errorf("Seats(s1)[1] = row %q number %d, want A 2", seats[1].Row, seats[1].Number)
		}
		if empty, err := store.Seats(ctx, "nope"); err != nil || len(empty) != 0 {
			t.Errorf("Seats(nope) = %v, %v; want [], nil", empty, err)
		}
	})
}

// A screening that sold its last seat is listed as ended: its admission loop stops instead of counting
// skips forever, and its line is kept closed.
func TestSoldOutScreeningLeavesTheSales(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "one", 1, 1)
		env.Demo(t, "two", 1, 2)
		store := booking.NewStore(env.DB)
		f := newFixture(t, env, env.Prefix, defaults)
		if _, err := f.book.Reserve(ctx, "one", f.admit(t, "one", 1)[0].Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.book.Reserve(ctx, "two", f.admit(t, "two", 1)[0].Pass, []string{"A1"}); err != nil {
			t.Fatal(err)
		}
		sales, err := store.Sales(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var onSale, ended []string
		for _, s := range sales {
			if s.Ended {
				ended = append(ended, s.ID)
			} else {
				onSale = append(onSale, s.ID)
			}
		}
		if want := []string{"two"}; !slices.Equal(onSale, want) {
			t.Errorf("Sales() on sale = %v, want %v (one is sold out; two has a seat left)", onSale, want)
		}
		if want := []string{"one"}; !slices.Equal(ended, want) {
			t.Errorf("Sales() ended = %v, want %v (sold out, its show still to come: its line is kept closed)", ended, want)
		}
	})
}
