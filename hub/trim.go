// Returning a burst's memory to the OS: the trimmer counts the sockets that come and go, and once a burst of
// them is over, collects and hands the free pages back.

package hub

import (
	"context"
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
// last trim, then two looks a trimEvery apart that each saw fewer than trimBurst/trimQuietShare) it collects
// and returns the free pages at once (debug.FreeOSMemory), when no writer is pushing a tick. A steady
// trickle never triggers it: it builds no peak, and its own allocations bring the collections that return
// what it frees.
const (
	// trimEvery is how often the hub looks at the churn of sockets.
	trimEvery = time.Second
	// trimBurst is the churn (sockets opened plus closed) since the last trim worth a forced collection: a
	// thousand upgrades leave ~10 MB behind; the collection costs tens of milliseconds of CPU at 19,000
	// sockets.
	trimBurst = 1000
	// trimQuietShare: a look that saw fewer than trimBurst/trimQuietShare sockets come and go is calm, and
	// trimCalmLooks calm looks in a row end a burst.
	trimQuietShare = 50
	trimCalmLooks  = 2
	// trimWaitPoll paces the wait for the writers to finish a tick's push before collecting.
	trimWaitPoll = 10 * time.Millisecond
)

// trimmer returns each burst's memory once it is over, until ctx ends.
func (h *Hub) trimmer(ctx context.Context) {
	t := time.NewTicker(h.trimEvery)
	defer t.Stop()
	looks := t.C
	if h.trimLooks != nil {
		looks = h.trimLooks // a test takes the looks
	}
	b := burst{size: int64(h.trimBurst)}
	var seen int64 // the churn at the last look
	for {
		select {
		case <-ctx.Done():
			return
		case <-looks:
		}
		now := h.churn.Load()
		churn, over := b.look(now - seen)
		seen = now
		if over {
			// A tick's push is what the line is waiting for; the collection can wait for it (up to a look).
			for waited := time.Duration(0); h.writers.busy() && waited < h.trimEvery; waited += trimWaitPoll {
				select {
				case <-ctx.Done():
					return
				case <-time.After(trimWaitPoll):
				}
			}
			h.returnMemory(churn)
		}
		if h.trimLooked != nil {
			h.trimLooked()
		}
	}
}

// burst follows the churn of sockets from look to look.
type burst struct {
	size  int64 // the churn that makes a burst: trimBurst
	churn int64 // sockets opened or closed since the last burst ended
	calm  int   // looks in a row that saw fewer than size/trimQuietShare
}

// look takes the churn seen since the last look and reports whether a burst just ended: at least size
// sockets came and went, then trimCalmLooks looks in a row saw almost none. It then starts counting anew and
// returns the burst's churn. One calm look is not enough: a registration burst paced by its clients stalls
// for a second whenever Redis or the machine does, and a collection in the middle of it is wasted.
func (b *burst) look(step int64) (churn int64, over bool) {
	b.churn += step
	if step*trimQuietShare < b.size {
		b.calm++
	} else {
		b.calm = 0
	}
	if b.churn < b.size || b.calm < trimCalmLooks {
		return 0, false
	}
	churn, b.churn, b.calm = b.churn, 0, 0
	return churn, true
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
