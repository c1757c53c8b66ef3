// In-process coordination of the requests of one instance: the seats it knows are sold (soldSeats) and the
// seat locks its requests hold, whose release wakes who waits for them (releases).

package booking

import (
	"fmt"
	"strings"
	"sync"
)

// soldSeats is what this instance has learnt is taken (sold or held), per screening: from its own commits,
// and from SQL's or Redis's refusals. A seat comes back only when an order is cancelled or expires, and each
// such release moves the screening's released count in Redis (queue.ReleasedKey), which every pass check
// reads: a memo older than the count is dropped (sync) before it refuses anyone. Between releases it is
// never stale, only incomplete; Redis and then SQL decide for any seat it does not list.
type soldSeats struct {
	mu       sync.RWMutex
	byID     map[string]map[string]bool // screening -> seat ids
	closed   map[string]bool            // screenings whose line is closed (sold out or closed by the operator)
	released map[string]int64           // screening -> the released count the memo is as of
}

// sync drops what is remembered of the screening if its released count moved since: seats came back, or
// the line reopened.
func (s *soldSeats) sync(screening string, released int64) {
	s.mu.RLock()
	same := s.released[screening] == released
	s.mu.RUnlock()
	if same {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released == nil {
		s.released = map[string]int64{}
	}
	if s.released[screening] != released {
		delete(s.byID, screening)
		delete(s.closed, screening)
		s.released[screening] = released
	}
}

// forget drops seats from what is remembered of the screening (this instance released them).
func (s *soldSeats) forget(screening string, seats []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range seats {
		delete(s.byID[screening], id)
	}
	delete(s.closed, screening)
}

// close records that the screening's line is closed, as learnt by a request that checked its pass when the
// released count was asOf (a request older than the latest release learns nothing the memo keeps).
func (s *soldSeats) close(screening string, asOf int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released[screening] != asOf {
		return
	}
	if s.closed == nil {
		s.closed = map[string]bool{}
	}
	s.closed[screening] = true
}

// add records seats of the screening as taken, as learnt by a request that checked its pass when the
// released count was asOf (see close).
func (s *soldSeats) add(screening string, seats []string, asOf int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released[screening] != asOf {
		return
	}
	if s.byID == nil {
		s.byID = map[string]map[string]bool{}
	}
	m := s.byID[screening]
	if m == nil {
		m = map[string]bool{}
		s.byID[screening] = m
	}
	for _, id := range seats {
		m[id] = true
	}
}

// with calls fn with what is remembered taken of the screening (nil: nothing), under the memo's read lock:
// fn only reads it, and returns at once.
func (s *soldSeats) with(screening string, fn func(known map[string]bool) []string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(s.byID[screening])
}

// refuse answers a request for seats of a screening of total seats from what is known: ErrSoldOut when
// the line is known closed or every seat is known sold (as the lock script would), a TakenError naming
// those of seats known sold, or nil when none is.
func (s *soldSeats) refuse(screening string, seats []string, total int) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed[screening] {
		return fmt.Errorf("booking: reserve: %w", ErrSoldOut)
	}
	m := s.byID[screening]
	if len(m) == 0 {
		return nil
	}
	var taken []string
	for _, id := range seats {
		if m[id] {
			taken = append(taken, id)
		}
	}
	switch {
	case len(taken) == 0:
		return nil
	case len(m) >= total:
		return fmt.Errorf("booking: reserve: %w", ErrSoldOut)
	}
	return &TakenError{Seats: taken}
}

// releases knows the seat locks the requests of this instance hold, and lets a request waiting for one
// wake the moment it is released, instead of at its next poll. A holder on another instance is still found
// out by polling; a release between a failed try and the wait is too (the wait then ends by its timer).
type releases struct {
	mu      sync.Mutex
	waiting map[string]chan struct{} // seat lock key -> closed when a request here releases it
	owners  map[string]string        // seat lock key -> the owner id of the request here that holds it
}

// took records that owner, a request here, took the locks keys.
func (r *releases) took(keys []string, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tookLocked(keys, owner)
}

func (r *releases) tookLocked(keys []string, owner string) {
	if r.owners == nil {
		r.owners = map[string]string{}
	}
	for _, k := range keys {
		r.owners[k] = owner
	}
}

// claim records owner as the holder here of keys, all or none: if a request here other than owner has
// one of them, it returns that key's seat (seats[i] for keys[i]) and the channel its release closes, and
// claims nothing. The claim becomes the seat locks if the lock script then takes them (released after the
// commit or rollback, as the locks are), and is released at once if it does not.
func (r *releases) claim(keys, seats []string, owner string) (string, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.otherOwnerLocked(keys, owner); i >= 0 {
		return seats[i], r.waitLocked(keys[i])
	}
	r.tookLocked(keys, owner)
	return "", nil
}

// lockedHere returns the first of keys (and its seat, seats[i] for keys[i]) that a request here other than
// owner has, with the channel its release closes; a nil channel when none has.
func (r *releases) lockedHere(keys, seats []string, owner string) (string, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.otherOwnerLocked(keys, owner); i >= 0 {
		return seats[i], r.waitLocked(keys[i])
	}
	return "", nil
}

// otherOwnerLocked returns the index of the first of keys that a request here other than owner has, or
// -1. r.mu is held.
func (r *releases) otherOwnerLocked(keys []string, owner string) int {
	for i, k := range keys {
		if o, ok := r.owners[k]; ok && o != owner {
			return i
		}
	}
	return -1
}

func (r *releases) wait(key string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitLocked(key)
}

func (r *releases) waitLocked(key string) <-chan struct{} {
	if r.waiting == nil {
		r.waiting = map[string]chan struct{}{}
	}
	ch, ok := r.waiting[key]
	if !ok {
		ch = make(chan struct{})
		r.waiting[key] = ch
	}
	return ch
}

// wake wakes the requests waiting for keys now, though the locks are still held (they look again, and wait
// again for the release if they must).
func (r *releases) wake(keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakeLocked(keys)
}

func (r *releases) wakeLocked(keys []string) {
	for _, k := range keys {
		if ch, ok := r.waiting[k]; ok {
			close(ch)
			delete(r.waiting, k)
		}
	}
}

// release gives up owner's locks keys and wakes who waits for them.
func (r *releases) release(keys []string, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if r.owners[k] == owner {
			delete(r.owners, k)
		}
	}
	r.wakeLocked(keys)
}

// pickClaim chooses seats and claims them here for owner in one step, so the requests of one moment that
// ask by count each get seats of their own instead of all choosing the same best seats and all but one
// choosing again. pick is called once, under r.mu, with heldHere telling a seat whose lock (prefix + its
// id) a request here other than owner has; the seats it returns (none: nil) are claimed, as claim does.
func (r *releases) pickClaim(prefix, owner string, pick func(heldHere func(id string) bool) []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := map[string]bool{} // the locks here are the requests in flight: a few, not the house
	for k, o := range r.owners {
		if id, ok := strings.CutPrefix(k, prefix); ok && o != owner {
			held[id] = true
		}
	}
	seats := pick(func(id string) bool { return held[id] })
	if len(seats) == 0 {
		return nil
	}
	keys := make([]string, len(seats))
	for i, id := range seats {
		keys[i] = prefix + id
	}
	r.tookLocked(keys, owner)
	return seats
}
