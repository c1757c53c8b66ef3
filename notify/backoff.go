// The retry schedule: when an e-mail whose attempt failed is tried again, and when it is given up.

package notify

import "time"

// retryAfter is the wait after the attempt-th failed attempt (1-based): first, doubled after each next one,
// at most most. No jitter: the e-mails that failed together go to one server, and a poll sends at most
// Settings.Batch of them at once whatever their times.
func retryAfter(attempt int, first, most time.Duration) time.Duration {
	d := first
	for i := 1; i < attempt && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// nextAttempt is when m, whose attempt failed at now, is tried again, and whether it is given up instead:
// after its last attempt, or when the next would come after its deadline.
func (s Settings) nextAttempt(m message, now time.Time) (time.Time, bool) {
	next := now.Add(retryAfter(m.Attempts, s.FirstRetry, s.MaxRetry))
	giveUp := m.Attempts >= s.MaxAttempts || (m.Deadline != nil && !next.Before(*m.Deadline))
	return next, giveUp
}
