// A thousand overlapping multi-seat requests at once: no seat sold twice, no request half-booked.

package booking_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// A thousand buyers at once, each with a pass of their own, each asking for one to four seats of a
// twenty-seat screening chosen at random: no seat is sold twice, every reservation holds exactly the seats
// its request asked for (never part of them), every winner's seats show sold, and when it is over no seat
// lock is left in Redis.
func TestThousandOverlappingMultiSeatRequests(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		const n, rows, perRow = 1000, 2, 10
		seed := uint64(time.Now().UnixNano())
		t.Logf("seat sets drawn with seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, seed))
		env.Demo(t, "s1", rows, perRow)
		f := newFixture(t, env, env.Prefix, defaults)
		users := f.admit(t, "s1", n)
		requests := make([][]string, n)
		for i := range requests {
			for _, k := range rng.Perm(rows * perRow)[:1+rng.IntN(4)] {
				requests[i] = append(requests[i], fmt.Sprintf("%c%d", 'A'+k/perRow, k%perRow+1))
			}
		}

		replies := make([]reply, n)
		together(t, n, 2*time.Minute, func(i int) {
			r, err := f.book.Reserve(ctx, "s1", users[i].Pass, requests[i])
			replies[i] = reply{r, err}
		})

		var o outcomes
		want := map[int64][]string{} // reservation id -> the seats its request asked for
		var sold []string
		for i, rep := range replies {
			o.add(rep.r, rep.err)
			if rep.err != nil {
				continue
			}
			asked := slices.Sorted(slices.Values(requests[i]))
			if inOrder := booking.SortSeatIDs(slices.Clone(asked)); !slices.Equal(rep.r.Seats, inOrder) {
				t.Errorf("request %d for %v got a reservation of %v, want exactly its seats, in seat order %v", i, requests[i], rep.r.Seats, inOrder)
			}
			want[rep.r.ID] = asked
			sold = append(sold, asked...)
		}
		t.Logf("%d requests: %s", n, &o)
		if len(o.won) == 0 || len(o.won)+o.taken+o.locked+o.soldOut != n {
			t.Errorf("%d requests: %s; want at least 1 won, the rest taken, locked or sold out", n, &o)
		}

		var rowsSold, distinct int
		if err := env.DB.QueryRowxContext(ctx, env.DB.Rebind(`SELECT COUNT(*), COUNT(DISTINCT seat_id) FROM reservation_seats WHERE screening_id = ?`), "s1").Scan(&rowsSold, &distinct); err != nil {
			t.Fatal(err)
		}
		if rowsSold != distinct {
			t.Errorf("reservation_seats holds %d rows for %d distinct seats, want every seat at most once", rowsSold, distinct)
		}
		got := bookedSeats(t, env, "s1")
		if len(got) != len(want) {
			t.Errorf("database holds %d reservations with seats, want the %d winners", len(got), len(want))
		}
		for id, seats := range want {
			if !slices.Equal(got[id], seats) {
				t.Errorf("reservation %d holds %v in SQL, want its request's %v", id, got[id], seats)
			}
		}
		if got := reservationCount(t, env, "s1"); got != len(want) {
			t.Errorf("reservations = %d, want %d (one per winner, none without seats)", got, len(want))
		}

		// The seat map (served from Redis) shows exactly the winners' seats sold.
		slices.Sort(sold)
		seatMap, err := f.book.Seats(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		var shown []string
		for _, s := range seatMap {
			if s.Status == "sold" {
				shown = append(shown, s.ID)
			}
		}
		slices.Sort(shown)
		if !slices.Equal(shown, sold) {
			t.Errorf("seat map shows %v sold, want the winners' %v", shown, sold)
		}
		if len(sold) == rows*perRow {
			if closed, err := f.q.Closed(ctx, "s1"); err != nil || !closed {
				t.Errorf("Closed after every seat sold = %v (%v), want true", closed, err)
			}
		}

		var locks []string
		iter := env.Redis.Scan(ctx, 0, queue.Key(env.Prefix, "s1", "seat:*"), 1000).Iterator()
		for iter.Next(ctx) {
			locks = append(locks, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		if len(locks) != 0 {
			t.Errorf("seat locks left after every request returned: %v, want none", locks)
		}
	})
}
