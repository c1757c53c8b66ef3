// Command booking is the seed-2 replay (make bench-booking): 1,000 admitted users try to reserve 10 seats at
// once, against a real PostgreSQL and Redis, three ways in one run:
//
//   - baseline: the seed's starting point, a transaction that takes SELECT … FOR UPDATE on the seat row,
//     through a pool of 30 connections, served by an HTTP handler inside this process;
//   - ours: POST /api/screenings/{id}/reservations of the real server (built from this module and started
//     as a subprocess), with each user's admission pass;
//   - floor: POST /api/bench/floor of the same server, which answers 409 at once and does nothing else.
//
// With -checkout hold the server sells ours in hold checkout: each winner's order is held (while its buyer
// would pay), not confirmed, and the check wants exactly that.
//
// For each it prints the outcomes, the client-side latency (avg, p95, p99, max), the database transactions
// started (pg_stat_database), and the pool's wait count and time. The bench creates its own database and
// Redis key prefix and removes both at the end. It measures and records; it asserts only correctness (ours:
// exactly one winner per seat, no seat sold twice), never a time. Figures go to docs/benchmarks.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/lib/pq"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-booking:", err)
		os.Exit(1)
	}
}

// The screenings of the run: ours is reserved through the server, the baseline's through the in-process
// pessimistic handler. Both live in the same tables of the same database.
const (
	oursScreening     = "bench"
	baselineScreening = "baseline"
)

// cleanupTimeout bounds the teardown (server stop, database drop, key removal), which runs even after the
// run's own deadline has passed.
const cleanupTimeout = 30 * time.Second

// run parses flags, sets up the database, Redis prefix and server, fires the three bursts, and prints the
// table. It returns an error when the setup fails or when ours sold a seat twice or not exactly once.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (err error) {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	b := &bench{o: o, names: newNames(), logf: func(format string, a ...any) { fmt.Fprintf(stdout, "· "+format+"\n", a...) }}

	// The database.
	if b.pg, err = openPG(ctx, o.adminURL, b.dbName); err != nil {
		return err
	}
	defer cleanUp(ctx, &err, b.pg.close)
	b.logf("database %s created", b.dbName)

	// Redis, for the admissions (and to remove the prefix's keys afterwards).
	b.rdb = redis.NewClient(&redis.Options{Addr: o.redisAddr})
	defer b.rdb.Close()
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", o.redisAddr, err)
	}
	defer cleanUp(ctx, &err, func(ctx context.Context) error { return deletePrefix(ctx, b.rdb, b.prefix) })

	// The server, built from this module.
	if b.srv, err = startServer(ctx, getenv, serverEnv{
		redisAddr: o.redisAddr, prefix: b.prefix, databaseURL: b.pg.benchURL, secret: b.secret, pprof: o.profileDir != "",
		checkout: o.checkout,
	}, b.logf); err != nil {
		return err
	}
	defer cleanUp(ctx, &err, b.srv.stop)
	b.logf("server %s up (schema migrated by it)", b.srv.base)

	rep, err := b.replay(ctx)
	if err != nil {
		return err
	}
	rep.print(stdout)
	if o.jsonPath != "" {
		if err := rep.writeJSON(o.jsonPath); err != nil {
			return err
		}
	}
	if !rep.Verification.OK {
		return fmt.Errorf("ours: %s", rep.Verification.Text)
	}
	return nil
}

// cleanUp is one step of the teardown, deferred by run: it runs on a context of its own, so a run that hit
// its deadline still cleans up, and adds its error to *err.
func cleanUp(ctx context.Context, err *error, step func(context.Context) error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	*err = errors.Join(*err, step(cctx))
}

// names are the run's own database, Redis key prefix and pass secret: random, so that runs never share
// them.
type names struct {
	dbName, prefix, secret string
}

func newNames() names {
	suffix := randomHex(4)
	return names{
		dbName: "waitroom_bench_" + suffix,
		prefix: "waitroom_bench_" + suffix + ":",
		secret: randomHex(24), // 48 characters
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
