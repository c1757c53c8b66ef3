// The database: opening PostgreSQL or SQLite with the settings a burst needs, and migrating its schema.

package booking

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations
var migrations embed.FS

func init() {
	// sqlx does not know modernc's driver name; it takes "?" placeholders.
	sqlx.BindDriver("sqlite", sqlx.QUESTION)
}

// storeConns is how many of a PostgreSQL pool's connections the store's requests hold at once (the size of
// its gate, GateSize); outsideStore more are for the webhook outbox's deliverer and lists and the readiness
// check's ping, which do not pass the gate, so a request the gate lets through finds a connection instead of database/sql's queue.
const (
	storeConns   = 30
	outsideStore = 2
)

// GateSize is the size of the store's gate (Store.SetGate) over db, as Open sized its pool: the pool less
// the connections used outside the store; SQLite's one connection is shared.
func GateSize(db *sqlx.DB) int {
	open := db.Stats().MaxOpenConnections
	if open == 0 { // no bound: a pool opened elsewhere
		return storeConns
	}
	return max(open-outsideStore, 1)
}

// Open connects to url: a postgres:// URL (lib/pq), or "sqlite:PATH" / a bare file path (modernc SQLite).
// An empty url opens dataDir/waitroom.db, the embedded default.
func Open(ctx context.Context, url, dataDir string) (*sqlx.DB, error) {
	driver, dsn := "postgres", url
	switch {
	case url == "":
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("booking: data dir: %w", err)
		}
		driver, dsn = "sqlite", filepath.Join(dataDir, "waitroom.db")
	case strings.HasPrefix(url, "sqlite:"):
		driver, dsn = "sqlite", strings.TrimPrefix(url, "sqlite:")
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
	default:
		return nil, fmt.Errorf("booking: database.url %q: want postgres://… or sqlite:PATH", url)
	}
	if driver == "postgres" && !strings.Contains(dsn, "binary_parameters=") {
		// lib/pq sends a statement with parameters as Parse+Describe, waits, then Bind+Execute: two round
		// trips. In binary-parameters mode it sends all of them at once: one round trip, as pgx and JDBC do.
		// A burst's winner waits for each of its round trips while the burst holds the machine
		// (docs/benchmarks.md).
		dsn = withParam(dsn, "binary_parameters=yes")
	}
	if driver == "sqlite" {
		// One writer at a time is SQLite's nature: a single connection serialises transactions in the pool
		// instead of failing them with SQLITE_BUSY; WAL lets the file be read while it is written. Another
		// process on the file (reset-demo beside the embedded server, whose log's writer commits every
		// 100 ms) is waited for: transactions begin IMMEDIATE, taking the write lock first under the busy
		// timeout, since a deferred one that read before the other's commit cannot write after it and fails
		// at once with SQLITE_BUSY_SNAPSHOT.
		dsn = withParam(dsn, "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_time_format=sqlite&_txlock=immediate")
	}
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("booking: open: %w", err)
	}
	if driver == "sqlite" {
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(storeConns + outsideStore)
		db.SetMaxIdleConns(storeConns + outsideStore)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("booking: connect: %w", err)
	}
	return db, nil
}

// withParam appends a query parameter to a database URL or file name.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}

// Migrate brings the schema up to date. On PostgreSQL an advisory lock lets several instances start at once.
func Migrate(ctx context.Context, db *sqlx.DB) error {
	dialect, dir := goose.DialectPostgres, "migrations/postgres"
	var opts []goose.ProviderOption
	if db.DriverName() == "sqlite" {
		dialect, dir = goose.DialectSQLite3, "migrations/sqlite"
	} else {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return fmt.Errorf("booking: migrate: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	fsys, err := fs.Sub(migrations, dir)
	if err != nil {
		return fmt.Errorf("booking: migrate: %w", err)
	}
	p, err := goose.NewProvider(dialect, db.DB, fsys, opts...)
	if err != nil {
		return fmt.Errorf("booking: migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("booking: migrate: %w", err)
	}
	return nil
}
