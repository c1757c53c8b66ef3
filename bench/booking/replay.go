// The replay itself: admit the users, fire the floor, ours and baseline bursts in that order, and check what
// each sold.

package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// bench is one run's setup, as the bursts use it: the flags, the run's names, the database, Redis, the
// server under test, and the admitted users' passes.
type bench struct {
	o options
	names
	logf   func(format string, a ...any)
	pg     *postgres
	rdb    *redis.Client
	srv    *server
	passes []string // passes[i] is user i's
}

// replay admits the users, fires the three bursts and checks what each sold: the whole report.
func (b *bench) replay(ctx context.Context) (report, error) {
	var err error
	if b.passes, err = setup(ctx, b.o, b.pg.benchURL, b.rdb, b.prefix, b.secret); err != nil {
		return report{}, err
	}
	b.logf("screenings %q and %q with %d seats each; %d users admitted to %q, passes signed", oursScreening, baselineScreening, b.o.seats, b.o.users, oursScreening)
	rep := report{Users: b.o.users, Seats: b.o.seats, Database: b.dbName, ColdCatalog: b.o.coldCatalog, Warm: b.o.warm, Checkout: b.o.checkout}
	if rep.Postgres, err = b.pg.version(ctx); err != nil {
		return report{}, err
	}
	if rep.Redis, err = redisVersion(ctx, b.rdb); err != nil {
		return report{}, err
	}
	// Counters settle before the first reading (see statsSettle).
	if err := sleep(ctx, statsSettle); err != nil {
		return report{}, err
	}
	rep.LoadAvg = loadAvg()

	// Floor, then ours, then the baseline: each burst once, with fresh connections and no warm-up; the
	// baseline last, so the lock pile-up it causes in PostgreSQL cannot slow the others.
	for _, burst := range []func(context.Context) (result, error){b.floorBurst, b.oursBurst, b.baselineBurst} {
		r, err := burst(ctx)
		if err != nil {
			return report{}, err
		}
		rep.Runs = append(rep.Runs, r)
	}
	if err := b.check(ctx, &rep); err != nil {
		return report{}, err
	}
	rep.finish()
	return rep, nil
}

// floorBurst: every user POSTs the server's /api/bench/floor, which answers 409 at once and does nothing
// else.
func (b *bench) floorBurst(ctx context.Context) (result, error) {
	reqs := make([]request, b.o.users)
	for i := range reqs {
		reqs[i] = request{url: b.srv.base + "/api/bench/floor", warm: b.srv.base + "/healthz", bearer: b.passes[i], body: seatBody(wantSeat(i, b.o.seats))}
	}
	b.logf("floor: %d × POST /api/bench/floor", b.o.users)
	return measure(ctx, "floor", reqs, b.o, b.pg, b.rdb, b.srv.poolStats, nil, b.srv.profiler(b.o.profileDir, "floor"))
}

// oursBurst: every user POSTs its reservation to the server with its pass.
func (b *bench) oursBurst(ctx context.Context) (result, error) {
	if !b.o.coldCatalog {
		// One seat-map read, as every client makes after its admission (protocol §9): it also fills the
		// server's seat catalog, which the waiting room's socket connect fills in the real flow.
		if err := b.srv.get(ctx, "/api/screenings/"+oursScreening+"/seats"); err != nil {
			return result{}, err
		}
		if err := sleep(ctx, statsSettle); err != nil {
			return result{}, err
		}
	}
	reqs := make([]request, b.o.users)
	for i := range reqs {
		reqs[i] = request{url: b.srv.base + "/api/screenings/" + oursScreening + "/reservations", warm: b.srv.base + "/api/screenings/" + oursScreening + "/seats", bearer: b.passes[i], body: seatBody(wantSeat(i, b.o.seats))}
	}
	b.logf("ours: %d × POST /api/screenings/%s/reservations", b.o.users, oursScreening)
	return measure(ctx, "ours", reqs, b.o, b.pg, b.rdb, b.srv.poolStats, nil, b.srv.profiler(b.o.profileDir, "ours"))
}

// baselineBurst: every user POSTs its reservation to the seed's pessimistic handler, served in this
// process for as long as its burst is measured.
func (b *bench) baselineBurst(ctx context.Context) (result, error) {
	base, err := startBaseline(b.pg.benchURL, baselineScreening)
	if err != nil {
		return result{}, err
	}
	defer base.close()
	reqs := make([]request, b.o.users)
	for i := range reqs {
		reqs[i] = request{url: base.url, warm: base.ping, user: fmt.Sprint(i), body: seatBody(wantSeat(i, b.o.seats))}
	}
	b.logf("baseline: %d × POST %s (SELECT … FOR UPDATE, pool of %d)", b.o.users, base.url, baselinePoolSize)
	r, err := measure(ctx, "baseline", reqs, b.o, b.pg, b.rdb, base.poolStats, base.releasePool, nil)
	if err != nil {
		return result{}, err
	}
	peak := base.peakWaiters()
	r.PeakPoolWaiters = &peak
	return r, nil
}

// check reads what each burst sold, one winner per seat (fewer users than seats: one per user), then the
// warnings the server logged and what autovacuum did.
func (b *bench) check(ctx context.Context, rep *report) error {
	ours, _ := rep.run("ours")
	baseline, _ := rep.run("baseline")
	winners := min(b.o.users, b.o.seats)
	var err error
	// Ours' winners hold their orders in hold checkout; the baseline, the seed's design, only confirms.
	oursStatus := "confirmed"
	if b.o.checkout == "hold" {
		oursStatus = "held"
	}
	if rep.Verification, err = verify(ctx, b.pg.benchURL, oursScreening, oursStatus, ours.Created, winners); err != nil {
		return err
	}
	if rep.BaselineVerification, err = verify(ctx, b.pg.benchURL, baselineScreening, "confirmed", baseline.Created, winners); err != nil {
		return err
	}
	rep.ServerProblems = b.srv.problems()
	if rep.Maintenance, err = b.pg.maintenance(ctx); err != nil {
		return err
	}
	return nil
}

// wantSeat is the seat user i asks for: A1..A<seats> in turn, so every seat has users/seats contenders.
func wantSeat(i, seats int) string { return fmt.Sprintf("A%d", i%seats+1) }

func seatBody(seat string) []byte { return []byte(`{"seats":["` + seat + `"]}`) }

// loadAvg is the first three fields of /proc/loadavg, or "?" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
