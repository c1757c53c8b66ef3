// Tests of opening and migrating the database.

package booking_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

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

// Two processes on one SQLite file (the embedded server and `waitroom reset-demo` beside it): a transaction
// that read before the other committed a write must still be able to write, after waiting, instead of
// failing at once with SQLITE_BUSY (a deferred transaction cannot upgrade its read snapshot in WAL mode,
// and the busy timeout does not apply to that).
func TestSQLiteTransactionsOfTwoProcessesWaitForEachOther(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *sqlx.DB {
		db, err := booking.Open(ctx, "", dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	if _, err := a.ExecContext(ctx, `CREATE TABLE counter (n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ExecContext(ctx, `INSERT INTO counter (n) VALUES (0)`); err != nil {
		t.Fatal(err)
	}

	tx, err := a.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT n FROM counter`); err != nil {
		t.Fatal(err)
	}
	// The other process writes meanwhile.
	other := make(chan error, 1)
	go func() {
		_, err := b.ExecContext(ctx, `UPDATE counter SET n = n + 10`)
		other <- err
	}()
	select {
	case err := <-other:
		// It did not wait for the open transaction: that one's write below must still succeed.
		if err != nil {
			t.Fatalf("the other process's write = %v", err)
		}
	case <-time.After(200 * time.Millisecond): // it waits for the open transaction, as it should
	}
	if _, err := tx.ExecContext(ctx, `UPDATE counter SET n = n + 1`); err != nil {
		t.Fatalf("a write after a read, while another process wrote = %v, want it to wait and succeed", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit = %v", err)
	}
	if err := <-other; err != nil {
		t.Fatalf("the other process's write = %v", err)
	}
	if err := a.GetContext(ctx, &n, `SELECT n FROM counter`); err != nil || n != 11 {
		t.Errorf("counter = %d, %v; want 11 (both writes)", n, err)
	}
}
