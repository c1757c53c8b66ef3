// Following a screening: one subscription to its events per screening with sockets here, the Line it moves,
// and what each event means for the sockets (passes, ranks, pause, sold out).

package hub

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/waitroom/waitroom/queue"
)

// resubscribeEvery paces the retries of a screening's subscription after Redis refused or dropped it.
const resubscribeEvery = time.Second

// followed is a screening this hub follows.
type followed struct {
	screening string
	ready     chan struct{} // closed once subscribed and the line read
	// seen is the newest event epoch whose dispatch began (see missed). Only the screening's follower writes
	// it.
	seen atomic.Int64
	// pace is the screening's measured admission rate, for the wait estimates. The follower moves it.
	pace pace
	// recheck asks the follower to read the line whole (watchRedis found an event missing).
	recheck chan struct{}
	// missing is an epoch Redis had that this hub had not dispatched at watchRedis's last check (0: none).
	// Only watchRedis touches it.
	missing int64
	// pause is the operator's pause as the hub last learnt it (pauseUnknown until the line is first read).
	// The follower writes it before it lists the sockets, and join reads it after adding one, so a socket
	// joining during a pause or resume is told either way (see tellPaused).
	pause atomic.Int32
	// ranks paces the rank pushes (rankpace.go).
	ranks rankPace
}

func newFollowed(screening string) *followed {
	f := &followed{screening: screening, ready: make(chan struct{}), recheck: make(chan struct{}, 1)}
	f.seen.Store(math.MaxInt64) // until the line is read: every socket joining now reads its standing
	return f
}

// The values of followed.pause.
const (
	pauseUnknown int32 = iota
	pauseRunning
	pausePaused
)

func pauseOf(paused bool) int32 {
	if paused {
		return pausePaused
	}
	return pauseRunning
}

// follow keeps a subscription to the screening's events until ctx ends, and owns the screening's Line:
// every event moves it, and each waiting socket's rank is computed from it, with no Redis call per socket.
// A (re)subscription reads the line whole first, so a new instance, or one whose subscription dropped,
// catches up at once.
func (h *Hub) follow(ctx context.Context, f *followed) {
	line := queue.Line{}
	first := true
	for {
		err := h.lines.Subscribe(ctx, f.screening, func(ctx context.Context, ev queue.Event) {
			h.Dispatch(ctx, &line, ev)
		}, func(ctx context.Context) {
			// The first time, the sockets here have just been told where they stand; after a dropped
			// subscription they may have missed ticks, so they are told again.
			h.resync(ctx, f.screening, &line, nil, time.Now().UnixMilli(), !first)
			if first {
				first = false
				close(f.ready)
			}
		}, f.recheck)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("hub: subscription ended; retrying", "screening", f.screening, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(resubscribeEvery):
		}
	}
}

// Dispatch tells this instance's sockets what an event means for them and moves the screening's line: after
// a tick, the admitted get their pass and the waiting their new rank, the line's length and a wait estimate;
// at the opening, the sockets of the pre-queue learn their shuffled place; a pause or resume is passed on;
// on sold out, everyone is told and closed. The screening's follower calls it for each event it hears, and
// owns line; a test may call it in its stead.
func (h *Hub) Dispatch(ctx context.Context, line *queue.Line, ev queue.Event) {
	f := h.followedOf(ev.Screening)
	if ev.Kind == queue.EventTick || ev.Kind == queue.EventOpened || ev.Kind == queue.EventRebuilt || ev.Kind == queue.EventSoldOut ||
		ev.Kind == queue.EventReopened {
		f.markSeen(ev.Epoch) // before listing the sockets: see missed
	}
	clients := h.clients(ev.Screening)
	switch ev.Kind {
	case queue.EventSoldOut:
		soldOut(clients, ev.Reason, ev.Waitlist)
	case queue.EventAllHeld, queue.EventReopened, queue.EventSeats:
		h.dispatchSale(ctx, line, ev, clients)
	case queue.EventPaused, queue.EventResumed:
		h.setPause(f, ev.Screening, ev.Kind == queue.EventPaused, true)
	case queue.EventOpened, queue.EventRebuilt:
		if ev.Kind == queue.EventRebuilt {
			h.renumber(ctx, ev.Screening, clients) // a newcomer may have moved to the end
		}
		h.placePre(ctx, ev.Screening, clients)
		if line.Apply(ev) {
			h.pushRanks(f, line, clients, ev.TickAtMs)
		}
	case queue.EventTick:
		h.dispatchTick(ctx, f, line, ev, clients)
	}
}

// dispatchTick hands the admitted their pass and the waiting their rank after an admission tick, or reads
// the line whole when the tick shows an event was missed.
func (h *Hub) dispatchTick(ctx context.Context, f *followed, line *queue.Line, ev queue.Event, clients []*client) {
	var admitted map[string]bool
	if len(ev.Admitted) > 0 {
		admitted = make(map[string]bool, len(ev.Admitted))
		var offers map[string]int
		if len(ev.Offers) == len(ev.Admitted) {
			offers = make(map[string]int, len(ev.Offers))
		}
		for i, t := range ev.Admitted {
			admitted[t] = true
			if offers != nil {
				offers[t] = ev.Offers[i]
			}
		}
		expiresAt := time.UnixMilli(ev.ExpiresAtMs)
		for _, c := range clients {
			if admitted[c.token] {
				c.admit(expiresAt, offers[c.token])
			}
		}
	}
	if f != nil {
		f.pace.add(ev.TickAtMs, len(ev.Admitted))
	}
	h.setPause(f, ev.Screening, ev.Paused, false) // a pause or resume whose own event was lost
	if line.Apply(ev) {
		h.pushRanks(f, line, clients, ev.TickAtMs)
		return
	}
	if ev.Epoch <= line.Epoch {
		return // old news (events from two instances crossed): the line already moved past it
	}
	// An event was missed (a dropped connection, a publish that failed): read the line whole.
	h.resync(ctx, ev.Screening, line, admitted, ev.TickAtMs, true)
}

