// The retry schedule: when a webhook whose attempt failed is tried again, and when it is given up.

package webhook

import (
	"math/rand/v2"
	"time"
)

// jitter spreads each wait over ±jitter of itself, so webhooks that failed together (a receiver's outage)
// are not all tried again in the same instant.
const jitter = 0.2

// retryAfter is the wait after the attempt-th failed attempt (1-based): first, doubled after each next one,
// at most max, with jitter.
func retryAfter(attempt int, first, max time.Duration) time.Duration {
	d := first
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return time.Duration(float64(d) * (1 - jitter + 2*jitter*rand.Float64()))
}

// nextAttempt is when m, whose attempt failed at now, is tried again, and whether it is given up instead:
// after its last attempt, or when the next would come later than maxAge after it was written.
func (s Settings) nextAttempt(m message, now time.Time) (time.Time, bool) {
	next := now.Add(retryAfter(m.Attempts, s.FirstRetry, s.MaxRetry))
	giveUp := m.Attempts >= s.MaxAttempts || next.Sub(m.CreatedAt) > s.MaxAge
	return next, giveUp
}
