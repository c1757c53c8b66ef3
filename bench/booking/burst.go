// Firing one burst: every user's request sent at the same instant, each from a client of its own, cold or
// warmed up.

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

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

// fire sends every request at once: one goroutine each, all released together when they are ready, each
// over a fresh transport of its own (no connection is shared, or reused from an earlier burst). Cold (warm
// false), no connection is opened beforehand: the burst pays 1,000 TCP connects. Warm, each user first GETs
// its request's warm URL and the burst is released on the kept-alive connections, as a browser that has
// just read the seat map sends its reservation. It returns each request's sample, the burst's wall time,
// and the connections dialled during the burst itself; an error only when profile (if set) failed.
func fire(ctx context.Context, reqs []request, timeout time.Duration, warm bool, profile profiler) ([]sample, time.Duration, int64, error) {
	var dialled atomic.Int64
	clients := newClients(len(reqs), timeout, &dialled)
	defer closeIdle(clients)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]sample, len(reqs))
	hreqs := newRequests(ctx, reqs, out)

	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i, req := range hreqs {
		if req == nil {
			continue
		}
		warmURL := ""
		if warm {
			warmURL = reqs[i].warm
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			out[i] = send(ctx, clients[i], req, warmURL, ready.Done, start)
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

// newClients makes n clients, one per user, each with a transport of its own that counts its dials in
// dialled. Every user is a browser of its own: a transport each, so no user's request ever rides
// another's connection (with one shared transport, a user whose request started late took the idle
// connection of one that had finished).
func newClients(n int, timeout time.Duration, dialled *atomic.Int64) []*http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	clients := make([]*http.Client, n)
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
		clients[i] = &http.Client{Transport: tr}
	}
	return clients
}

// closeIdle closes the connections the clients keep alive once the burst is over.
func closeIdle(clients []*http.Client) {
	for _, c := range clients {
		c.Transport.(*http.Transport).CloseIdleConnections()
	}
}

// newRequests builds the burst's POSTs on ctx; a request that cannot be built is nil, its error in out.
func newRequests(ctx context.Context, reqs []request, out []sample) []*http.Request {
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
	return hreqs
}

// send is one user of a burst: it GETs warmURL first if it is set, says it is ready, and sends req once
// start is closed, timing it until its response body is read.
func send(ctx context.Context, client *http.Client, req *http.Request, warmURL string, ready func(), start <-chan struct{}) sample {
	if warmURL != "" {
		if err := get(ctx, client, warmURL); err != nil {
			ready()
			return sample{err: fmt.Errorf("warm-up: %w", err)}
		}
	}
	ready()
	<-start
	var s sample
	t0 := time.Now()
	resp, err := client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.status = resp.StatusCode
	}
	s.latency, s.err = time.Since(t0), err
	return s
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
