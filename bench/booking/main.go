// Command booking is the seed-2 replay (make bench-booking): 1,000 admitted users try to reserve 10 seats at
// once, against a real PostgreSQL and Redis, three ways in one run:
//
//   - baseline: the seed's starting point, a transaction that takes SELECT … FOR UPDATE on the seat row,
//     through a pool of 30 connections, served by an HTTP handler inside this process;
//   - ours: POST /api/screenings/{id}/reservations of the real server (built from this module and started
//     as a subprocess), with each user's admission pass;
//   - floor: POST /api/bench/floor of the same server, which answers 409 at once and does nothing else.
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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
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

type options struct {
	users, seats   int
	redisAddr      string
	adminURL       string
	jsonPath       string
	timeout        time.Duration
	coldCatalog    bool
	warm           bool
	requestTimeout time.Duration
	profileDir     string
}

// run parses flags, sets up the database, Redis prefix and server, fires the three bursts, and prints the
// table. It returns an error when the setup fails or when ours sold a seat twice or not exactly once.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	var o options
	fs.IntVar(&o.users, "users", 1000, "admitted users, all firing at once")
	fs.IntVar(&o.seats, "seats", 10, "seats of the screening (A1..A<seats>); user i wants seat A(i%seats+1)")
	fs.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis address")
	fs.StringVar(&o.adminURL, "database", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"PostgreSQL admin URL: the bench creates its own database there and drops it at the end")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 60*time.Second, "bound on one request of a burst")
	fs.BoolVar(&o.coldCatalog, "cold-catalog", false,
		"skip the one seat-map read before ours' burst, so the server meets the burst with an empty seat catalog cache "+
			"(real users have opened the waiting room's socket, which fills it, before they hold a pass)")
	fs.BoolVar(&o.warm, "warm", false,
		"give every user a kept-alive connection before the bursts (ours: its seat-map read, as a browser that has just read it; "+
			"floor: /healthz; baseline: a ping of its server), so the bursts pay no TCP connect")
	fs.StringVar(&o.profileDir, "profile", "",
		"write the server's CPU profile of the second from each burst's release to this directory (floor.pprof, ours.pprof; "+
			"go tool pprof reads them)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if o.users < 1 || o.seats < 1 || o.seats > 9999 {
		return fmt.Errorf("want -users ≥ 1 and 1 ≤ -seats ≤ 9999, got %d and %d", o.users, o.seats)
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// Teardown runs on a context of its own, so a run that hit its deadline still cleans up.
	cleanupCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stdout, "· "+format+"\n", a...) }

	suffix := randomHex(4)
	dbName := "waitroom_bench_" + suffix
	prefix := "waitroom_bench_" + suffix + ":"
	secret := randomHex(24) // 48 characters

	// The database.
	pg, err := openPG(ctx, o.adminURL, dbName)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := cleanupCtx()
		defer cancel()
		err = errors.Join(err, pg.close(cctx))
	}()
	logf("database %s created", dbName)

	// Redis, for the admissions (and to remove the prefix's keys afterwards).
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", o.redisAddr, err)
	}
	defer func() {
		cctx, cancel := cleanupCtx()
		defer cancel()
		err = errors.Join(err, deletePrefix(cctx, rdb, prefix))
	}()

	// The server, built from this module.
	srv, err := startServer(ctx, getenv, serverEnv{
		redisAddr: o.redisAddr, prefix: prefix, databaseURL: pg.benchURL, secret: secret, pprof: o.profileDir != "",
	}, logf)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := cleanupCtx()
		defer cancel()
		err = errors.Join(err, srv.stop(cctx))
	}()
	logf("server %s up (schema migrated by it)", srv.base)

	passes, err := setup(ctx, o, pg.benchURL, rdb, prefix, secret)
	if err != nil {
		return err
	}
	logf("screenings %q and %q with %d seats each; %d users admitted to %q, passes signed", oursScreening, baselineScreening, o.seats, o.users, oursScreening)

	rep := report{Users: o.users, Seats: o.seats, Database: dbName}
	if rep.Postgres, err = pg.version(ctx); err != nil {
		return err
	}
	if rep.Redis, err = redisVersion(ctx, rdb); err != nil {
		return err
	}

	// Counters settle before the first reading (see statsSettle).
	if err := sleep(ctx, statsSettle); err != nil {
		return err
	}
	rep.LoadAvg = loadAvg()

	// Floor, then ours, then the baseline: each burst once, with fresh connections and no warm-up; the
	// baseline last, so the lock pile-up it causes in PostgreSQL cannot slow the others.
	floorReqs := make([]request, o.users)
	for i := range floorReqs {
		floorReqs[i] = request{url: srv.base + "/api/bench/floor", warm: srv.base + "/healthz", bearer: passes[i], body: seatBody(wantSeat(i, o.seats))}
	}
	logf("floor: %d × POST /api/bench/floor", o.users)
	floor, err := measure(ctx, "floor", floorReqs, o, pg, rdb, srv.poolStats, nil, srv.profiler(o.profileDir, "floor"))
	if err != nil {
		return err
	}
	rep.Runs = append(rep.Runs, floor)

	if !o.coldCatalog {
		// One seat-map read, as every client makes after its admission (protocol §9): it also fills the
		// server's seat catalog, which the waiting room's socket connect fills in the real flow.
		if err := srv.get(ctx, "/api/screenings/"+oursScreening+"/seats"); err != nil {
			return err
		}
		if err := sleep(ctx, statsSettle); err != nil {
			return err
		}
	}
	rep.ColdCatalog, rep.Warm = o.coldCatalog, o.warm
	oursReqs := make([]request, o.users)
	for i := range oursReqs {
		oursReqs[i] = request{url: srv.base + "/api/screenings/" + oursScreening + "/reservations", warm: srv.base + "/api/screenings/" + oursScreening + "/seats", bearer: passes[i], body: seatBody(wantSeat(i, o.seats))}
	}
	logf("ours: %d × POST /api/screenings/%s/reservations", o.users, oursScreening)
	ours, err := measure(ctx, "ours", oursReqs, o, pg, rdb, srv.poolStats, nil, srv.profiler(o.profileDir, "ours"))
	if err != nil {
		return err
	}
	rep.Runs = append(rep.Runs, ours)

	base, err := startBaseline(pg.benchURL, baselineScreening)
	if err != nil {
		return err
	}
	defer base.close()
	baseReqs := make([]request, o.users)
	for i := range baseReqs {
		baseReqs[i] = request{url: base.url, warm: base.ping, user: fmt.Sprint(i), body: seatBody(wantSeat(i, o.seats))}
	}
	logf("baseline: %d × POST %s (SELECT … FOR UPDATE, pool of %d)", o.users, base.url, baselinePoolSize)
	baseline, err := measure(ctx, "baseline", baseReqs, o, pg, rdb, base.poolStats, base.releasePool, nil)
	if err != nil {
		return err
	}
	peak := base.peakWaiters()
	baseline.PeakPoolWaiters = &peak
	rep.Runs = append(rep.Runs, baseline)

	// One winner per seat (fewer users than seats: one per user).
	winners := min(o.users, o.seats)
	rep.Verification, err = verify(ctx, pg.benchURL, oursScreening, ours.Created, winners)
	if err != nil {
		return err
	}
	rep.BaselineVerification, err = verify(ctx, pg.benchURL, baselineScreening, baseline.Created, winners)
	if err != nil {
		return err
	}
	rep.ServerProblems = srv.problems()
	if rep.Maintenance, err = pg.maintenance(ctx); err != nil {
		return err
	}
	rep.finish()
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

