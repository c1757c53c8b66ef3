// Tests of opening and migrating the database.

package booking_test

import (
	"context"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

func TestMigrateIsIdempotent(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		env.Demo(t, "s1", 1, 2) // testenv migrated once already; data must survive more runs
		for i := range 2 {
			if err := booking.Migrate(ctx, env.DB); err != nil {
				t.Fatalf("Migrate run %d = %v, want nil", i+2, err)
			}
		}
		sum, err := booking.NewStore(env.DB).Screening(ctx, "s1")
		if err != nil || sum.SeatsTotal != 2 {
			t.Errorf("Screening(s1) after migrating again = %d seats, %v; want 2, nil", sum.SeatsTotal, err)
		}
	})
}

func TestOpenRefusesUnknownURLs(t *testing.T) {
	for _, url := range []string{"mysql://x", "redis://127.0.0.1:6379", "http://example.com"} {
		db, err := booking.Open(context.Background(), url, t.TempDir())
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) = nil error, want an error naming the accepted forms", url)
		}
	}
}
