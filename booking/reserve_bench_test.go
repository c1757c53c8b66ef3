// The benchmark of one reservation, the path a burst's winner runs.

package booking_test

import (
	"context"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

// BenchmarkReserve is one reservation of one free seat at a time through Booking.Reserve: the pass check,
// the lock script, the SQL write and its commit, the count after it, the unlock and the slot's release. It
// is the path a burst's winner runs, without the burst (docs/benchmarks.md):
//
//	go test -run '^$' -bench Reserve -benchtime 2000x ./booking/
func BenchmarkReserve(b *testing.B) {
	for _, k := range testenv.Kinds(b) {
		b.Run(string(k), func(b *testing.B) {
			const perRow = 50
			rows := (b.N + perRow - 1) / perRow
			env := testenv.New(b, k)
			id := testenv.Unique("s")
			env.Demo(b, id, rows, perRow)
			f := newFixture(b, env, env.Prefix, defaults)
			users := f.admit(b, id, b.N)
			seats := booking.Grid(rows, perRow)
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if _, err := f.book.Reserve(ctx, id, users[i].Pass, []string{seats[i].ID}); err != nil {
					b.Fatalf("Reserve(%s) = %v", seats[i].ID, err)
				}
			}
		})
	}
}