// setup creates the two screenings, registers the users in ours' line, admits them all in one step and
// signs their passes. passes[i] is user i's.
func setup(ctx context.Context, o options, benchURL string, rdb *redis.Client, prefix, secret string) ([]string, error) {
	db, err := booking.Open(ctx, benchURL, "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	store := booking.NewStore(db)
	now := time.Now().UTC().Truncate(time.Second)
	for _, id := range []string{oursScreening, baselineScreening} {
		created, err := store.EnsureScreening(ctx, booking.Screening{
			ID: id, Name: "Seed-2 replay (" + id + ")", StartsAt: now.Add(2 * time.Hour), SaleOpensAt: now.Add(-time.Minute),
		}, booking.Grid(1, o.seats))
		if err != nil {
			return nil, err
		}
		if !created {
			return nil, fmt.Errorf("screening %q already existed in a fresh database", id)
		}
	}

	q := queue.New(rdb, prefix)
	for i := 0; i < o.users; i++ {
		if _, err := q.Register(ctx, oursScreening, ""); err != nil {
			return nil, err
		}
	}
	res, err := q.Admit(ctx, oursScreening, time.Now(), queue.Settings{BatchSize: o.users, MaxActive: o.users, ActiveTTL: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	if len(res.Admitted) != o.users {
		// The server's scheduler ticks once an hour here; one at the wrong moment would have taken some.
		return nil, fmt.Errorf("admitted %d of %d users (skip %q); run again", len(res.Admitted), o.users, res.Skip)
	}
	p := queue.NewPasses([]byte(secret))
	passes := make([]string, o.users)
	for i, tok := range res.Admitted {
		if passes[i], err = p.Issue(oursScreening, tok, res.ExpiresAt); err != nil {
			return nil, err
		}
	}
	return passes, nil
}

// wantSeat is the seat user i asks for: A1..A<seats> in turn, so every seat has users/seats contenders.
func wantSeat(i, seats int) string { return fmt.Sprintf("A%d", i%seats+1) }

func seatBody(seat string) []byte { return []byte(`{"seats":["` + seat + `"]}`) }

// verify reads what was sold in a screening: exactly `winners` reservations of one seat each, as many as the
// burst's 201s, no seat twice.
func verify(ctx context.Context, benchURL, id string, created, winners int) (verification, error) {
	db, err := sqlx.Open("postgres", benchURL)
	if err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	defer db.Close()
	var rows []struct {
		Seat  string `db:"seat_id"`
		Count int    `db:"n"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT seat_id, COUNT(*) AS n FROM reservation_seats WHERE screening_id = $1 GROUP BY seat_id ORDER BY seat_id`, id); err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	var reservations int
	if err := db.GetContext(ctx, &reservations, `SELECT COUNT(*) FROM reservations WHERE screening_id = $1`, id); err != nil {
		return verification{}, fmt.Errorf("verify: %w", err)
	}
	v := verification{Screening: id, Reservations: reservations, DistinctSeats: len(rows)}
	for _, r := range rows {
		v.SeatRows += r.Count
		if r.Count > 1 {
			v.Twice = append(v.Twice, r.Seat)
		}
	}
	v.OK = created == winners && reservations == winners && v.SeatRows == winners && v.DistinctSeats == winners && len(v.Twice) == 0
	verdict := "OK"
	if !v.OK {
		verdict = "FAILED"
	}
	v.Text = fmt.Sprintf("%s: %d × 201, %d reservations, %d seat rows, %d distinct seats (want %d of each); sold twice: %s",
		verdict, created, reservations, v.SeatRows, v.DistinctSeats, winners, orNone(v.Twice))
	return v, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// loadAvg is the first three fields of /proc/loadavg, or "?" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
