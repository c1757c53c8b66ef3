// A screening's admission settings: the pace an operator sets, the server's defaults merged under it, and
// what is allowed.

package queue

import (
	"errors"
	"fmt"
	"time"
)

// Settings is the pace of one screening's admission.
type Settings struct {
	Interval  time.Duration
	BatchSize int
	MaxActive int
	ActiveTTL time.Duration
	LockTTL   time.Duration
	// Grace is how long a waiting token may have no open socket before a tick drops it as abandoned
	// (0: never).
	Grace time.Duration
	// OfferTTL is how long a waitlist's offer lasts (its pass and slot); 0: the server's default.
	OfferTTL time.Duration
	// Waitlist is whether the screening keeps its line as a waitlist when it sells out: the admission loop
	// then hands what happens to its offers to the scheduler's offer hook (SetOfferHook).
	Waitlist bool
}

// ErrBadSettings: admission settings a screening cannot run with.
var ErrBadSettings = errors.New("bad admission settings")

// SettingsError refuses one admission setting; Message says which and what is allowed, in words for the
// operator who sent it. errors.Is(err, ErrBadSettings) holds.
type SettingsError struct{ Message string }

func (e *SettingsError) Error() string { return "queue: " + e.Message }

// Is makes errors.Is(err, ErrBadSettings) hold.
func (e *SettingsError) Is(target error) bool { return target == ErrBadSettings }

// The bounds of a screening's own settings, which an operator sets (admin API).
const (
	minInterval  = 100 * time.Millisecond
	maxInterval  = time.Hour
	maxBatchSize = 100000
	maxMaxActive = 1000000
	minActiveTTL = time.Second
	maxActiveTTL = 24 * time.Hour
)

// Validate refuses settings a screening cannot run with (a zero field means the default): a *SettingsError.
func (s Settings) Validate() error {
	refuse := func(format string, args ...any) error { return &SettingsError{Message: fmt.Sprintf(format, args...)} }
	switch {
	case s.Interval < 0 || (s.Interval > 0 && s.Interval < minInterval) || s.Interval > maxInterval:
		return refuse("admission interval %s: want %s to %s", s.Interval, minInterval, "1h")
	case s.BatchSize < 0 || s.BatchSize > maxBatchSize:
		return refuse("admission batch_size %d: want 1 to %d", s.BatchSize, maxBatchSize)
	case s.MaxActive < 0 || s.MaxActive > maxMaxActive:
		return refuse("admission max_active %d: want 1 to %d", s.MaxActive, maxMaxActive)
	case s.ActiveTTL < 0 || (s.ActiveTTL > 0 && s.ActiveTTL < minActiveTTL) || s.ActiveTTL > maxActiveTTL:
		return refuse("admission active_ttl %s: want %s to %s", s.ActiveTTL, "1s", "24h")
	}
	return nil
}

// Merge returns s with every zero field taken from defaults.
func (s Settings) Merge(defaults Settings) Settings {
	if s.Interval <= 0 {
		s.Interval = defaults.Interval
	}
	if s.BatchSize <= 0 {
		s.BatchSize = defaults.BatchSize
	}
	if s.MaxActive <= 0 {
		s.MaxActive = defaults.MaxActive
	}
	if s.ActiveTTL <= 0 {
		s.ActiveTTL = defaults.ActiveTTL
	}
	if s.LockTTL <= 0 {
		s.LockTTL = defaults.LockTTL
	}
	if s.Grace <= 0 {
		s.Grace = defaults.Grace
	}
	if s.OfferTTL <= 0 {
		s.OfferTTL = defaults.OfferTTL
	}
	return s
}

// offerTTL is how long an offer lasts: OfferTTL, else ten minutes.
func (s Settings) offerTTL() time.Duration {
	if s.OfferTTL > 0 {
		return s.OfferTTL
	}
	return DefaultOfferTTL
}

// DefaultOfferTTL is how long a waitlist's offer lasts when nothing says otherwise (booking.offer_ttl).
const DefaultOfferTTL = 10 * time.Minute

// goneCutoff is the Unix ms at or before which a gone token counts as abandoned at now.
func (s Settings) goneCutoff(now time.Time) int64 {
	if s.Grace <= 0 {
		return -1
	}
	return now.Add(-s.Grace).UnixMilli()
}
