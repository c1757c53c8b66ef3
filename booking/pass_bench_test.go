// The reservation benchmark with Ed25519 passes, beside BenchmarkReserve's HS256 ones.

package booking_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/testenv"
)

// BenchmarkReserveEdDSA is BenchmarkReserve with passes signed and checked with an Ed25519 key (pass.keys):
// the difference is the cost of the EdDSA check on a reservation (docs/benchmarks.md).
func BenchmarkReserveEdDSA(b *testing.B) {
	key, err := pass.ParseKey("k1:" + base64.StdEncoding.EncodeToString([]byte("bench-seed-0123456789abcdef01234")))
	if err != nil {
		b.Fatal(err)
	}
	passes, err := pass.NewIssuer([]pass.Key{key})
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range testenv.Kinds(b) {
		b.Run(string(k), func(b *testing.B) {
			const perRow = 50
			rows := (b.N + perRow - 1) / perRow
			env := testenv.New(b, k)
			id := testenv.Unique("s")
			env.Demo(b, id, rows, perRow)
			f := newFixture(b, env, env.Prefix, defaults)
			f.passes = passes
			f.book = booking.New(f.store, f.q, f.q, passes, defaults)
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
