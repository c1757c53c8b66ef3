// A run split over child processes, because one process may open only so many sockets: the parent shares the
// users out, starts this program again once per share, mirrors each child's progress and merges the results
// they send back; RunChild is the child's side.

package swarm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ChildFlag is the first argument of a child process of a run split over processes; the second is its
// job. A program that runs swarms with Config.Procs > 1 passes both to RunChild.
const ChildFlag = "-child"

const (
	// usersPerProc is how many connected users an automatic split gives one process: one socket each, and
	// a process may open at most 20,000 files (ulimit -Hn here; it cannot be raised).
	usersPerProc = 15000
	// maxUsersPerProc refuses a split that would need more sockets in a process than it may open.
	maxUsersPerProc = 19000
	// childGrace is how long a child has past the run's timeout to report before it is interrupted, and
	// again after that before it is killed.
	childGrace = 30 * time.Second
	// progressPrefix starts a progress report line on a child's stderr.
	progressPrefix = "swarm-progress "
	// maxChildLog bounds what the parent keeps of a child's other stderr output, to explain a failure.
	maxChildLog = 4 << 10
)

// autoProcs is the number of processes for concurrency users connected at once: one per usersPerProc.
func autoProcs(concurrency int) int {
	return max(ceilDiv(concurrency, usersPerProc), 1)
}

func checkProcs(procs, users, concurrency int) []error {
	var errs []error
	if procs > users {
		errs = append(errs, fmt.Errorf("procs = %d for %d users: want at most one process per user", procs, users))
	}
	if perProc := ceilDiv(concurrency, max(procs, 1)); perProc > maxUsersPerProc {
		errs = append(errs, fmt.Errorf("%d users connected at once over %d processes is %d sockets per process; a process may open at most 20,000 files: raise -procs to at least %d",
			concurrency, procs, perProc, ceilDiv(concurrency, maxUsersPerProc)))
	}
	return errs
}

// job is what a child process runs: its share of the run.
type job struct {
	// Config is the run's, with Users and Concurrency this child's share and Procs 1.
	Config Config
	// First is the number of the child's first user in the whole run; its users are First, First+1, …
	First int
	// Start is when the parent started the run: the hold ends at Start+Duration, the run at Start+Timeout.
	Start time.Time
}

// split shares the users and the concurrency out over cfg.Procs children as evenly as they go, in runs of
// consecutive users.
func split(cfg Config, start time.Time) []job {
	jobs := make([]job, cfg.Procs)
	first := 0
	for i := range jobs {
		c := cfg
		c.Users = share(cfg.Users, cfg.Procs, i)
		c.Concurrency = min(max(share(cfg.Concurrency, cfg.Procs, i), 1), c.Users)
		if cfg.Rate > 0 {
			c.Rate = max(share(cfg.Rate, cfg.Procs, i), 1)
		}
		c.Procs = 1
		jobs[i] = job{Config: c, First: first, Start: start}
		first += c.Users
	}
	return jobs
}

// share is part i of n of total: total/n, one more for the first total%n parts.
func share(total, n, i int) int {
	s := total / n
	if i < total%n {
		s++
	}
	return s
}

// runChildren runs the users in cfg.Procs child processes and returns their results in the order of the
// whole run, as runUsers would. A child that fails counts all its users as errors of kind "child".
func runChildren(ctx context.Context, cfg Config, start time.Time, progress io.Writer) []result {
	jobs := split(cfg, start)
	tallies := make([]*tally, len(jobs))
	for i := range tallies {
		tallies[i] = new(tally)
	}
	stopBar := startBar(progress, tallies, cfg)
	// The children stop by themselves at the timeout; this bounds a child that does not.
	childCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Timeout+childGrace))
	defer cancel()
	parts := make([][]result, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { parts[i] = runChild(childCtx, i, j, tallies[i]) })
	}
	wg.Wait()
	stopBar()
	var results []result
	for _, p := range parts {
		results = append(results, p...)
	}
	return results
}

// runChild runs one child process and returns its users' results. A child that fails counts its users as
// errors: of kind "child", or the run's stop if the run was stopped.
func runChild(ctx context.Context, n int, j job, t *tally) []result {
	results, err := child(ctx, j, t)
	if err != nil {
		kind := "child"
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			kind = kindTimeout
		case ctx.Err() != nil:
			kind = kindInterrupted
		}
		results = make([]result, j.Config.Users)
		for i := range results {
			results[i] = result{Outcome: Error, ErrKind: kind, ErrText: fmt.Sprintf("swarm: child %d: %v", n, err)}
		}
		t.store(counts{int64(len(results)), 0, 0, 0, 0, 0, 0, int64(len(results)), 0, 0, 0})
	}
	return results
}