// dispatchSale passes on what the box office changed: all seats held, or seats back (the waiting are told,
// and the line, whose epoch moved, is read whole), to the waiting; seat changes to the admitted.
func (h *Hub) dispatchSale(ctx context.Context, line *queue.Line, ev queue.Event, clients []*client) {
	var msg []byte
	switch ev.Kind {
	case queue.EventSeats:
		msg = SeatsMessage(ev.Seats)
	case queue.EventAllHeld:
		msg = AllHeldMessage()
	case queue.EventReopened:
		msg = ReopenedMessage()
		defer h.resync(ctx, ev.Screening, line, nil, ev.TickAtMs, true)
	}
	for _, c := range clients {
		if c.admitted() == (ev.Kind == queue.EventSeats) {
			c.send(msg)
		}
	}
}

// soldOut tells the clients the screening sold out (or closed: reason), and closes them, unless its line
// stays as the waitlist (waitlist): then they are told so and stay. A sale the operator reset
// (queue.ReasonReset) is not over: its sockets are closed with 1012, as by a draining instance, and come
// back with their tokens into the fresh line.
func soldOut(clients []*client, reason string, waitlist bool) {
	if waitlist {
		msg := SoldOutWaitlistMessage()
		for _, c := range clients {
			c.send(msg)
		}
		return
	}
	if reason == queue.ReasonReset {
		for _, c := range clients {
			c.close(CloseServiceRestart, "sale reset")
		}
		return
	}
	msg := SoldOutMessage(reason)
	for _, c := range clients {
		c.send(msg)
		c.close(websocket.CloseNormalClosure, "sold out")
	}
}

// followedOf is the screening's followed state, nil when the hub does not follow it.
func (h *Hub) followedOf(screening string) *followed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.following[screening]
}

// markSeen raises the screening's seen epoch to epoch; setSeen sets it, lower too (after reading the line).
// Only the screening's follower calls them, so a load and a store need no compare-and-swap. Both do nothing
// on a screening the hub does not follow (nil).
func (f *followed) markSeen(epoch int64) {
	if f != nil && f.seen.Load() < epoch {
		f.seen.Store(epoch)
	}
}

func (f *followed) setSeen(epoch int64) {
	if f != nil {
		f.seen.Store(epoch)
	}
}

// setPause records the screening's pause and, when it changed or every client must be checked (all),
// tells the clients that were told otherwise.
func (h *Hub) setPause(f *followed, screening string, paused, all bool) {
	if f == nil {
		return
	}
	if old := f.pause.Swap(pauseOf(paused)); old == pauseOf(paused) && !all {
		return
	}
	for _, c := range h.clients(screening) {
		c.tellPaused(paused)
	}
}

// placePre gives the sockets that joined in the pre-queue their place in the opened line: one round trip
// for all of them, once per opening.
func (h *Hub) placePre(ctx context.Context, screening string, clients []*client) {
	h.place(ctx, screening, clients, func(c *client) bool { return c.seq.Load() == 0 }, (*client).place)
}

// renumber reads again the number of every waiting socket after a rebuild, since the rebuild moves a token
// that registered after the loss to the end of the line.
func (h *Hub) renumber(ctx context.Context, screening string, clients []*client) {
	h.place(ctx, screening, clients, func(c *client) bool { return c.seq.Load() > 0 }, func(c *client, seq int64, numbering queue.Numbering) {
		c.seq.Store(seq)
		c.numbering.Store(uint32(numbering))
	})
}

// place reads the sequence numbers of the clients that want it (and are not admitted) in one round trip per
// thousand, and hands each number found to set, with the numbering it is of.
func (h *Hub) place(ctx context.Context, screening string, clients []*client, want func(*client) bool, set func(*client, int64, queue.Numbering)) {
	var picked []*client
	var tokens []string
	for _, c := range clients {
		if want(c) && !c.admitted() {
			picked = append(picked, c)
			tokens = append(tokens, c.token)
		}
	}
	if len(picked) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	seqs, numbering, err := h.lines.Seqs(ctx, screening, tokens)
	if err != nil {
		h.log.Error("hub: read the places of the sockets", "screening", screening, "err", err)
		return
	}
	for i, c := range picked {
		if seqs[i] > 0 {
			set(c, seqs[i], numbering)
		}
	}
}

// pushRanks sends each waiting client its rank, computed from the line, with a wait estimate from the
// screening's measured admission rate (none while paused or before the rate is known): now, or within the
// rank interval (rankpace.go).
func (h *Hub) pushRanks(f *followed, line *queue.Line, clients []*client, tickAtMs int64) {
	var rate paceRate // unknown: no estimate
	if f != nil && f.pause.Load() != pausePaused {
		rate = f.pace.rate()
	}
	h.pushRanksPaced(f, newRanks(line, tickAtMs, rate), clients)
}
