// The priority gate: a counting semaphore whose waiters are served in class order, with room kept for the
// classes before each.

package overload

import (
	"context"
	"sync"
	"time"
)

// Settings size a Gate.
type Settings struct {
	// Size is how many slots the gate hands out at once (at least 1).
	Size int
	// PaymentRoom slots are kept for Payment: the other classes may take a slot only while more than
	// PaymentRoom are free.
	PaymentRoom int
	// BuyerRoom more are kept for Payment and Buyer: Arrival and Background may take a slot only while more
	// than PaymentRoom+BuyerRoom are free. Each class may always take at least one slot of an idle gate,
	// whatever the rooms say.
	BuyerRoom int
	// RoomIdle is how long a room is kept after the last request of the classes it is kept for: a sale
	// with no payments (instant checkout) lends the payment room to the buyers, and takes it back at the
	// first confirm (which waits for the first slot freed; the next find the room). 0: a minute.
	RoomIdle time.Duration
	// Now is the gate's clock for RoomIdle (nil: time.Now).
	Now func() time.Time
	// Wait bounds how long a request of each class waits for a slot before it is refused with ErrBusy; 0:
	// as long as its context lasts.
	Wait map[Class]time.Duration
}

// Gate hands out a resource's slots by class: a free slot goes to the first waiter of the first class that
// may take it, and a class may take a slot only while the room kept for the classes before it stays free
// (kept while those classes come: a room nobody uses is lent).
// So a confirm waits for nothing but other confirms and the slots already in use, never for a queue of
// reservations; a reservation never for arrivals. Safe for concurrent use; a nil *Gate lets everything
// through.
//
// Go's x/sync/semaphore is first come first served: a weighted, FIFO semaphore has no classes, and a class
// per semaphore would let a lower class take the slot a higher one waits for.
type Gate struct {
	counted     [numClasses]*counted // nil when not counted
	size        int
	paymentRoom int // slots kept for Payment, and buyerRoom more for Buyer, while those classes are about
	buyerRoom   int
	roomIdle    time.Duration
	now         func() time.Time
	wait        [numClasses]time.Duration

	mu    sync.Mutex
	inUse [numClasses]int
	total int
	// waiting is each class's queue, first come first served. A waiter whose wait ended unserved stays in
	// it, marked gone, until it comes to the front (release skips it): taking it out of the middle would
	// copy the queue, under mu, at every refusal, and a burst refuses thousands. live counts the waiters
	// not gone.
	waiting [numClasses][]*waiter
	live    [numClasses]int
	seen    [numClasses]time.Time // each class's last request
}

// waiter is a request waiting for a slot; ready is closed when it is given one. gone: its wait ended
// unserved (it is still in its queue until the front).
type waiter struct {
	ready   chan struct{}
	granted bool
	gone    bool
	since   time.Time
}

// NewGate is a gate over resource (its name in /metrics) sized by s, counted in m (nil: not counted).
func NewGate(resource string, s Settings, m *Metrics) *Gate {
	size := max(s.Size, 1)
	g := &Gate{size: size, roomIdle: s.RoomIdle, now: s.Now}
	if g.roomIdle <= 0 {
		g.roomIdle = time.Minute
	}
	if g.now == nil {
		g.now = time.Now
	}
	for _, c := range Classes {
		g.wait[c] = s.Wait[c]
	}
	if m != nil {
		for _, c := range Classes {
			g.counted[c] = m.of(resource, c)
		}
	}
	g.paymentRoom = clamp(s.PaymentRoom, 0, size-1)
	g.buyerRoom = clamp(s.PaymentRoom+s.BuyerRoom, g.paymentRoom, size-1) - g.paymentRoom
	return g
}

// limitLocked is how many slots may be in use for class c still to take one: Size, less the rooms kept for
// the classes before c that came within RoomIdle (or wait now). It never rises with the class. g.mu is held.
func (g *Gate) limitLocked(c Class, now time.Time) int {
	kept := 0
	payments := g.aboutLocked(Payment, now)
	if c > Payment && payments {
		kept += g.paymentRoom
	}
	if c > Buyer && (payments || g.aboutLocked(Buyer, now)) {
		kept += g.buyerRoom
	}
	return g.size - kept
}

