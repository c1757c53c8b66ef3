package hub

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A burst of sockets (a sale opening: 19,000 upgrades in two seconds) leaves its garbage in the heap:
// net/http's per-connection buffers and requests, the handshakes' goroutine stacks. Go collects it, but keeps
// the pages up to the heap goal that the burst's last collection set, and its scavenger returns them to the
// OS only after a later collection sets a lower goal. A held line allocates almost nothing (a tick renders
// into reused buffers), so that collection can be minutes away, and the burst's peak stays resident: 24–26 KB
// per socket at 19,000 instead of ~10 (docs/benchmarks.md). The same holds after a crowd leaves at once.
//
// So the hub counts the sockets that open and close, and once a burst of them is over (trimBurst since the
// last trim, then a trimEvery with fewer than trimBurst/trimQuietShare) it collects and returns the free
// pages at once (debug.FreeOSMemory), when no writer is pushing a tick. A steady trickle never triggers it:
// it builds no peak, and its own allocations bring the collections that return what it frees.
const (
	// trimEvery is how often the hub looks at the churn of sockets.
	trimEvery = time.Second
	// trimBurst is the churn (sockets opened plus closed) since the last trim worth a forced collection: a
	// thousand upgrades leave ~10 MB behind; the collection costs tens of milliseconds of CPU at 19,000
	// sockets.
	trimBurst = 1000
	// trimQuietShare: a look that saw fewer than trimBurst/trimQuietShare sockets come and go ends a burst.
	trimQuietShare = 50
	// trimWaitPoll paces the wait for the writers to finish a tick's push before collecting.
	trimWaitPoll = 10 * time.Millisecond
)

// trimmer runs from the first socket's join until Shutdown, returning each burst's memory once it is over.
func (h *Hub) trimmer() {
	defer h.follows.Done()
	every, burst := h.trimEvery, int64(h.trimBurst)
	t := time.NewTicker(every)
	defer t.Stop()
	var seen, since int64 // the churn at the last look; the churn since the last trim
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		now := h.churn.Load()
		step := now - seen
		seen = now
		since += step
		if !burstOver(since, step, burst) {
			continue
		}
		// A tick's push is what the line is waiting for; the collection can wait for it (up to a look).
		for waited := time.Duration(0); h.writers.busy() && waited < every; waited += trimWaitPoll {
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(trimWaitPoll):
			}
		}
		h.returnMemory(since)
		since = 0
	}
}

// burstOver reports whether churn sockets came and went since the last trim make a burst (at least burst)
// and the last look's step shows it over (fewer than burst/trimQuietShare).
func burstOver(churn, step, burst int64) bool {
	return churn >= burst && step*trimQuietShare < burst
}

// returnMemory collects and hands every free page back to the OS, after churn sockets came or went.
func (h *Hub) returnMemory(churn int64) {
	before, start := retainedBytes(), time.Now()
	debug.FreeOSMemory()
	h.trims.Inc()
	h.log.Info("hub: a burst of sockets is over: its memory went back to the OS", "sockets_opened_or_closed", churn,
		"retained_before_mb", before>>20, "retained_after_mb", retainedBytes()>>20, "took_ms", time.Since(start).Milliseconds())
}

// retainedBytes is the memory the Go runtime holds from the OS: everything it mapped, less the heap pages
// it has returned.
func retainedBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
