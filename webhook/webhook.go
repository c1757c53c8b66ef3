// Package webhook owns the webhooks' outbox (the table webhook_outbox): a writer (booking) puts each webhook
// in it with Enqueue, inside the transaction of the change it tells, and this package delivers it: it is
// POSTed to webhooks.url, signed as the Standard Webhooks specification says, until the receiver answers
// 2xx, retried with exponential back-off and jitter, and given up (marked failed) after its last attempt.
//
// Guarantees: at least once — a webhook is marked delivered only after a 2xx, and its webhook-id (the
// outbox's msg_id) is the same on every attempt, so a receiver dedupes on it. Several instances deliver
// from one PostgreSQL database at once without sending one webhook twice concurrently: each claims its
// rows with SELECT … FOR UPDATE SKIP LOCKED and a lease that keeps them from the others while it sends.
//
// Where things are:
//   - webhook.go: the package's settings and their defaults.
//   - enqueue.go: a webhook written into the outbox: its body (Event), its message id, its row (Enqueue).
//     The table itself is created by booking's migrations, the one goose sequence of the database.
//   - outbox.go: the outbox as this package reads and writes it: claiming due rows, recording an attempt,
//     listing deliveries by state.
//   - deliver.go: the Deliverer, its loop, and one signed attempt.
//   - backoff.go: when a failed webhook is tried again, and when it is given up.
//   - metrics.go: the deliveries' Prometheus metrics.
package webhook

import (
	"net/http"
	"time"
)

// Defaults of the settings a Settings leaves zero.
const (
	// defaultEvery is how often the deliverer looks for due webhooks.
	defaultEvery = 250 * time.Millisecond
	// defaultBatch bounds the webhooks one poll claims; they are sent at once, each on its own goroutine.
	defaultBatch = 16
	// defaultAttemptTimeout bounds one attempt, connection to the end of the answer's headers.
	defaultAttemptTimeout = 10 * time.Second
	// defaultFirstRetry is the wait after a first failed attempt; each next wait doubles, up to defaultMaxRetry.
	defaultFirstRetry = time.Second
	defaultMaxRetry   = time.Hour
	// defaultMaxAttempts and defaultMaxAge: a webhook is given up after this many attempts, or once its
	// next attempt would come this long after it was written.
	defaultMaxAttempts = 15
	defaultMaxAge      = 24 * time.Hour
)

// Settings say where the webhooks go and how they are retried. Zero fields take the defaults above.
type Settings struct {
	// URL receives every webhook (webhooks.url).
	URL string
	// Secret signs them: "whsec_" and base64 (webhooks.secret).
	Secret string
	// Every is how often the outbox is polled for due webhooks.
	Every time.Duration
	// Batch bounds the webhooks one poll claims and sends at once.
	Batch int
	// AttemptTimeout bounds one attempt; a webhook's lease lasts three of them.
	AttemptTimeout time.Duration
	// FirstRetry is the wait after the first failed attempt, doubled after each next one up to MaxRetry,
	// each wait with ±20% jitter.
	FirstRetry, MaxRetry time.Duration
	// MaxAttempts and MaxAge bound the attempts: a webhook is given up after MaxAttempts of them, or when
	// its next would be due more than MaxAge after it was written.
	MaxAttempts int
	MaxAge      time.Duration
	// Client sends the attempts (nil: one of the deliverer's own, which follows no redirect).
	Client *http.Client
}

// withDefaults is s with every zero field set to its default.
func (s Settings) withDefaults() Settings {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&s.Every, defaultEvery)
	set(&s.AttemptTimeout, defaultAttemptTimeout)
	set(&s.FirstRetry, defaultFirstRetry)
	set(&s.MaxRetry, defaultMaxRetry)
	set(&s.MaxAge, defaultMaxAge)
	if s.Batch <= 0 {
		s.Batch = defaultBatch
	}
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = defaultMaxAttempts
	}
	if s.Client == nil {
		// A 3xx is not a delivery: the receiver's URL is the one configured, and a redirected POST would
		// lose its body.
		s.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return s
}
