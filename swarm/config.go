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
	// Line: register, then stay in line, connected and reading pushes, until Config.Duration has passed.
	Line Mode = "line"
	// DeprecatedHold is the old name of Line, still accepted: it shared its word with the hold checkout
	// (Checkout.Mode HoldCheckout), which holds orders, not places in line.
	DeprecatedHold Mode = "hold"
)

// Config is one run.
type Config struct {
	// URL is the server's base URL, http:// or https://; the socket URL is derived from it.
	URL string
	// Screening is the id of the screening every user queues for.
	Screening string
	// Users is how many virtual users take part.
	Users int
	// Concurrency is how many users exist (are connected) at once; 0 means Users. Line mode needs them all.
	Concurrency int
	// Rate is how many users arrive per second at most (0: all at once), like a crowd arriving over some
	// seconds rather than in one instant: 100,000 dials in the same instant overflow the listen backlogs.
	Rate int
	// Seats is how many seats a user reserves; 0 means 1. A user who finds fewer left takes what is left.
	Seats int
	// Best asks the server for that many seats (best available, {"count": n}) instead of naming seats
	// picked from the map; the map is still read, to tell a sale with seats left from one sold out.
	Best bool
	// Retries is how many times a user tries other seats after a 409 SEAT_TAKEN or SEAT_LOCKED before it
	// gives up. 0 means one try only.
	Retries int
	// Timeout bounds the whole run; users still going when it passes end as errors of kind "timeout".
	// 0 means DefaultTimeout, or Duration + 2 minutes in line mode.
	Timeout time.Duration
	// Mode is Flow ("" too) or Line (DeprecatedHold too).
	Mode Mode
	// Duration is how long a hold lasts, from the start of the run; users close their sockets when it
	// passes. Line mode only, and required there.
	Duration time.Duration
	// Leave makes a user in line mode send {"type":"leave"} before it closes; closing alone keeps the place.
	Leave bool
	// Procs is how many processes the users are split over, because one process may hold only so many
	// sockets. 0 means one per usersPerProc connected users. More than 1 re-executes this program
	// (os.Executable) with ChildFlag and a job: its main must hand those to RunChild (cmd/swarm does).
	Procs int
	// TokenInURL sends a user's token (and its proof of work and code) in the socket URL, as clients did
	// before the hello, for a server that does not know auth=message; otherwise they travel in the socket's
	// first message.
	TokenInURL bool
	// Sources is how many loopback addresses users dial from (127.0.0.2 onwards), because each (source,
	// destination) pair has only about 28,000 ephemeral ports. 0 or 1: the system picks, as for any dial.
	Sources int
	// Checkout is how the users pay for what they reserve (flow mode): at once (instant, the default), or
	// by confirming a held order after a delay, or not at all (hold).
	Checkout Checkout
	// Code is an access code every user sends in its hello (in the URL with TokenInURL), for a screening
	// that asks for one: a shared code, since a one-time code lets one place in. "": none.
	Code string
	// PowCost is the screening's proof-of-work cost (its pow_cost) as Run read it at the start of the run:
	// Run sets it, whatever the caller gave, and hands it to the children with the rest. Above 0, a user
	// fetches and solves a challenge before each dial for a new place (a reconnect with its token does not).
	PowCost int
	// Check is what the run checks after its users are done, besides the seat map: the orders in the
	// database and the webhooks the server sent. The parent process does it; children ignore it.
	Check Check
}

// The checkouts a screening can sell with (booking.checkout).
const (
	// Instant: a 201 is a ticket, confirmed as it is made.
	Instant = "instant"
	// HoldCheckout: a 201 holds the seats while the buyer pays; the user confirms it after its pay delay,
	// or lets it lapse.
	HoldCheckout = "hold"
)

// Checkout is how users pay.
type Checkout struct {
	// Mode is Instant ("" too) or HoldCheckout.
	Mode string
	// PayShare is the share of the users with a held order who pay (confirm it); the others let it lapse.
	PayShare float64
	// CancelShare is the share of the payers whose order the operator then cancels (a refund), which puts
	// its seats back on sale.
	CancelShare float64
	// ConfirmKey is the bearer key of POST /api/orders/{code}/confirm (booking.confirm_key); AdminKey the
	// operator's, for the refunds.
	ConfirmKey, AdminKey string
	// PayDelayMin and PayDelayMax bound the pause, uniform between them, from a user's hold to its confirm.
	PayDelayMin, PayDelayMax time.Duration
	// HeldWait is how long an admitted user who finds no seat available but some held waits for them to
	// come back, reading the seat map again every second or so, before it gives up. 0: DefaultHeldWait.
	HeldWait time.Duration
	// WaitlistWait is how long a user told sold_out with the waitlist on stays on it for an offer before it
	// leaves (0: it leaves at once, as without a waitlist).
	WaitlistWait time.Duration
}

