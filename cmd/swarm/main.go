// Command swarm is the load test: it sends virtual users through the whole waiting-room flow of a running
// server and prints what happened. Wiring and flags only; package swarm does the work.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/waitroom/waitroom/swarm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "swarm:", err)
		os.Exit(1)
	}
}

// errVerification makes the exit status say the seats sold did not match the tickets. A run stopped early
// (by -timeout or a signal) exits non-zero too; error outcomes alone do not, the report counts them.
var errVerification = errors.New("verification failed: see the report")

// run parses the flags, runs the swarm with its progress line on stderr, and prints the report on stdout
// (on stderr when -json is "-", so stdout carries only the JSON). $WAITROOM_SWARM_URL, when set, is the
// default of -url. Started as a child of a run split over processes (swarm.ChildFlag first), it runs its
// share instead: its stdout then carries the raw results for the parent.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == swarm.ChildFlag {
		return swarm.RunChild(ctx, args[2:], stdout, stderr)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultURL := "http://localhost:8080"
	if u := getenv("WAITROOM_SWARM_URL"); u != "" {
		defaultURL = u
	}
	serverURL := fs.String("url", defaultURL, "the server's base URL (default from $WAITROOM_SWARM_URL when set)")
	screening := fs.String("screening", "demo", "the screening every user queues for")
	users := fs.Int("users", 2000, "how many virtual users take part")
	concurrency := fs.Int("concurrency", 0, "how many users are connected at once (0: all of them)")
	seats := fs.Int("seats", 1, "seats each user reserves")
	retries := fs.Int("retries", 3, "how often a user tries other seats after a 409 SEAT_TAKEN or SEAT_LOCKED")
	timeout := fs.Duration("timeout", 0, fmt.Sprintf("bound of the whole run (0: %s; in hold mode -duration plus 2m)", swarm.DefaultTimeout))
	mode := fs.String("mode", string(swarm.Flow), `"flow": wait, reserve once admitted, leave; "hold": register and stay connected for -duration, measuring the pushes`)
	duration := fs.Duration("duration", 0, "how long a hold lasts, from the start of the run (hold mode)")
	leave := fs.Bool("leave", false, `in hold mode, send {"type":"leave"} before closing at the end (closing alone keeps the place)`)
	procs := fs.Int("procs", 0, "processes to split the users over, each holding its share of sockets (0: one per 15,000 users connected at once)")
	cpuProfile := fs.String("cpuprofile", "", "write this process's CPU profile to the file (with -procs 1: the children are not profiled)")
	rate := fs.Int("rate", 0, "users arriving per second at most (0: all at once)")
	sources := fs.Int("sources", 1, "loopback addresses to dial from, 127.0.0.2 onwards, for more than ~28,000 sockets to one server (1: the system's choice)")
	jsonPath := fs.String("json", "", `also write the report as JSON to this file ("-": stdout, and the table to stderr)`)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *cpuProfile != "" {
		// The load generator shares the cores with the server: its own cost is part of every figure.
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	rep, err := swarm.Run(ctx, swarm.Config{
		URL: *serverURL, Screening: *screening, Users: *users, Concurrency: *concurrency,
		Seats: *seats, Retries: *retries, Timeout: *timeout,
		Mode: swarm.Mode(*mode), Duration: *duration, Leave: *leave, Procs: *procs, Sources: *sources, Rate: *rate,
	}, stderr)
	if err != nil {
		return err
	}
	table := stdout
	if *jsonPath == "-" {
		table = stderr
	}
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	if *jsonPath != "" {
		if err := writeJSON(*jsonPath, stdout, rep); err != nil {
			return err
		}
	}
	if !rep.Verification.OK {
		return errVerification
	}
	if rep.Stopped != "" {
		return fmt.Errorf("stopped early (%s): the report covers only what happened until then", rep.Stopped)
	}
	return nil
}

func writeJSON(path string, stdout io.Writer, rep swarm.Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write the JSON report: %w", err)
	}
	return nil
}