func child(ctx context.Context, j job, t *tally) ([]result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to run it again: %w", err)
	}
	spec, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, ChildFlag, string(spec))
	// A child interrupted reports what it has; one that still does not end in childGrace is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = childGrace
	cmd.SysProcAttr = childProcAttr()
	var out bytes.Buffer
	log := &childLog{tally: t}
	cmd.Stdout, cmd.Stderr = &out, log
	err = cmd.Run()
	// A child that was interrupted (the parent's ctx ended) and then ended well has its results on stdout,
	// though Run reports the interruption.
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		if err == nil {
			err = errors.New("did not run")
		}
		return nil, fmt.Errorf("%w%s", err, log.tail())
	}
	results, err := decodeResults(&out)
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, log.tail())
	}
	if len(results) != j.Config.Users {
		return nil, fmt.Errorf("reported %d users, want %d", len(results), j.Config.Users)
	}
	return results, nil
}

// RunChild is the child process's side of a run split over processes: args are what follows ChildFlag
// (the job). It runs the job's users, reports progress on stderr while they run, and writes their raw
// results to stdout for the parent to merge. It ends at the run's timeout at the latest.
func RunChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("swarm: child: want one argument, the job; got %d", len(args))
	}
	var j job
	if err := json.Unmarshal([]byte(args[0]), &j); err != nil {
		return fmt.Errorf("swarm: child: job: %w", err)
	}
	cfg, err := j.Config.normalized()
	if err != nil {
		return fmt.Errorf("swarm: child: %w", err)
	}
	s := newSwarm(cfg)
	defer s.closeIdle()
	var count tally
	stop := every(progressEvery, func(bool) { reportProgress(stderr, count.load()) })
	results := s.runUsers(ctx, j.First, j.Start, &count)
	stop()
	if err := encodeResults(stdout, results); err != nil {
		return fmt.Errorf("swarm: child: write the results: %w", err)
	}
	return nil
}

// reportProgress writes one progress line for the parent's childLog.
func reportProgress(w io.Writer, c counts) {
	fields := make([]string, len(c))
	for i, n := range c {
		fields[i] = strconv.FormatInt(n, 10)
	}
	fmt.Fprintln(w, progressPrefix+strings.Join(fields, " "))
}

// childLog is a child's stderr as the parent reads it: progress lines update the child's tally, other
// output is kept (its last maxChildLog bytes) to explain a failure.
type childLog struct {
	tally   *tally
	partial []byte
	kept    []byte
}

func (l *childLog) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxChildLog { // a very long line without an end: keep its start only
		l.keep(l.partial)
		l.partial = nil
	}
	return len(p), nil
}

func (l *childLog) line(b []byte) {
	if c, ok := parseProgress(string(b)); ok {
		l.tally.store(c)
		return
	}
	l.keep(append(b, '\n'))
}

func (l *childLog) keep(b []byte) {
	l.kept = append(l.kept, b...)
	if over := len(l.kept) - maxChildLog; over > 0 {
		l.kept = l.kept[over:]
	}
}

// tail is what the child wrote besides progress, as the end of an error message.
func (l *childLog) tail() string {
	s := strings.TrimSpace(string(l.kept) + string(l.partial))
	if s == "" {
		return ""
	}
	return "; its stderr: " + s
}

func parseProgress(line string) (counts, bool) {
	var c counts
	rest, ok := strings.CutPrefix(line, progressPrefix)
	if !ok {
		return c, false
	}
	fields := strings.Fields(rest)
	if len(fields) != len(c) {
		return c, false
	}
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return c, false
		}
		c[i] = n
	}
	return c, true
}

// encodeResults writes results as a child sends them to its parent (gob: compact, and every exported
// field of result goes, so the parent summarizes exactly what the child saw).
func encodeResults(w io.Writer, results []result) error {
	bw := bufio.NewWriter(w)
	if err := gob.NewEncoder(bw).Encode(results); err != nil {
		return err
	}
	return bw.Flush()
}

func decodeResults(r io.Reader) ([]result, error) {
	var results []result
	if err := gob.NewDecoder(r).Decode(&results); err != nil {
		return nil, fmt.Errorf("read the results: %w", err)
	}
	return results, nil
}
