// Keeping the database connection pool warm, so the first transactions of a burst do not wait for new
// connections.

package booking

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// warmEvery is how often KeepWarm counts the pool's connections; warmTimeout bounds one pass, which would
// otherwise hold the connections it took while it waited for the last (a pool full of requests).
const (
	warmEvery   = 10 * time.Second
	warmTimeout = 5 * time.Second
)

// Warm opens connections until the pool holds at least n (idle or in use; n is capped at the pool's
// maximum), and leaves the new ones idle in it.
//
// database/sql opens a connection only when a statement needs one and none is idle, so without this the
// first transactions of a sale each wait for PostgreSQL to start a backend process, tens of milliseconds
// apiece on a machine the burst keeps busy (docs/benchmarks.md). HikariCP, the seeds' pool, keeps
// minimumIdle connections for the same reason; pgxpool calls it MinConns.
//
// Warm sends no statement: an idle connection that died (a database restart) is found and replaced by
// database/sql when a request next uses it, and the next pass reopens what that closed. Pinging every idle
// connection would cost a transaction each per pass, which the bench's transaction counts would show.
func (s *Store) Warm(ctx context.Context, n int) error {
	if size := s.db.Stats().MaxOpenConnections; size > 0 {
		n = min(n, size)
	}
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	// Each connection taken is an idle one or a new one; holding them all until the pool has n keeps them
	// distinct. (Requests come and go meanwhile, so the count is read each time.)
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close() // back to the pool, idle (its maximum idle is its maximum open)
		}
	}()
	for len(conns) < n && s.db.Stats().OpenConnections < n {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("booking: warm the connection pool: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

// KeepWarm warms the pool to n connections now and every warmEvery until ctx ends, so connections lost to
// a database restart are reopened before the next burst instead of during it. A failed pass is logged and
// retried at the next; the requests meanwhile open connections on demand, as without it.
func (s *Store) KeepWarm(ctx context.Context, n int, log *slog.Logger) error {
	if n <= 0 {
		return nil
	}
	t := time.NewTicker(warmEvery)
	defer t.Stop()
	for {
		if err := s.Warm(ctx, n); err != nil && ctx.Err() == nil {
			log.Warn("database pool", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
