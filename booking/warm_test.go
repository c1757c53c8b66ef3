// Tests of keeping the connection pool warm.

package booking_test

import (
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

// Warm leaves the pool holding n open connections, idle ones for the burst to take: it counts those in use,
// gives back what it took, and caps n at the pool's size (SQLite's pool is one connection).
func TestWarmOpensConnectionsAheadOfTheBurst(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx := context.Background()
		store := booking.NewStore(env.DB)
		size := env.DB.Stats().MaxOpenConnections
		if err := store.Warm(ctx, 5); err != nil {
			t.Fatal(err)
		}
		st := env.DB.Stats()
		if want := min(5, size); st.OpenConnections != want || st.Idle != want {
			t.Fatalf("after Warm(5): %d open, %d idle; want %d and %d", st.OpenConnections, st.Idle, want, want)
		}
		if size < 8 {
			return
		}
		// Two in use count towards n: Warm(8) opens three more and keeps the two where they are.
		var held []*sql.Conn
		for range 2 {
			c, err := env.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		before := env.DB.Stats().OpenConnections
		if err := store.Warm(ctx, 8); err != nil {
			t.Fatal(err)
		}
		st = env.DB.Stats()
		if st.OpenConnections != 8 || st.InUse != 2 || st.Idle != 6 {
			t.Errorf("after Warm(8) with 2 in use (of %d open): %d open, %d in use, %d idle; want 8, 2, 6", before, st.OpenConnections, st.InUse, st.Idle)
		}
		for _, c := range held {
			c.Close()
		}
		// A pool that has them opens none.
		if err := store.Warm(ctx, 8); err != nil {
			t.Fatal(err)
		}
		if got := env.DB.Stats().OpenConnections; got != 8 {
			t.Errorf("a second Warm(8): %d open, want 8", got)
		}
	})
}

// KeepWarm warms at once, and returns when its context ends (goleak checks nothing is left running).
func TestKeepWarmWarmsAtOnceAndStops(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- booking.NewStore(env.DB).KeepWarm(ctx, 3, slog.New(slog.DiscardHandler)) }()
		want := min(3, env.DB.Stats().MaxOpenConnections)
		testenv.WaitFor(t, 5*time.Second, "KeepWarm(3) to open its connections", func() bool { return env.DB.Stats().OpenConnections >= want })
		if got := env.DB.Stats().OpenConnections; got != want {
			t.Errorf("KeepWarm(3): %d open within 5s, want %d", got, want)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("KeepWarm after cancel = %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("KeepWarm did not return within 5s of its context ending")
		}
	})
}

// Warm sends PostgreSQL no statement: the connections it opens have run nothing (pg_stat_activity's query
// is empty until a backend's first statement), and a second pass over a warm pool opens none and runs
// nothing either. A warm pool costs the database no transaction between bursts.
func TestWarmSendsNoStatement(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	ctx := context.Background()
	app := testenv.Unique("warm")
	u, err := url.Parse(env.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db, err := sqlx.Open("postgres", u.String()) // not booking.Open, whose ping would be a statement
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(30) // as booking.Open sets it: database/sql keeps only two idle otherwise
	store := booking.NewStore(db)
	for pass := range 2 {
		if err := store.Warm(ctx, 5); err != nil {
			t.Fatal(err)
		}
		var backends, ran int
		err := env.DB.QueryRowxContext(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE query <> '')
			FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&backends, &ran)
		if err != nil {
			t.Fatal(err)
		}
		if backends != 5 || ran != 0 {
			t.Errorf("after Warm(5) pass %d: %d backends, %d of them ran a statement; want 5 and 0", pass+1, backends, ran)
		}
	}
}
