package queue

import "time"

// SetNow makes q read the time from now instead of the wall clock, so a test can move time for Register,
// Status, Counts and CheckPass the way it already does for Admit through its now argument.
func SetNow(q *Queue, now func() time.Time) { q.now = now }

// Looping reports whether s runs the admission loop of screening here, so that Wake reaches it.
func Looping(s *Scheduler, screening string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loops[screening] != nil
}
