// Recovering from what a follower did not hear: an event it missed (read the line whole, hand out the passes
// and ranks it carried), and a line Redis lost (rebuild it from the standings of the sockets here).

package hub

import (
	"context"
	"math"
	"time"

	"github.com/waitroom/waitroom/queue"
)

// resync reads the screening's line from Redis, hands their pass to local sockets that were admitted by an
// event this instance missed, places sockets of the pre-queue if the line opened meanwhile, and, when push,
// sends every waiting socket its rank.
func (h *Hub) resync(ctx context.Context, screening string, line *queue.Line, handled map[string]bool, tickAtMs int64, push bool) {
	h.resyncs.Inc()
	f := h.followedOf(screening)
	// The numbers of the waiting sockets are taken before the read: each was handed out before its socket
	// joined, so before the read, and Redis lost the line if the read does not know one. A socket that
	// registers while the line is read has a number the read may not know, and is no sign of a loss.
	known := waitingSeqs(h.clients(screening))
	fresh, err := h.readLine(ctx, screening, f)
	if err != nil {
		return // the hub is shutting down
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if fresh.Closed {
		// Sold out while this instance did not hear it (the message lost, or the subscription down).
		*line = fresh
		f.setSeen(line.Epoch)
		soldOut(h.clients(screening), "", false)
		return
	}
	if f != nil {
		f.pace.start(fresh.AdmittedAtMs)
	}
	if lost(line, fresh, known) {
		fresh = h.rebuild(ctx, screening, fresh)
		h.renumber(ctx, screening, h.clients(screening))
	}
	*line = fresh
	// Events lost while the subscription was down may include a pause or a resume.
	h.setPause(f, screening, fresh.Paused, true)
	f.setSeen(line.Epoch) // before listing the sockets: see missed
	clients := h.clients(screening)
	if line.Epoch > 0 {
		h.placePre(ctx, screening, clients)
	}
	if !h.recoverAdmissions(ctx, screening, line, clients, handled) {
		return
	}
	if push {
		h.pushRanks(f, line, clients, tickAtMs)
	}
}

// recoverAdmissions hands their pass to the clients that left the line without one from this instance:
// admitted by a missed event, or left. It reports false when Redis could not say (the push waits for the
// next event).
func (h *Hub) recoverAdmissions(ctx context.Context, screening string, line *queue.Line, clients []*client, handled map[string]bool) bool {
	for _, c := range clients {
		seq := c.seq.Load()
		if _, waits := line.Rank(seq); seq == 0 || waits || seq > line.LastSeq || handled[c.token] || c.admitted() {
			continue
		}
		e, err := h.lines.Status(ctx, screening, c.token)
		if err != nil {
			h.log.Error("hub: recover admission", "screening", screening, "err", err)
			return false
		}
		if e.State == queue.Admitted {
			c.admit(e.ExpiresAt, e.Offer)
		}
	}
	return true
}

// readLine reads the screening's line, again every resubscribeEvery until it succeeds or ctx ends: until
// then which events came is unknown, and no later event may arrive to retry (a line standing still), so
// the screening's events wait. Meanwhile every socket joining reads its own standing (missed).
func (h *Hub) readLine(ctx context.Context, screening string, f *followed) (queue.Line, error) {
	for attempt := 0; ; attempt++ {
		readCtx, cancel := context.WithTimeout(ctx, redisTimeout)
		fresh, err := h.lines.Line(readCtx, screening)
		cancel()
		if err == nil {
			return fresh, nil
		}
		f.setSeen(math.MaxInt64)
		if attempt == 0 {
			h.log.Error("hub: read line; retrying", "screening", screening, "err", err)
		}
		select {
		case <-ctx.Done():
			return queue.Line{}, ctx.Err()
		case <-time.After(resubscribeEvery):
		}
	}
}

// lost reports whether Redis lost the line since this instance last saw it (a restart without
// persistence): its epochs went back, or a local socket waits with a number (known, taken before fresh was
// read) Redis never handed out.
func lost(seen *queue.Line, fresh queue.Line, known []int64) bool {
	if seen.Epoch > 0 && fresh.Epoch < seen.Epoch {
		return true
	}
	for _, seq := range known {
		if seq > fresh.LastSeq {
			return true
		}
	}
	return false
}

// waitingSeqs are the sequence numbers of the clients that wait with one.
func waitingSeqs(clients []*client) []int64 {
	seqs := make([]int64, 0, len(clients))
	for _, c := range clients {
		if seq := c.seq.Load(); seq > 0 && !c.admitted() {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// rebuild puts this instance's sockets back in the line Redis lost (queue.Restore), and returns the line
// after it, or fresh when the rebuild failed (the next event's gap retries).
func (h *Hub) rebuild(ctx context.Context, screening string, fresh queue.Line) queue.Line {
	clients := h.clients(screening)
	standings := make([]queue.Standing, 0, len(clients))
	for _, c := range clients {
		st := queue.Standing{Token: c.token, Seq: c.seq.Load(), Numbering: queue.Numbering(c.numbering.Load())}
		c.mu.Lock()
		if c.admittedMs != 0 {
			st.ExpiresAt, st.Seq = time.UnixMilli(c.admittedMs), 0
		}
		c.mu.Unlock()
		if st.Seq > 0 || !st.ExpiresAt.IsZero() {
			standings = append(standings, st)
		}
	}
	rebuilt, n, err := h.lines.Restore(ctx, screening, standings)
	if err != nil && n == 0 {
		h.log.Error("hub: rebuild the line Redis lost", "screening", screening, "err", err)
		return fresh
	}
	h.log.Warn("hub: rebuilt the line Redis lost from this instance's sockets", "screening", screening, "restored", n, "err", err)
	if n < 0 {
		return fresh // closed meanwhile
	}
	return rebuilt
}

// missed reports whether an admission event newer than epoch may have been dispatched before c joined, so
// c may lack its news: the caller then reads c's standing again. Dispatch records an event's epoch before
// it lists the screening's sockets, and join adds a socket under the same lock that listing takes, so an
// event not reported here is dispatched to c.
//
// A client that was sent a tick's news (a position or a pass) since it joined lacks nothing: events are
// dispatched in order, and that news is where the latest one left it. Reading again would only send the
// same rank once more, after the tick's position, with the read's time for tick_at.
func (h *Hub) missed(c *client, epoch int64) bool {
	if c.mark() > 0 {
		return false
	}
	f := h.followedOf(c.screening)
	return f == nil || f.seen.Load() > epoch
}
