// What one run is asked to do (Config, Mode), its defaults, and the checks that refuse a run that cannot work
// before anything is dialed.

package swarm

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Mode is what the virtual users do.
type Mode string

// The modes.
const (
	// Flow: wait in line, reserve once admitted, leave. The default.
	Flow Mode = "flow"
	// Hold: register, then stay connected reading pushes until Config.Duration has passed.
	Hold Mode = "hold"
)

// Config is one run.
type Config struct {
	// URL is the server's base URL, http:// or https://; the socket URL is derived from it.
	URL string
	// Screening is the id of the screening every user queues for.
	Screening string
	// Users is how many virtual users take part.
	Users int
	// Concurrency is how many users exist (are connected) at once; 0 means Users. Hold mode needs them all.
	Concurrency int
	// Rate is how many users arrive per second at most (0: all at once), like a crowd arriving over some
	// seconds rather than in one instant: 100,000 dials in the same instant overflow the listen backlogs.
	Rate int
	// Seats is how many seats a user reserves; 0 means 1. A user who finds fewer left takes what is left.
	Seats int
	// Retries is how many times a user tries other seats after a 409 SEAT_TAKEN or SEAT_LOCKED before it
	// gives up. 0 means one try only.
	Retries int
	// Timeout bounds the whole run; users still going when it passes end as errors of kind "timeout".
	// 0 means DefaultTimeout, or Duration + 2 minutes in hold mode.
	Timeout time.Duration
	// Mode is Flow ("" too) or Hold.
	Mode Mode
	// Duration is how long a hold lasts, from the start of the run; users close their sockets when it
	// passes. Hold mode only, and required there.
	Duration time.Duration
	// Leave makes a user in hold mode send {"type":"leave"} before it closes; closing alone keeps the place.
	Leave bool
	// Procs is how many processes the users are split over, because one process may hold only so many
	// sockets. 0 means one per usersPerProc connected users. More than 1 re-executes this program
	// (os.Executable) with ChildFlag and a job: its main must hand those to RunChild (cmd/swarm does).
	Procs int
	// Sources is how many loopback addresses users dial from (127.0.0.2 onwards), because each (source,
	// destination) pair has only about 28,000 ephemeral ports. 0 or 1: the system picks, as for any dial.
	Sources int
}

// DefaultTimeout is the bound of a flow run whose Config.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

// holdMargin is what a hold run's default timeout adds to Duration: time to connect everyone before and to
// close and collect after.
const holdMargin = 2 * time.Minute

func (c Config) normalized() (Config, error) {
	if c.Mode == "" {
		c.Mode = Flow
	}
	if c.Concurrency <= 0 {
		c.Concurrency = c.Users
	}
	if c.Concurrency > c.Users {
		c.Concurrency = c.Users
	}
	if c.Seats <= 0 {
		c.Seats = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
		if c.Mode == Hold {
			c.Timeout = c.Duration + holdMargin
		}
	}
	if c.Sources <= 0 {
		c.Sources = 1
	}
	if c.Procs <= 0 {
		c.Procs = autoProcs(c.Concurrency)
	}
	var errs []error
	if c.Users < 1 {
		errs = append(errs, fmt.Errorf("users = %d, want at least 1", c.Users))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Errorf("retries = %d, want 0 or more", c.Retries))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate = %d, want 0 (all at once) or more", c.Rate))
	}
	if c.Screening == "" {
		errs = append(errs, errors.New("screening is empty"))
	}
	errs = append(errs, c.modeErrors()...)
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("url %q: %w", c.URL, err))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("url %q: want http://host[:port] or https://host[:port]", c.URL))
	default:
		errs = append(errs, checkSources(u.Hostname(), c.Sources, c.Concurrency)...)
	}
	errs = append(errs, checkProcs(c.Procs, c.Users, c.Concurrency)...)
	c.URL = strings.TrimSuffix(c.URL, "/")
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("swarm: config: %w", err)
	}
	return c, nil
}

// modeErrors checks the settings that depend on the mode.
func (c Config) modeErrors() []error {
	switch c.Mode {
	case Flow:
		if c.Duration != 0 || c.Leave {
			return []error{errors.New("duration and leave are for hold mode; this is flow mode")}
		}
		return nil
	case Hold:
		var errs []error
		if c.Duration <= 0 {
			errs = append(errs, fmt.Errorf("duration = %s, want more than 0 in hold mode", c.Duration))
		} else if c.Timeout <= c.Duration {
			errs = append(errs, fmt.Errorf("timeout %s is not after the hold's duration %s: the hold would be cut short", c.Timeout, c.Duration))
		}
		if c.Concurrency < c.Users {
			errs = append(errs, fmt.Errorf("concurrency = %d: hold mode keeps all %d users connected at once", c.Concurrency, c.Users))
		}
		return errs
	}
	return []error{fmt.Errorf("mode %q, want %q or %q", c.Mode, Flow, Hold)}
}
