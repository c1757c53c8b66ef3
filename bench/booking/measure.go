// Measuring one burst: the database's, pool's, server's and Redis's counters read around it, and its samples
// summed into a result.

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// statsSettle is how long the bench waits before reading pg_stat_database. PostgreSQL 15 backends keep
// their transaction counts to themselves until they report them: at most once a second while busy, and
// within 10 s (PGSTAT_IDLE_INTERVAL) of going idle; pg_stat_force_next_flush() only flushes the backend
// that calls it, not the pools under test. So a reading taken 11 s after the burst counts all of it.
const statsSettle = 11 * time.Second

// poolStats are a connection pool's cumulative wait counters, and the CPU time of the process that owns
// it (cpu < 0: not measured).
type poolStats struct {
	waits    int64
	waitTime time.Duration
	cpu      time.Duration
}

// measure fires one burst and reads the counters around it: the pool's waits, and the database's
// transactions from just before the burst until statsSettle after it; then the same transaction count over
// an idle window of equal length right after, which is what the database saw without the burst (the
// server's scheduler lists screenings every 2 s). release, when set, runs right after the burst (the
// baseline closes its pool there: a backend that exits reports its counters at once). profile, when set,
// profiles the server from just before the burst's release.
func measure(ctx context.Context, name string, reqs []request, o options, pg *postgres, rdb *redis.Client,
	pool func(context.Context) (poolStats, error), release func(), profile profiler) (result, error) {
	p0, err := pool(ctx)
	if err != nil {
		return result{}, err
	}
	r0, err := redisCounters(ctx, rdb)
	if err != nil {
		return result{}, err
	}
	x0, err := pg.counters(ctx)
	if err != nil {
		return result{}, err
	}
	windowStart := time.Now()
	samples, wall, dials, err := fire(ctx, reqs, o.requestTimeout, o.warm, profile)
	if err != nil {
		return result{}, err
	}
	p1, err := pool(ctx)
	if err != nil {
		return result{}, err
	}
	r1, err := redisCounters(ctx, rdb)
	if err != nil {
		return result{}, err
	}
	if release != nil {
		release()
	}
	if err := sleep(ctx, statsSettle); err != nil {
		return result{}, err
	}
	x1, err := pg.counters(ctx)
	if err != nil {
		return result{}, err
	}
	window := time.Since(windowStart)
	if err := sleep(ctx, window); err != nil {
		return result{}, err
	}
	x2, err := pg.counters(ctx)
	if err != nil {
		return result{}, err
	}
	r := summarize(name, samples)
	r.Wall, r.Dials = ms(wall), dials
	r.Xacts, r.IdleXacts, r.Window = x1.Xacts-x0.Xacts, x2.Xacts-x1.Xacts, ms(window)
	r.WindowStart, r.IdleEnd = windowStart, windowStart.Add(2*window)
	r.Sessions, r.IdleSessions = x1.Sessions-x0.Sessions, x2.Sessions-x1.Sessions
	r.PoolWaits, r.PoolWaitTime = p1.waits-p0.waits, ms(p1.waitTime-p0.waitTime)
	r.ServerCPU = ms(-1)
	if p0.cpu >= 0 {
		r.ServerCPU = ms(p1.cpu - p0.cpu)
	}
	r.RedisCommands, r.RedisCPU = r1.commands-r0.commands, ms(r1.cpu-r0.cpu)
	return r, nil
}

// summarize counts the outcomes and the latency distribution of a burst (every request's latency counts,
// whatever its outcome).
func summarize(name string, samples []sample) result {
	r := result{Name: name, Requests: len(samples)}
	lat := make([]time.Duration, 0, len(samples))
	var sum, sumCreated, sumConflict time.Duration
	for _, s := range samples {
		switch {
		case s.err != nil:
			r.Other++
			r.addOther(errorKind(s.err))
		case s.status == http.StatusCreated:
			r.Created++
			sumCreated += s.latency
		case s.status == http.StatusConflict:
			r.Conflict++
			sumConflict += s.latency
		default:
			r.Other++
			r.addOther(fmt.Sprintf("HTTP %d", s.status))
		}
		lat = append(lat, s.latency)
		sum += s.latency
	}
	if len(lat) == 0 {
		return r
	}
	slices.Sort(lat)
	r.Avg = ms(sum / time.Duration(len(lat)))
	r.P50, r.P95, r.P99 = ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 99))
	r.Max = ms(lat[len(lat)-1])
	if r.Created > 0 {
		r.CreatedAvg = ms(sumCreated / time.Duration(r.Created))
	}
	if r.Conflict > 0 {
		r.ConflictAvg = ms(sumConflict / time.Duration(r.Conflict))
	}
	return r
}

func (r *result) addOther(kind string) {
	if r.OtherDetail == nil {
		r.OtherDetail = map[string]int{}
	}
	r.OtherDetail[kind]++
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "net " + op.Op
	}
	return "error"
}

// percentile is the nearest-rank p-th percentile of sorted (ascending, non-empty): the smallest value with
// at least p % of the values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
