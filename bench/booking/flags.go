// The bench's flags: their names, defaults and help texts, and the checks on them.

package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// options are what the flags ask for.
type options struct {
	users, seats   int
	redisAddr      string
	adminURL       string
	jsonPath       string
	timeout        time.Duration
	coldCatalog    bool
	warm           bool
	requestTimeout time.Duration
	profileDir     string
	checkout       string
}

// parseFlags reads the flags of args (args[0] is the program's name), with help and errors on stdout, and
// checks them.
func parseFlags(args []string, stdout io.Writer) (options, error) {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	var o options
	fs.IntVar(&o.users, "users", 1000, "admitted users, all firing at once")
	fs.IntVar(&o.seats, "seats", 10, "seats of the screening (A1..A<seats>); user i wants seat A(i%seats+1)")
	fs.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis address")
	fs.StringVar(&o.adminURL, "database", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"PostgreSQL admin URL: the bench creates its own database there and drops it at the end")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 60*time.Second, "bound on one request of a burst")
	fs.BoolVar(&o.coldCatalog, "cold-catalog", false,
		"skip the one seat-map read before ours' burst, so the server meets the burst with an empty seat catalog cache "+
			"(real users have opened the waiting room's socket, which fills it, before they hold a pass)")
	fs.BoolVar(&o.warm, "warm", false,
		"give every user a kept-alive connection before the bursts (ours: its seat-map read, as a browser that has just read it; "+
			"floor: /healthz; baseline: a ping of its server), so the bursts pay no TCP connect")
	fs.StringVar(&o.profileDir, "profile", "",
		"write the server's CPU profile of the second from each burst's release to this directory (floor.pprof, ours.pprof; "+
			"go tool pprof reads them)")
	fs.StringVar(&o.checkout, "checkout", "instant",
		`the server's booking.checkout for ours: "instant" (a winner's order is confirmed as it is made) or "hold" (it is held while its buyer pays)`)
	if err := fs.Parse(args[1:]); err != nil {
		return options{}, err
	}
	if o.checkout != "instant" && o.checkout != "hold" {
		return options{}, fmt.Errorf("want -checkout instant or hold, got %q", o.checkout)
	}
	if o.users < 1 || o.seats < 1 || o.seats > 9999 {
		return options{}, fmt.Errorf("want -users ≥ 1 and 1 ≤ -seats ≤ 9999, got %d and %d", o.users, o.seats)
	}
	return o, nil
}
