// Waking the admission loops when a slot is freed: Queue.Finish and Queue.Leave tell every scheduler whose
// Run runs on the queue, and the screening's loop refills the slot at once instead of at the next tick.

package queue

// addWaker makes q wake s's loops when a slot is freed; Run calls it on start, and removeWaker on return.
// Several schedulers may run on one queue (tests run two): each is woken.
func (q *Queue) addWaker(s *Scheduler) {
	q.wakersMu.Lock()
	defer q.wakersMu.Unlock()
	if q.wakers == nil {
		q.wakers = map[*Scheduler]struct{}{}
	}
	q.wakers[s] = struct{}{}
}

// removeWaker undoes addWaker.
func (q *Queue) removeWaker(s *Scheduler) {
	q.wakersMu.Lock()
	defer q.wakersMu.Unlock()
	delete(q.wakers, s)
}

// slotFreed wakes the screening's loop in every scheduler running on q. With none running, it wakes
// nothing: the next tick, wherever one runs, admits into the freed slot. The wakes happen under wakersMu:
// wake never blocks, and the scheduler's own lock, which it takes, is never held while taking wakersMu.
func (q *Queue) slotFreed(screening string) {
	q.wakersMu.Lock()
	defer q.wakersMu.Unlock()
	for s := range q.wakers {
		s.wake(screening)
	}
}

// wake asks the screening's loop on this instance to refill freed slots now rather than at the next tick.
// It never blocks: a wake already pending covers this one.
func (s *Scheduler) wake(screening string) {
	s.mu.Lock()
	l := s.loops[screening]
	s.mu.Unlock()
	if l == nil {
		return // no loop here (not on sale): the next tick admits into the freed slots
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// refreshSchedulers asks every scheduler running on q to read the screenings now (a reopened sale).
func (q *Queue) refreshSchedulers() {
	q.wakersMu.Lock()
	defer q.wakersMu.Unlock()
	for s := range q.wakers {
		s.Refresh()
	}
}
