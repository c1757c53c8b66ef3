// The pace of the rank pushes: a screening's waiting sockets are sent their rank at most once per
// rank interval (hub.rank_interval), whatever the churn. Each event that moves the line still moves it at
// once, and the admitted get their pass at once (follow.go); only the ranks of the waiting wait, for at
// most one interval, and what is then sent is the rank in the newest line.
//
// Without the pace, every refill of a freed slot (a buyer who paid, one whose admission lapsed) pushed a
// rank to every waiting socket: some 840 rank messages per seat sold in the seed's crowd, the server's CPU
// spent in those writes while the buyers waited (issue 32).

package hub

import (
	"sync"
	"time"
)

// rankPace is one screening's pushes: when the last one went out and the line waiting for the next.
type rankPace struct {
	mu     sync.Mutex
	lastAt time.Time
	// next is the newest line not pushed yet, nil when none waits: a push of it is scheduled.
	next *ranks
}

// SetRankInterval sets the least time between two rank pushes to a screening's waiting sockets
// (hub.rank_interval); 0 pushes after every event. Call it before Run.
func (h *Hub) SetRankInterval(d time.Duration) { h.rankEvery = max(d, 0) }

// pushRanksPaced sends the waiting sockets of f's screening the ranks r now, or, when the last push is less
// than the rank interval old, once it is that old: a newer line arriving meanwhile takes r's place. Pushes
// of one screening never overlap and never go out of order, so a socket's last position is the newest.
func (h *Hub) pushRanksPaced(f *followed, r *ranks, clients []*client) {
	if h.rankEvery <= 0 || f == nil {
		sendRanks(r, clients)
		return
	}
	p := &f.ranks
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next != nil { // a push is scheduled: it will send r instead
		p.next = r
		return
	}
	now := h.clock()
	if wait := p.lastAt.Add(h.rankEvery).Sub(now); wait > 0 {
		p.next = r
		h.afterFunc(wait, func() { h.pushDueRanks(f) })
		return
	}
	p.lastAt = now
	sendRanks(r, clients)
}

// pushDueRanks sends the line that waited for the rank interval to the screening's sockets of now.
func (h *Hub) pushDueRanks(f *followed) {
	p := &f.ranks
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.next
	p.next = nil
	if r == nil {
		return
	}
	p.lastAt = h.clock()
	sendRanks(r, h.clients(f.screening))
}

// sendRanks queues for each waiting client its rank in r (the writer renders it). A client that joined
// after r's line was made has no rank in it, and is sent none: the next push has it.
func sendRanks(r *ranks, clients []*client) {
	for _, c := range clients {
		seq := c.seq.Load()
		if seq == 0 {
			continue
		}
		if rank, ok := r.line.Rank(seq); ok {
			c.sendPosition(r, rank)
		}
	}
}
