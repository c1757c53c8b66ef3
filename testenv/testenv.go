// Package testenv gives integration tests their backends: always the embedded pair (in-process Redis,
// SQLite in a temp dir), and the real pair (Redis at 127.0.0.1:6379, PostgreSQL database `test`) when they
// answer. Under CI (the CI variable set) a real service that does not answer fails the test instead of
// skipping it. Every Env has its own Redis key prefix and its own PostgreSQL schema, dropped afterwards, so
// tests share the machine's services with each other and with other runs. Beside them: fault proxies
// (proxy.go), Redis hooks (hooks.go), a Redis or Redis Cluster of the test's own (redisserver.go,
// cluster.go), a Mailpit (mailpit.go), sockets and their messages (socket.go, message.go), admissions
// (admit.go), and a bounded wait for a condition only polling can see (wait.go).
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/embedded"
)

// Defaults for the real services; WAITROOM_TEST_REDIS_ADDR and WAITROOM_TEST_DATABASE_URL override them.
const (
	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// Kind names a backend pair.
type Kind string

// The backend pairs.
const (
	Embedded Kind = "embedded"
	Real     Kind = "real"
)

// Env is one test's private slice of a backend pair.
type Env struct {
	Kind Kind
	// Redis is a client for the Redis; RedisAddr is its address ("" for embedded: app.Main starts its own).
	Redis     redis.UniversalClient
	RedisAddr string
	// Prefix is the test's own key prefix.
	Prefix string
	// DB is migrated; DatabaseURL reaches the same schema (a sqlite: URL for embedded).
	DB          *sqlx.DB
	DatabaseURL string
}

// Kinds returns the backend kinds to test against: embedded always, real when reachable (or under CI).
func Kinds(t testing.TB) []Kind {
	t.Helper()
	if realReachable(t) {
		return []Kind{Embedded, Real}
	}
	return []Kind{Embedded}
}

// Each runs fn as a subtest per backend kind, each with a fresh Env.
func Each(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Helper()
	for _, k := range Kinds(t) {
		t.Run(string(k), func(t *testing.T) {
			fn(t, New(t, k))
		})
	}
}

var (
	probeOnce sync.Once
	problems  []string
)

// realReachable probes the real services once per test binary. Under CI every caller fails when they are
// down; elsewhere each caller learns to skip them.
func realReachable(t testing.TB) bool {
	t.Helper()
	probeOnce.Do(probe)
	if len(problems) == 0 {
		return true
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and a real service does not answer: %v", problems)
	}
	t.Logf("real Redis/PostgreSQL not reachable, testing the embedded backends only: %v", problems)
	return false
}

func probe() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr()})
	if err := rdb.Ping(ctx).Err(); err != nil {
		problems = append(problems, fmt.Sprintf("redis %s: %v", redisAddr(), err))
	}
	rdb.Close()
	if db, err := sqlx.Open("postgres", databaseURL()); err == nil {
		if err := db.PingContext(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("postgres %s: %v", databaseURL(), err))
		}
		db.Close()
	} else {
		problems = append(problems, err.Error())
	}
}

func redisAddr() string {
	if a := os.Getenv("WAITROOM_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	return DefaultRedisAddr
}

func databaseURL() string {
	if u := os.Getenv("WAITROOM_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultDatabaseURL
}

// Unique returns a short random name for a prefix, schema or id.
func Unique(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// New returns a fresh Env of kind k, torn down when t ends.
func New(t testing.TB, k Kind) *Env {
	t.Helper()
	ctx := context.Background()
	env := &Env{Kind: k, Prefix: Unique("t") + ":"}
	switch k {
	case Embedded:
		m, err := embedded.StartRedis()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		env.Redis = redis.NewClient(&redis.Options{Addr: m.Addr(), Password: m.Password()})
		env.DatabaseURL = "sqlite:" + filepath.Join(t.TempDir(), "waitroom.db")
	case Real:
		if !realReachable(t) {
			t.Skip("real Redis/PostgreSQL not reachable")
		}
		env.RedisAddr = redisAddr()
		env.Redis = redis.NewClient(&redis.Options{Addr: env.RedisAddr, PoolSize: 64})
		t.Cleanup(func() { dropKeys(env.Redis, env.Prefix) })
		env.DatabaseURL = newSchema(t)
	}
	t.Cleanup(func() { env.Redis.Close() })
	env.DB = openDB(t, ctx, env.DatabaseURL)
	return env
}

// openDB opens and migrates the database at url, closed when t ends.
func openDB(t testing.TB, ctx context.Context, url string) *sqlx.DB {
	t.Helper()
	db, err := booking.Open(ctx, url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := booking.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// newSchema creates a schema of its own in the test database and returns a URL whose connections use it.
func newSchema(t testing.TB) string {
	t.Helper()
	schema := Unique("t_")
	admin, err := sqlx.Open("postgres", databaseURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	})
	u, err := url.Parse(databaseURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func dropKeys(rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			rdb.Del(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		rdb.Del(ctx, batch...)
	}
}

// Demo creates screening id with rows × perRow seats, on sale since a minute ago.
func (e *Env) Demo(t testing.TB, id string, rows, perRow int) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	_, err := booking.NewStore(e.DB).EnsureScreening(context.Background(), booking.Screening{
		ID: id, Name: "Test " + id, StartsAt: now.Add(time.Hour), SaleOpensAt: now.Add(-time.Minute),
	}, booking.Grid(rows, perRow))
	if err != nil {
		t.Fatal(err)
	}
}

// SyncBuffer is an io.Writer a server writes (logs, app.Main's stdout) while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FlushPrefix deletes every Redis key of the test's prefix, as a Redis restarted without persistence would
// have lost them (the other tests' keys on a shared Redis stay).
func (e *Env) FlushPrefix(t testing.TB) {
	t.Helper()
	dropKeys(e.Redis, e.Prefix)
}