// aboutLocked says whether class k came within RoomIdle, or waits now. g.mu is held.
func (g *Gate) aboutLocked(k Class, now time.Time) bool {
	return g.live[k] > 0 || (!g.seen[k].IsZero() && now.Sub(g.seen[k]) < g.roomIdle)
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// Take waits for a slot for the class of ctx (Of) and returns the function that gives it back, to be called
// once. It fails with ErrBusy when the class's wait (Settings.Wait) runs out first, or with ctx's error when
// ctx ends first; a request that failed holds nothing.
func (g *Gate) Take(ctx context.Context) (done func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	c := Of(ctx)
	g.mu.Lock()
	now := g.now()
	g.seen[c] = now
	if g.mayTakeLocked(c, now) {
		g.grantLocked(c)
		g.mu.Unlock()
		g.counted[c].waited(0)
		return g.doneFunc(c), nil
	}
	w := &waiter{ready: make(chan struct{}), since: time.Now()}
	g.waiting[c] = append(g.waiting[c], w)
	g.live[c]++
	g.mu.Unlock()

	var expired <-chan time.Time
	if d := g.wait[c]; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.ready:
		g.counted[c].waited(time.Since(w.since))
		return g.doneFunc(c), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = ErrBusy
	}
	g.mu.Lock()
	if w.granted { // given a slot as the wait ended: it is the caller's
		g.mu.Unlock()
		g.counted[c].waited(time.Since(w.since))
		return g.doneFunc(c), nil
	}
	g.dropLocked(c, w)
	g.mu.Unlock()
	g.counted[c].refused()
	return nil, err
}

// mayTakeLocked says whether class c may take a slot now: its limit leaves one, and nobody of c or of a
// class before it waits (they come first). g.mu is held.
func (g *Gate) mayTakeLocked(c Class, now time.Time) bool {
	if g.total >= g.limitLocked(c, now) {
		return false
	}
	for k := Payment; k <= c; k++ {
		if g.live[k] > 0 {
			return false
		}
	}
	return true
}

// grantLocked counts a slot taken by class c. g.mu is held.
func (g *Gate) grantLocked(c Class) {
	g.total++
	g.inUse[c]++
	g.counted[c].inUse(g.inUse[c])
}

// doneFunc is the function that gives back a slot of class c, once.
func (g *Gate) doneFunc(c Class) func() {
	var once sync.Once
	return func() { once.Do(func() { g.release(c) }) }
}

// release gives back a slot of class c and hands the free slots to the waiters, first class first. The
// limits fall with the class, so the first class that cannot take one ends the search.
func (g *Gate) release(c Class) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	g.inUse[c]--
	g.counted[c].inUse(g.inUse[c])
	now := g.now()
	for k := Payment; k <= Background; k++ {
		for g.live[k] > 0 {
			if g.total >= g.limitLocked(k, now) {
				return
			}
			w := g.popLocked(k)
			w.granted = true
			g.live[k]--
			g.grantLocked(k)
			close(w.ready)
		}
	}
}

// popLocked takes the first waiter of class k that is not gone off its queue (there is one: live[k] > 0),
// and the gone ones before it. g.mu is held.
func (g *Gate) popLocked(k Class) *waiter {
	for {
		w := g.waiting[k][0]
		g.waiting[k][0] = nil
		g.waiting[k] = g.waiting[k][1:]
		if !w.gone {
			return w
		}
	}
}

// dropLocked marks w, whose wait ended unserved, gone: release skips it when it comes to the front. The
// gone at the front go at once, so a queue of refusals does not outlive its burst. g.mu is held.
func (g *Gate) dropLocked(c Class, w *waiter) {
	w.gone = true
	g.live[c]--
	q := g.waiting[c]
	for len(q) > 0 && q[0].gone {
		q[0] = nil
		q = q[1:]
	}
	g.waiting[c] = q
}

// Size is how many slots the gate hands out at once.
func (g *Gate) Size() int { return g.size }

// Limit is how many slots may be in use for class c still to take one now: Size for Payment, less the
// rooms kept for the classes before c that came within RoomIdle.
func (g *Gate) Limit(c Class) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limitLocked(c, g.now())
}

// InUse counts the slots class c holds.
func (g *Gate) InUse(c Class) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inUse[c]
}

// Waiting counts the requests of class c waiting for a slot.
func (g *Gate) Waiting(c Class) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live[c]
}
