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
	"strings"
	"syscall"

	_ "github.com/lib/pq" // the -database check's driver

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
// (by -timeout or a signal) exits non-zero too, and so does one in which any user ended in error: a load
// test whose users failed did not measure what it says.
var errVerification = errors.New("verification failed: see the report")

// run parses the flags, runs the swarm with its progress line on stderr, and prints the report on stdout
// (on stderr when -json is "-", so stdout carries only the JSON). $WAITROOM_SWARM_URL, when set, is the
// default of -url. Started as a child of a run split over processes (swarm.ChildFlag first), it runs its
// share instead: its stdout then carries the raw results for the parent.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == swarm.ChildFlag {
		return swarm.RunChild(ctx, args[2:], stdout, stderr)
	}
	o, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		stopProfile, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	rep, err := swarm.Run(ctx, o.config, stderr)
	if err != nil {
		return err
	}
	if err := writeReport(rep, o.jsonPath, stdout, stderr); err != nil {
		return err
	}
	if !rep.Verification.OK {
		return errVerification
	}
	if rep.Stopped != "" {
		return fmt.Errorf("stopped early (%s): the report covers only what happened until then", rep.Stopped)
	}
	return usersInError(rep)
}

// usersInError is the command's error for a run in which users ended in error (nil: none did), naming the
// server's limits when they refused some.
func usersInError(rep swarm.Report) error {
	if rep.Outcomes.Error == 0 {
		return nil
	}
	err := fmt.Errorf("%d of %d users ended in error (the report's ERROR KIND)", rep.Outcomes.Error, rep.Users)
	if len(rep.Limits) == 0 {
		return err
	}
	refused := 0
	var settings []string
	for _, h := range rep.Limits {
		refused += h.Users
		settings = append(settings, h.Settings...)
	}
	return fmt.Errorf("%w; %d of them refused by the server's %s: %s", err, refused, strings.Join(settings, ", "), swarm.LimitAdvice(rep.Limits))
}

// startCPUProfile profiles this process into the file at path until stop is called. The load generator
// shares the cores with the server: its own cost is part of every figure.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeReport prints the report's table on stdout, or on stderr when the JSON goes to stdout ("-"), and
// writes the JSON when jsonPath is set.
func writeReport(rep swarm.Report, jsonPath string, stdout, stderr io.Writer) error {
	table := stdout
	if jsonPath == "-" {
		table = stderr
	}
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	if jsonPath == "" {
		return nil
	}
	return writeJSON(jsonPath, stdout, rep)
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
