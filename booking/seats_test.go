// Tests of seat ids: a request's seat list checked against its catalog, and the grid's row names.

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

func TestParseSeatsRefusesBadLists(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		bad := map[string][]string{
			"nil":               nil,
			"empty":             {},
			"more than max":     {"A1", "A2", "A3", "A4", "A5"},
			"duplicate":         {"A1", "B2", "A1"},
			"unknown row":       {"Z1"},
			"unknown number":    {"A6"},
			"lower case":        {"a1"},
			"empty id":          {""},
			"garbage":           {"A1'; DROP TABLE seats; --"},
			"padded":            {" A1"},
			"long":              {strings.Repeat("A", 5000)},
			"one good one bad":  {"A1", "B9"},
			"leading zero":      {"A01"},
			"valid shape, none": {"AAA9999"},
		}
		for name, seats := range bad {
			t.Run(name, func(t *testing.T) {
				got, err := f.book.ParseSeats(ctx, "s1", seats)
				if !errors.Is(err, booking.ErrBadRequest) {
					t.Errorf("ParseSeats(%.40q) = %v, %v; want ErrBadRequest", seats, got, err)
				}
				if err != nil && len(err.Error()) > 200 {
					t.Errorf("ParseSeats error is %d bytes long, want the bad id truncated", len(err.Error()))
				}
			})
		}
	})
}

func TestParseSeatsReturnsSeatsSorted(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		in := []string{"B1", "A2", "B5", "A1"}
		got, err := f.book.ParseSeats(ctx, "s1", in)
		if want := []string{"A1", "A2", "B1", "B5"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSeats(%v) = %v, %v; want %v, nil", in, got, err, want)
		}
		if _, err := f.book.ParseSeats(ctx, "nope", []string{"A1"}); !errors.Is(err, booking.ErrUnknownScreening) {
			t.Errorf("ParseSeats(unknown screening) = %v, want ErrUnknownScreening", err)
		}
	})
}

func TestBadSeatListDoesNotSpendThePass(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		u := f.admit(t, "s1", 1)[0]
		if _, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1", "A1"}); !errors.Is(err, booking.ErrBadRequest) {
			t.Fatalf("Reserve(A1, A1) = %v, want ErrBadRequest", err)
		}
		if f.seatLocked(t, "s1", "A1") {
			t.Errorf("A1 locked after a bad request, want no lock")
		}
		if _, err := f.book.Reserve(ctx, "s1", u.Pass, []string{"A1"}); err != nil {
			t.Errorf("Reserve(A1) after a bad request = %v, want nil", err)
		}
	})
}

func TestGridNamesRowsLikeASpreadsheet(t *testing.T) {
	seats := booking.Grid(28, 2)
	if len(seats) != 56 {
		t.Fatalf("len(Grid(28, 2)) = %d, want 56", len(seats))
	}
	for _, c := range []struct {
		i    int
		want booking.Seat
	}{
		{0, booking.Seat{ID: "A1", Row: "A", Number: 1}},
		{1, booking.Seat{ID: "A2", Row: "A", Number: 2}},
		{51, booking.Seat{ID: "Z2", Row: "Z", Number: 2}},
		{52, booking.Seat{ID: "AA1", Row: "AA", Number: 1}},
		{55, booking.Seat{ID: "AB2", Row: "AB", Number: 2}},
	} {
		if seats[c.i] != c.want {
			t.Errorf("Grid(28, 2)[%d] = %+v, want %+v", c.i, seats[c.i], c.want)
		}
	}
}

func TestSeatIDsSortByRowThenNumber(t *testing.T) {
	ids := []string{"D10", "AA1", "D9", "B2", "Z1", "D1", "nonsense", "A10", "A9", "AB3", "AA10", "AA2"}
	booking.SortSeatIDs(ids)
	want := []string{"A9", "A10", "B2", "D1", "D9", "D10", "Z1", "AA1", "AA2", "AA10", "AB3", "nonsense"}
	if !slices.Equal(ids, want) {
		t.Errorf("SortSeatIDs = %v, want %v", ids, want)
	}
	for _, bad := range []string{"A+5", "A05", "A10000", "ABCD1", "a1", "A"} {
		if c := booking.CompareSeatIDs(bad, "ZZZ9999"); c != 1 {
			t.Errorf("CompareSeatIDs(%q, \"ZZZ9999\") = %d, want 1 (not a seat id, after every one)", bad, c)
		}
	}
}

// An order's seats come back in seat order, D9 before D10, from the reservation itself, the order read by
// its code and the screening's list of orders, whatever order they were asked for in.
func TestAnOrdersSeatsComeInSeatOrder(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 12)
		f := newFixture(t, env, env.Prefix, holding(time.Minute))
		users := f.admit(t, "s1", 1)
		want := []string{"A2", "A9", "A10", "A11"}
		r, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"A10", "A2", "A11", "A9"})
		if err != nil {
			t.Fatalf("Reserve = %v", err)
		}
		if !slices.Equal(r.Seats, want) {
			t.Errorf("the reservation's seats = %v, want %v", r.Seats, want)
		}
		o, err := f.store.Order(ctx, r.Code)
		if err != nil || !slices.Equal(o.Seats, want) {
			t.Errorf("Order(%s).Seats = %v, %v; want %v", r.Code, o.Seats, err, want)
		}
		list, err := f.store.Orders(ctx, "s1", nil)
		if err != nil || len(list) != 1 || !slices.Equal(list[0].Seats, want) {
			t.Errorf("Orders(s1) = %+v, %v; want one order with seats %v", list, err, want)
		}
	})
}
