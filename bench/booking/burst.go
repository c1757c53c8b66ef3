package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// statsSettle is how long the bench waits before reading pg_stat_database. PostgreSQL 15 backends keep
// their transaction counts to themselves until they report them: at most once a second while busy, and
// within 10 s (PGSTAT_IDLE_INTERVAL) of going idle; pg_stat_force_next_flush() only flushes the backend
// that calls it, not the pools under test. So a reading taken 11 s after the burst counts all of it.
const statsSettle = 11 * time.Second

// request is one user's request of a burst.
type request struct {
	url    string
	warm   string // with -warm, the URL this user GETs first on its own connection (the burst reuses it)
	bearer string // Authorization: Bearer <bearer>, when set
	user   string // X-User, when set (the baseline's user id)
	body   []byte
}

// sample is what one request saw, client-side: from just before the request was sent until its response
// body was read.
type sample struct {
	status  int // 0 when the request failed
	latency time.Duration
	err     error
}

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

// fire sends every request at once: one goroutine each, all released together when they are ready, each
// over a fresh transport of its own (no connection is shared, or reused from an earlier burst). Cold (warm false), no connection is
// opened beforehand: the burst pays 1,000 TCP connects. Warm, each user first GETs its request's warm URL
// and the burst is released on the kept-alive connections, as a browser that has just read the seat map
// sends its reservation. It returns each request's sample, the burst's wall time, and the connections
// dialled during the burst itself; an error only when profile (if set) failed.
func fire(ctx context.Context, reqs []request, timeout time.Duration, warm bool, profile profiler) ([]sample, time.Duration, int64, error) {
	var dialled atomic.Int64
	dialer := &net.Dialer{Timeout: timeout}
	// Every user is a browser of its own: a transport each, so no user's request ever rides another's
	// connection (with one shared transport, a user whose request started late took the idle connection
	// of one that had finished).
	clients := make([]*http.Client, len(reqs))
	for i := range clients {
		tr := &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialled.Add(1)
				return dialer.DialContext(ctx, network, addr)
			},
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		}
		defer tr.CloseIdleConnections()
		clients[i] = &http.Client{Transport: tr}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := make([]sample, len(reqs))
	hreqs := make([]*http.Request, len(reqs))
	for i, rq := range reqs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rq.url, bytes.NewReader(rq.body))
		if err != nil {
			out[i].err = err
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		if rq.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+rq.bearer)
		}
		if rq.user != "" {
			req.Header.Set("X-User", rq.user)
		}
		hreqs[i] = req
	}

	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i, req := range hreqs {
		if req == nil {
			continue
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			if warm && reqs[i].warm != "" {
				if err := get(ctx, clients[i], reqs[i].warm); err != nil {
					out[i].err = fmt.Errorf("warm-up: %w", err)
					ready.Done()
					return
				}
			}
			ready.Done()
			<-start
			t0 := time.Now()
			resp, err := clients[i].Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				out[i].status = resp.StatusCode
			}
			out[i].latency, out[i].err = time.Since(t0), err
		}()
	}
	ready.Wait()
	if warm {
		// The warm-up's own work (the server answering 1,000 reads) ends before the burst starts.
		time.Sleep(warmSettle)
	}
	profiled := func() error { return nil }
	if profile != nil {
		profiled = profile(ctx)
	}
	before := dialled.Load()
	t0 := time.Now()
	close(start)
	done.Wait()
	wall := time.Since(t0)
	return out, wall, dialled.Load() - before, profiled()
}

// profiler starts a profile of the burst about to be released; the function it returns waits until the
// profile is written and reports its error.
type profiler func(ctx context.Context) func() error

// warmSettle is the pause between a warm burst's warm-up and its release.
const warmSettle = 500 * time.Millisecond

// get reads url to the end on client, as a warm-up: an answer other than 2xx is an error.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
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
