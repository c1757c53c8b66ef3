package queue

import (
	"context"
	"time"
)

// SetNow makes q read the time from now instead of the wall clock, so a test can move time for Register,
// Status, Counts and CheckPass the way it already does for Admit through its now argument.
func SetNow(q *Queue, now func() time.Time) { q.now = now }

// Looping reports whether s runs the admission loop of screening here, so that a freed slot wakes it.
func Looping(s *Scheduler, screening string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops[screening] != nil
}

// RegisterLate sends the registration whose entry Enter returned with an error once more, with the same mark,
// as Redis would run a pipeline it got late.
func RegisterLate(ctx context.Context, q *Queue, screening string, e Entry) (Entry, error) {
	return q.enter(ctx, screening, e.Token, time.Time{}, e.mark)
}

// Wakers counts the schedulers whose Run runs on q: those a freed slot wakes.
func Wakers(q *Queue) int {
	q.wakersMu.Lock()
	defer q.wakersMu.Unlock()
	return len(q.wakers)
}
