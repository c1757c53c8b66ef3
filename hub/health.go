// Keeping the sockets and the hub's view of Redis alive: one pinger for every socket, a slice of them at a
// time, and a watch on Redis that tells the sockets when it stops and starts answering and finds events
// this instance never heard.

package hub

import (
	"context"
	"math"
	"time"
)

const (
	// pingPeriod sends pings often enough that a live peer's pong always beats pongWait.
	pingPeriod = pongWait * 9 / 10
	// pingSlices is how many parts the pinger spreads the pings of a pingPeriod over (pinger).
	pingSlices = 54
	// healthEvery paces the hub's Redis check; healthTimeout bounds one.
	healthEvery   = time.Second
	healthTimeout = time.Second
)

// pinger pings every socket each pingPeriod, one timer for the hub instead of one per socket, until ctx
// ends. The sockets are pinged a slice at a time, one of pingSlices each pingPeriod/pingSlices (a socket's
// slice is fixed at join): pinging all at once is a push to every socket and a pong back from each, which at
// 16,666 sockets per process delayed the tick it met by two seconds (docs/benchmarks.md).
func (h *Hub) pinger(ctx context.Context) {
	step := h.pingEvery / pingSlices
	t := time.NewTicker(step)
	defer t.Stop()
	ticks, steps := t.C, h.pingSteps
	if steps != nil {
		ticks = nil // a test takes the steps
	}
	start := time.Now()
	var done int64    // steps taken: slice done%pingSlices is the next to ping
	var due []*client // reused: a step lists its slice without garbage
	for {
		var elapsed time.Duration
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			elapsed = time.Since(start)
		case elapsed = <-steps:
		}
		// Steps follow the clock, not the ticks: a ticker drops the ticks of a late receiver, and a skipped
		// slice would go a whole period more without a ping, past its pongWait.
		for now := int64(elapsed / step); done < now; done++ {
			due = h.appendSlice(due[:0], int(done%pingSlices))
			for _, c := range due {
				c.ping()
			}
			clear(due)
		}
	}
}

// appendSlice appends to dst the clients whose ping slice is slice.
func (h *Hub) appendSlice(dst []*client, slice int) []*client {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.byScreening {
		for c := range set {
			if int(c.pingSlice) == slice {
				dst = append(dst, c)
			}
		}
	}
	return dst
}

// watchRedis checks Redis every healthEvery until ctx ends and tells every socket when it stops answering
// (nobody is admitted and nothing moves meanwhile: the scheduler's ticks fail) and when it answers again.
// The sockets stay open; their places are kept, or rebuilt if Redis lost them (resync).
func (h *Hub) watchRedis(ctx context.Context) {
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pingCtx, cancel := context.WithTimeout(ctx, healthTimeout)
		err := h.lines.Ping(pingCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil && !down {
			h.recheckEpochs(ctx)
		}
		switch {
		case err != nil && !down:
			down = true
			h.log.Error("hub: redis unreachable: telling the sockets", "err", err)
			for _, c := range h.allClients() {
				c.send(UnavailableMessage())
			}
		case err == nil && down:
			down = false
			h.log.Info("hub: redis answers again")
			for _, c := range h.allClients() {
				c.send(AvailableMessage())
			}
		}
	}
}

// recheckEpochs asks each followed screening whose last event in Redis is newer than any this hub
// dispatched to read its line whole: the event's publisher died between admitting and publishing, or the
// message was lost, and no later event came to show the gap (a line standing still). The admitted then get
// their pass from here, and the waiting their rank. One GET per followed screening.
func (h *Hub) recheckEpochs(ctx context.Context) {
	h.mu.Lock()
	following := make(map[string]*followed, len(h.following))
	for id, f := range h.following {
		following[id] = f
	}
	h.mu.Unlock()
	for id, f := range following {
		seen := f.seen.Load()
		if seen == math.MaxInt64 {
			continue // the line is being read already
		}
		epochCtx, cancel := context.WithTimeout(ctx, healthTimeout)
		epoch, err := h.lines.Epoch(epochCtx, id)
		cancel()
		if err != nil || epoch <= seen {
			f.missing = 0
			continue
		}
		// An event may just be on its way: only one still missing a check later counts.
		if f.missing == 0 || seen >= f.missing {
			f.missing = epoch
			continue
		}
		f.missing = 0
		select {
		case f.recheck <- struct{}{}:
		default:
		}
	}
}