// DefaultHeldWait is the wait for held seats of a Checkout whose HeldWait is 0.
const DefaultHeldWait = 30 * time.Second

func (c Checkout) hold() bool { return c.Mode == HoldCheckout }

// Check is the run's end-of-run verification beyond the seat map.
type Check struct {
	// DatabaseURL is the server's PostgreSQL ("": the orders are not checked in SQL).
	DatabaseURL string
	// WebhookListen is the address of the run's webhook receiver ("": none), which webhooks.url of the
	// server points at; WebhookSecret is the server's webhooks.secret, to verify each signature ("": not
	// verified).
	WebhookListen, WebhookSecret string
	// WebhooksExpected makes a missing or badly signed delivery a failure of the run; without it the
	// receiver reports what came, which may be nothing (a server that does not deliver yet).
	WebhooksExpected bool
	// Settle bounds the wait after the users are done, in hold checkout, for the last holds to lapse (none
	// held) and the webhooks to arrive, before the checks read the end state. 0: DefaultSettle.
	Settle time.Duration
}

// DefaultSettle is the settle bound of a Check whose Settle is 0.
const DefaultSettle = 30 * time.Second

// DefaultTimeout is the bound of a flow run whose Config.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

// holdMargin is what a hold run's default timeout adds to Duration: time to connect everyone before and to
// close and collect after.
const holdMargin = 2 * time.Minute

func (c Config) normalized() (Config, error) {
	switch c.Mode {
	case "":
		c.Mode = Flow
	case DeprecatedHold:
		c.Mode = Line
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
		if c.Mode == Line {
			c.Timeout = c.Duration + holdMargin
		}
	}
	if c.Sources <= 0 {
		c.Sources = 1
	}
	if c.Procs <= 0 {
		c.Procs = autoProcs(c.Concurrency)
	}
	if c.Checkout.Mode == "" {
		c.Checkout.Mode = Instant
	}
	if c.Checkout.HeldWait <= 0 {
		c.Checkout.HeldWait = DefaultHeldWait
	}
	if c.Check.Settle <= 0 {
		c.Check.Settle = DefaultSettle
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
	errs = append(errs, c.checkoutErrors()...)
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
			return []error{errors.New("duration and leave are for line mode; this is flow mode")}
		}
		return nil
	case Line:
		var errs []error
		if c.Duration <= 0 {
			errs = append(errs, fmt.Errorf("duration = %s, want more than 0 in line mode", c.Duration))
		} else if c.Timeout <= c.Duration {
			errs = append(errs, fmt.Errorf("timeout %s is not after the hold's duration %s: the hold would be cut short", c.Timeout, c.Duration))
		}
		if c.Concurrency < c.Users {
			errs = append(errs, fmt.Errorf("concurrency = %d: line mode keeps all %d users connected at once", c.Concurrency, c.Users))
		}
		return errs
	}
	return []error{fmt.Errorf("mode %q, want %q or %q", c.Mode, Flow, Line)}
}

// checkoutErrors checks the checkout's settings: hold checkout is flow mode's, and needs the keys of the
// calls its shares make.
func (c Config) checkoutErrors() []error {
	k := c.Checkout
	switch k.Mode {
	case Instant:
		return nil
	case HoldCheckout:
	default:
		return []error{fmt.Errorf("checkout %q, want %q or %q", k.Mode, Instant, HoldCheckout)}
	}
	var errs []error
	if c.Mode != Flow {
		errs = append(errs, errors.New("hold checkout is for flow mode: line mode reserves nothing"))
	}
	for _, s := range []struct {
		name  string
		share float64
	}{{"pay-share", k.PayShare}, {"cancel-share", k.CancelShare}} {
		if s.share < 0 || s.share > 1 {
			errs = append(errs, fmt.Errorf("%s = %g, want 0 to 1", s.name, s.share))
		}
	}
	if k.PayShare > 0 && k.ConfirmKey == "" {
		errs = append(errs, errors.New("pay-share > 0 needs the confirm key (booking.confirm_key)"))
	}
	if k.PayShare > 0 && k.CancelShare > 0 && k.AdminKey == "" {
		errs = append(errs, errors.New("cancel-share > 0 needs the admin key: refunds are the operator's"))
	}
	if k.PayDelayMin < 0 || k.PayDelayMax < k.PayDelayMin {
		errs = append(errs, fmt.Errorf("pay delay %s-%s, want 0 <= min <= max", k.PayDelayMin, k.PayDelayMax))
	}
	return errs
}
