// Benchmarks of the box office's paths, one at a time: a reservation in hold mode (its outbox row, the kept
// slot, the held set) and an order's confirmation (its transaction and what follows it).

package booking_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

// BenchmarkReserveHeld is BenchmarkReserve in hold mode with the webhooks' outbox on.
func BenchmarkReserveHeld(b *testing.B) {
	for _, k := range testenv.Kinds(b) {
		b.Run(string(k), func(b *testing.B) {
			f, id, users, seats := benchSale(b, k)
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

// BenchmarkConfirm confirms held orders one at a time.
func BenchmarkConfirm(b *testing.B) {
	for _, k := range testenv.Kinds(b) {
		b.Run(string(k), func(b *testing.B) {
			f, id, users, seats := benchSale(b, k)
			ctx := context.Background()
			codes := make([]string, b.N)
			for i := range b.N {
				o, err := f.book.Reserve(ctx, id, users[i].Pass, []string{seats[i].ID})
				if err != nil {
					b.Fatalf("Reserve(%s) = %v", seats[i].ID, err)
				}
				codes[i] = o.Code
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := f.book.Confirm(ctx, codes[i]); err != nil {
					b.Fatalf("Confirm = %v", err)
				}
			}
		})
	}
}

// benchSale is a hold-mode sale of at least b.N seats with b.N admitted users.
func benchSale(b *testing.B, k testenv.Kind) (*fixture, string, []user, []booking.Seat) {
	const perRow = 50
	rows := (b.N + perRow - 1) / perRow
	env := testenv.New(b, k)
	id := testenv.Unique("s")
	env.Demo(b, id, rows, perRow)
	f := newFixture(b, env, env.Prefix, holding(10*time.Minute))
	return f, id, f.admit(b, id, b.N), booking.Grid(rows, perRow)
}
