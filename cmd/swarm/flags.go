// The command's flags: their names, defaults and help texts, and the swarm.Config they make.

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/waitroom/waitroom/swarm"
)

// options are what the flags ask for: the run, and what to do with the report and the profile.
type options struct {
	config swarm.Config
	// cpuProfile is the file for this process's CPU profile ("": none).
	cpuProfile string
	// jsonPath is the file for the JSON report ("": none; "-": stdout).
	jsonPath string
}

// parseFlags reads the flags of args (args[0] is the program's name), writing help and errors on stderr;
// -h returns flag.ErrHelp. $WAITROOM_SWARM_URL, when set, is the default of -url.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultURL := "http://localhost:8080"
	if u := getenv("WAITROOM_SWARM_URL"); u != "" {
		defaultURL = u
	}
	serverURL := fs.String("url", defaultURL, "the server's base URL, $WAITROOM_SWARM_URL when set")
	screening := fs.String("screening", "demo", "the screening every user queues for")
	users := fs.Int("users", 2000, "how many virtual users take part")
	concurrency := fs.Int("concurrency", 0, "how many users are connected at once (0: all of them)")
	seats := fs.Int("seats", 1, "seats each user reserves")
	best := fs.Bool("best", false, `ask the server for the best -seats seats ({"count": n}) instead of naming seats picked from the map`)
	retries := fs.Int("retries", 3, "how often a user tries other seats after a 409 SEAT_TAKEN or SEAT_LOCKED")
	timeout := fs.Duration("timeout", 0, fmt.Sprintf("bound of the whole run (0: %s; in line mode -duration plus 2m)", swarm.DefaultTimeout))
	mode := fs.String("mode", string(swarm.Flow), `"flow": wait, reserve once admitted, leave; "line": register and stay in line, connected, for -duration, measuring the pushes ("hold", its old name, still works)`)
	duration := fs.Duration("duration", 0, "how long a hold lasts, from the start of the run (line mode)")
	leave := fs.Bool("leave", false, `in line mode, send {"type":"leave"} before closing at the end (closing alone keeps the place)`)
	procs := fs.Int("procs", 0, "processes to split the users over, each holding its share of sockets (0: one per 15,000 users connected at once)")
	cpuProfile := fs.String("cpuprofile", "", "write this process's CPU profile to the file (with -procs 1: the children are not profiled)")
	rate := fs.Int("rate", 0, "users arriving per second at most (0: all at once)")
	tokenInURL := fs.Bool("token-in-url", false, "send each user's token as the socket URL's ?token= (for a server older than the hello) instead of in the first message")
	sources := fs.Int("sources", 1, "loopback addresses to dial from, 127.0.0.2 onwards, for more than ~28,000 sockets to one server (1: the system's choice)")
	code := fs.String("code", "", "an access code every user sends in its hello, for a screening that asks for one: a shared code")
	jsonPath := fs.String("json", "", `also write the report as JSON to this file ("-": stdout, and the table to stderr)`)
	checkout := fs.String("checkout", swarm.Instant, `how users pay: "instant" (a 201 is a ticket) or "hold" (a 201 holds the order; the user confirms it after -pay-delay, or not)`)
	payShare := fs.Float64("pay-share", 0.8, "hold checkout: share of the users with a held order who pay; the others let it lapse")
	cancelShare := fs.Float64("cancel-share", 0.05, "hold checkout: share of the payers whose order the operator then cancels (a refund, with -admin-key)")
	confirmKey := fs.String("confirm-key", getenv("WAITROOM_BOOKING_CONFIRM_KEY"), "hold checkout: the server's booking.confirm_key (default $WAITROOM_BOOKING_CONFIRM_KEY)")
	adminKey := fs.String("admin-key", getenv("WAITROOM_ADMIN_KEY"), "the server's admin key, for the refunds (default $WAITROOM_ADMIN_KEY)")
	payDelay := fs.String("pay-delay", "0.5s-3s", "hold checkout: the pause from hold to confirm, uniform in MIN-MAX (or one duration)")
	heldWait := fs.Duration("held-wait", swarm.DefaultHeldWait, "hold checkout: how long an admitted user who finds every free seat held waits for one to come back")
	waitlistWait := fs.Duration("waitlist-wait", 0, "how long a user told sold_out on a screening with a waitlist stays on it for an offer (0: leaves at once)")
	database := fs.String("database", "", "the server's PostgreSQL URL: check the orders there at the end (every seat in one confirmed order or none, none held, each user's order as it saw it)")
	webhookListen := fs.String("webhook-listen", "", "run a webhook receiver on this address (the server's webhooks.url points at it) and count what arrives by webhook-id")
	webhookSecret := fs.String("webhook-secret", getenv("WAITROOM_WEBHOOKS_SECRET"), "the server's webhooks.secret, to verify each delivery's signature (default $WAITROOM_WEBHOOKS_SECRET)")
	webhooksExpected := fs.Bool("webhooks-expected", false, "fail the run when a message of the outbox never reached the receiver or came badly signed (off: report what came, maybe nothing)")
	settle := fs.Duration("settle", swarm.DefaultSettle, "hold checkout: how long to wait after the last user for the last holds to lapse and the webhooks to arrive")
	if err := fs.Parse(args[1:]); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if swarm.Mode(*mode) == swarm.DeprecatedHold {
		fmt.Fprintf(stderr, "swarm: -mode %s is now -mode %s (the word hold is the box office's: -checkout hold)\n", swarm.DeprecatedHold, swarm.Line)
	}
	payMin, payMax, err := parseRange(*payDelay)
	if err != nil {
		return options{}, fmt.Errorf("-pay-delay: %w", err)
	}
	return options{
		config: swarm.Config{
			URL: *serverURL, Screening: *screening, Users: *users, Concurrency: *concurrency,
			Seats: *seats, Best: *best, Retries: *retries, Timeout: *timeout,
			Mode: swarm.Mode(*mode), Duration: *duration, Leave: *leave, Procs: *procs, Sources: *sources, Rate: *rate, TokenInURL: *tokenInURL,
			Code: *code,
			Checkout: swarm.Checkout{Mode: *checkout, PayShare: *payShare, CancelShare: *cancelShare,
				ConfirmKey: *confirmKey, AdminKey: *adminKey, PayDelayMin: payMin, PayDelayMax: payMax, HeldWait: *heldWait,
				WaitlistWait: *waitlistWait},
			Check: swarm.Check{DatabaseURL: *database, WebhookListen: *webhookListen, WebhookSecret: *webhookSecret,
				WebhooksExpected: *webhooksExpected, Settle: *settle},
		},
		cpuProfile: *cpuProfile,
		jsonPath:   *jsonPath,
	}, nil
}

// parseRange reads "MIN-MAX" (two durations) or one duration (MIN = MAX).
func parseRange(s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = time.ParseDuration(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = time.ParseDuration(b); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}
