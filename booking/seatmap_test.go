// Tests of the seat map served during a sale without SQL.

package booking_test

import (
	"context"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// seatMap reads b's seat map and returns its seat ids in map order and the ids shown sold.
func seatMap(t *testing.T, b *booking.Booking, screening string) (ids, sold []string) {
	t.Helper()
	seats, err := b.Seats(context.Background(), screening)
	if err != nil {
		t.Fatalf("Seats(%s) = %v, want nil", screening, err)
	}
	for _, s := range seats {
		ids = append(ids, s.ID)
		switch s.Status {
		case "sold":
			sold = append(sold, s.ID)
		case "available":
		default:
			t.Errorf("Seats(%s) %s status %q, want sold or available", screening, s.ID, s.Status)
		}
	}
	return ids, sold
}

// gridIDs is the ids of booking.Grid(rows, perRow), in map order.
func gridIDs(rows, perRow int) []string {
	var ids []string
	for _, s := range booking.Grid(rows, perRow) {
		ids = append(ids, s.ID)
	}
	return ids
}

// The seat map comes from the catalog in memory and the sold set in Redis: reservations show in it at once,
// a sold set Redis lost is rebuilt from SQL, and its marker never shows as a seat.
func TestSeatMapServedWithoutSQL(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		all := gridIDs(2, 5)
		users := f.admit(t, "s1", 2)

		if ids, sold := seatMap(t, f.book, "s1"); !slices.Equal(ids, all) || len(sold) != 0 {
			t.Fatalf("seat map before any sale = %v with %v sold, want %v, none sold", ids, sold, all)
		}
		if _, err := f.book.Reserve(ctx, "s1", users[0].Pass, []string{"B2", "A1"}); err != nil {
			t.Fatal(err)
		}
		if ids, sold := seatMap(t, f.book, "s1"); !slices.Equal(ids, all) || !slices.Equal(sold, []string{"A1", "B2"}) {
			t.Errorf("seat map after A1+B2 sold = %v with %v sold, want %v with [A1 B2] sold", ids, sold, all)
		}

		// Redis lost the sold set (a restart, an eviction): the next read rebuilds it from SQL.
		if err := env.Redis.Del(ctx, queue.Key(env.Prefix, "s1", "sold")).Err(); err != nil {
			t.Fatal(err)
		}
		if ids, sold := seatMap(t, f.book, "s1"); !slices.Equal(ids, all) || !slices.Equal(sold, []string{"A1", "B2"}) {
			t.Errorf("seat map after Redis lost the sold set = %v with %v sold, want %v with [A1 B2] sold", ids, sold, all)
		}
		for _, seat := range []string{"A1", "B2"} {
			if !f.soldInRedis(t, "s1", seat) {
				t.Errorf("%s not in the sold set after the seat map rebuilt it", seat)
			}
		}
		// Rebuilt once, it goes on learning from reservations.
		if _, err := f.book.Reserve(ctx, "s1", users[1].Pass, []string{"A5"}); err != nil {
			t.Fatal(err)
		}
		if ids, sold := seatMap(t, f.book, "s1"); !slices.Equal(ids, all) || !slices.Equal(sold, []string{"A1", "A5", "B2"}) {
			t.Errorf("seat map after A5 sold = %v with %v sold, want %v with [A1 A5 B2] sold", ids, sold, all)
		}
	})
}

// Once a screening's map has been read, reading it again asks nothing of SQL: a Booking whose database is
// closed after its first read still answers, and still sees what is sold through Redis. What it cannot
// answer without SQL, a sold set Redis lost, is an error, never a map of free seats.
func TestSeatMapAsksNothingOfSQLOnceWarm(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 2, 5)
		f := newFixture(t, env, env.Prefix, defaults)
		all := gridIDs(2, 5)
		if _, err := f.book.Reserve(ctx, "s1", f.admit(t, "s1", 1)[0].Pass, []string{"A3"}); err != nil {
			t.Fatal(err)
		}

		db, err := booking.Open(ctx, env.DatabaseURL, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		reader := booking.New(booking.NewStore(db), f.q, f.q, f.passes, defaults)
		if ids, sold := seatMap(t, reader, "s1"); !slices.Equal(ids, all) || !slices.Equal(sold, []string{"A3"}) {
			t.Fatalf("first seat map = %v with %v sold, want %v with [A3] sold", ids, sold, all)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		for range 3 {
			if ids, sold := seatMap(t, reader, "s1"); !slices.Equal(ids, all) || !slices.Equal(sold, []string{"A3"}) {
				t.Errorf("seat map with its database closed = %v with %v sold, want %v with [A3] sold", ids, sold, all)
			}
		}
		// Another instance (over the same Redis) sells B4: the warm map shows it without SQL.
		if _, err := f.book.Reserve(ctx, "s1", f.admit(t, "s1", 1)[0].Pass, []string{"B4"}); err != nil {
			t.Fatal(err)
		}
		if ids, sold := seatMap(t, reader, "s1"); !slices.Equal(ids, all) || !slices.Equal(sold, []string{"A3", "B4"}) {
			t.Errorf("seat map with its database closed, after B4 sold = %v with %v sold, want %v with [A3 B4] sold", ids, sold, all)
		}

		if err := env.Redis.Del(ctx, queue.Key(env.Prefix, "s1", "sold")).Err(); err != nil {
			t.Fatal(err)
		}
		if seats, err := reader.Seats(ctx, "s1"); err == nil {
			t.Errorf("Seats with the sold set lost and no database = %d seats, nil; want an error", len(seats))
		}
	})
}
