// Package swarm owns the load test: virtual users that each take the path of docs/protocol.md against a
// running server, a progress line while they run, and a report of outcomes, latencies, the pushes users
// saw and a check of the seats sold.
//
// Two modes. Flow: each user opens the waiting-room socket, waits for pushes, reserves on admission and
// stops on sold out. Line: every user registers and stays connected, reading pushes, until Duration has
// passed, then closes; it measures how late position messages arrive and which ticks a user missed.
//
// Flow mode pays in one of two checkouts (Config.Checkout): instant, where a 201 is a ticket, or hold,
// where a 201 holds the order and the user confirms it after a pay delay, or never does; the operator
// refunds a share of those who paid. At the end of a run the orders can be checked in PostgreSQL and the
// webhooks counted by a receiver the run starts (Config.Check).
//
// Against a screening that asks for a proof of work (its pow_cost, read once at the start), each user
// fetches an ALTCHA challenge and solves it with one worker before it dials for a new place, as a browser
// tab would, at most one solve per core at once; a reconnect with its token solves nothing. The report adds
// what the solves took and how fast the users registered from the first challenge on.
//
// Guarantees: at most Config.Concurrency users exist at once (one goroutine and one socket each); every
// socket read and write has a deadline and the whole run ends by Config.Timeout, so Run always returns;
// every goroutine, connection and child process Run starts is stopped, closed or waited for before it
// returns; a user only ever reacts to what the server pushes and never polls the status endpoint; every
// user ends in exactly one outcome. A run split over child processes (Config.Procs) reports exactly what
// one process would for the same per-user results. The verification compares the seat map after the run
// with the one before it, so seats that were already sold when the run began are not counted as the run's.
//
// Files: swarm.go (Run), config.go (what a run is asked to do, and its checks), user.go (one user's visit),
// reserve.go (its REST calls once admitted), checkout.go (paying in hold checkout), pow.go (the proof of
// work it solves), result.go (what a visit leaves behind), report.go and table.go (the report, and its
// tables), progress.go (the progress line), push.go (what users saw of the pushes), limits.go (which
// server limit refused whom), message.go (the server's messages, decoded), verify.go (the seats sold,
// checked), orders.go (the orders in PostgreSQL, checked), webhooks.go (the run's webhook receiver),
// sources.go (the source addresses), procs.go (a run over child processes), wsdial.go, wsclient.go,
// wsframe.go (the client side of a WebSocket), reactor_linux.go, connreader.go, reactor_other.go (reading
// many sockets: epoll on Linux, a goroutine per socket elsewhere), procattr_linux.go, procattr_other.go (the
// process and socket options per system).
package swarm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

const (
	// requestTimeout bounds one REST call (the seat map, a reservation).
	requestTimeout = 30 * time.Second
	// verifyTimeout bounds the seat-map read of the verification, which runs even after the run was stopped.
	verifyTimeout = 10 * time.Second
	// progressEvery is how often the progress line is redrawn (five times a second).
	progressEvery = 200 * time.Millisecond
	// maxIdleConns caps the idle keep-alive connections one HTTP client keeps to the server.
	maxIdleConns = 1024
)

// errTimeout is the cause of the run's context when Config.Timeout passes.
var errTimeout = errors.New("swarm: run timeout")

// swarm is what every user of one process shares: the settings, and one HTTP client and socket dialer per
// source address.
type swarm struct {
	cfg     Config
	sources []source
	seatURL string
	bookURL string
	wsURL   string
	// challengeURL is the screening's challenge route; solveSlots bounds the solves at once (newSolveSlots).
	challengeURL string
	solveSlots   chan struct{}
	// rx reads this process's plain sockets (nil: each socket has a reading goroutine).
	rx *reactor
}

func newSwarm(cfg Config) *swarm {
	screening := url.PathEscape(cfg.Screening)
	ws := "ws" + strings.TrimPrefix(cfg.URL, "http") // http→ws, https→wss
	return &swarm{
		cfg:     cfg,
		sources: newSources(sourceAddrs(cfg.Sources), cfg.Concurrency),
		seatURL: cfg.URL + "/api/screenings/" + screening + "/seats",
		bookURL: cfg.URL + "/api/screenings/" + screening + "/reservations",
		wsURL:   ws + "/ws/screenings/" + screening,

		challengeURL: cfg.URL + "/api/screenings/" + screening + "/challenge",
		solveSlots:   newSolveSlots(),
	}
}

func (s *swarm) closeIdle() {
	for _, src := range s.sources {
		src.client.CloseIdleConnections()
	}
}

// Run sends cfg.Users virtual users at the server, at most cfg.Concurrency at once, and reports how they
// fared. It redraws a progress line on progress (nil: none) while they run. The error is only for a run
// that could not start (a bad Config, a server or screening that does not answer, a database or webhook
// receiver asked for that cannot be had); a run stopped by ctx or by cfg.Timeout still returns its report,
// with Stopped saying why.
func Run(ctx context.Context, cfg Config, progress io.Writer) (Report, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return Report{}, err
	}
	s := newSwarm(cfg)
	defer s.closeIdle()

	info, err := s.readScreening(ctx, s.sources[0].client)
	if err != nil {
		return Report{}, fmt.Errorf("swarm: screening %s: %w", cfg.Screening, err)
	}
	s.cfg.PowCost = info.PowCost
	cfg = s.cfg // the users read s.cfg; the rest of the run, its children and report read the same settings
	before, err := s.seatMap(ctx, s.sources[0].client)
	if err != nil {
		return Report{}, fmt.Errorf("swarm: seat map of %s before the run: %w", cfg.Screening, err)
	}
	ends, err := openEnds(ctx, cfg.Check)
	if err != nil {
		return Report{}, err
	}
	defer ends.close()

	started := time.Now()
	var results []result
	if cfg.Procs == 1 {
		var count tally
		stopBar := startBar(progress, []*tally{&count}, cfg)
		results = s.runUsers(ctx, 0, started, &count)
		stopBar()
	} else {
		results = runChildren(ctx, cfg, started, progress)
	}
	elapsed := time.Since(started)

	rep := summarize(cfg, results, elapsed)
	rep.Stopped = stoppedBy(results)
	if cfg.Mode == Line {
		rep.Verification = Verification{OK: true, Skipped: "line mode reserves nothing"}
		return rep, nil
	}
	verifyCtx, cancelVerify := context.WithTimeout(context.WithoutCancel(ctx), verifyTimeout+cfg.Check.Settle)
	defer cancelVerify()
	var settled time.Duration
	if cfg.Checkout.hold() {
		settled = s.settle(verifyCtx, ends)
	}
	after, err := s.seatMap(verifyCtx, s.sources[0].client)
	if err != nil {
		rep.Verification = Verification{Problems: []string{fmt.Sprintf("could not read the seat map after the run: %v", err)}}
		return rep, nil
	}
	rep.Verification = verify(before, after, tickets(results))
	if cfg.Checkout.hold() || ends.db != nil || ends.rc != nil {
		box := summarizeBoxOffice(cfg, results, rep)
		box.SettleMs = settled.Milliseconds()
		rep.Verification.Problems = append(rep.Verification.Problems, ends.check(verifyCtx, cfg, results, &box, rep.Registration.FirstDialAtMs)...)
		sort.Strings(rep.Verification.Problems)
		rep.Verification.OK = len(rep.Verification.Problems) == 0
		rep.BoxOffice = &box
	}
	return rep, nil
}

// ends are what the run checks at its end besides the seat map: the database, and the webhook receiver,
// each nil when not asked for.
type ends struct {
	db *sql.DB
	rc *receiver
}

// openEnds opens the database and starts the receiver the check asks for, before any user starts.
func openEnds(ctx context.Context, check Check) (ends, error) {
	var e ends
	if check.DatabaseURL != "" {
		db, err := sql.Open("postgres", check.DatabaseURL)
		if err != nil {
			return e, fmt.Errorf("swarm: database: %w", err)
		}
		pingCtx, cancel := context.WithTimeout(ctx, verifyTimeout)
		defer cancel()
		if err := db.PingContext(pingCtx); err != nil {
			db.Close()
			return e, fmt.Errorf("swarm: database: %w", err)
		}
		e.db = db
	}
	if check.WebhookListen != "" {
		rc, err := startReceiver(check.WebhookListen, check.WebhookSecret)
		if err != nil {
			e.close()
			return ends{}, err
		}
		e.rc = rc
	}
	return e, nil
}

func (e ends) close() {
	if e.rc != nil {
		e.rc.stop()
	}
	if e.db != nil {
		e.db.Close()
	}
}

// settlePoll is how often the settle looks at the end state.
const settlePoll = time.Second

// settle waits, up to the check's Settle, until no seat is held (the sweeper expired the last lapsed
// holds) and, when deliveries are expected, every message of the outbox reached the receiver; it returns
// how long it waited.
func (s *swarm) settle(ctx context.Context, e ends) time.Duration {
	start := time.Now()
	deadline := start.Add(s.cfg.Check.Settle)
	for time.Now().Before(deadline) && s.unsettled(ctx, e) {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(settlePoll):
		}
	}
	return time.Since(start)
}

func (s *swarm) unsettled(ctx context.Context, e ends) bool {
	seats, err := s.seatMap(ctx, s.sources[0].client)
	if err != nil || anyHeld(seats) {
		return true
	}
	if e.db == nil {
		return false
	}
	if n, err := heldOrders(ctx, e.db, s.cfg.Screening); err != nil || n > 0 {
		return true
	}
	if e.rc == nil || !s.cfg.Check.WebhooksExpected {
		return false
	}
	st, err := readOrders(ctx, e.db, s.cfg.Screening)
	if err != nil {
		return true
	}
	ids, _ := st.outboxIDs()
	return !e.rc.has(ids)
}

// check reads the end state of the orders and the webhooks into box and returns the problems found.
func (e ends) check(ctx context.Context, cfg Config, results []result, box *BoxOffice, firstDialAtMs int64) []string {
	var problems []string
	var outbox []string
	delivered := 0
	if e.db == nil {
		box.Orders = Orders{Skipped: "no database URL"}
	} else if st, err := readOrders(ctx, e.db, cfg.Screening); err != nil {
		problems = append(problems, fmt.Sprintf("could not read the orders after the run: %v", err))
	} else {
		var found []string
		box.Orders, found = checkOrders(st, results)
		problems = append(problems, found...)
		outbox, delivered = st.outboxIDs()
		if box.Orders.Available == 0 && box.Orders.Held == 0 && box.Orders.LastConfirmedAtMs > 0 && firstDialAtMs > 0 {
			box.SoldOutMs = box.Orders.LastConfirmedAtMs - firstDialAtMs
		}
	}
	if e.rc != nil {
		box.Webhooks = e.rc.report(cfg.Check, outbox, delivered)
		problems = append(problems, box.Webhooks.problems()...)
	}
	return problems
}

// runUsers runs this process's users, numbered first, first+1, … in the whole run (the number picks the
// source address), and returns their results in that order. The run ends at start+Timeout, a hold at
// start+Duration: children of one run get the same start, so they stop together.
func (s *swarm) runUsers(ctx context.Context, first int, start time.Time, count *tally) []result {
	cfg := s.cfg
	runCtx, cancel := context.WithDeadlineCause(ctx, start.Add(cfg.Timeout), errTimeout)
	defer cancel()
	var hold <-chan struct{} // closed when the hold ends; nil (never) in flow mode
	if cfg.Mode == Line {
		// Not derived from runCtx: a stopped run is not a hold that ended.
		holdCtx, cancelHold := context.WithDeadline(context.WithoutCancel(ctx), start.Add(cfg.Duration))
		defer cancelHold()
		hold = holdCtx.Done()
	}
	if rx, err := newReactor(); err == nil {
		s.rx = rx
		defer rx.close() // after wg.Wait below: every user has released its socket
	} else {
		// Still a run: each socket reads with a goroutine of its own, at a higher cost per message.
		fmt.Fprintf(os.Stderr, "swarm: no reactor (%v): a reading goroutine per socket\n", err)
	}
	results := make([]result, cfg.Users)
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	launched := 0
	launchedAt := time.Now()
launch:
	for i := range results {
		if cfg.Rate > 0 {
			due := launchedAt.Add(time.Duration(i) * time.Second / time.Duration(cfg.Rate))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-time.After(wait):
				case <-runCtx.Done():
					break launch
				}
			}
		}
		select {
		case sem <- struct{}{}:
		case <-runCtx.Done():
			break launch
		}
		launched++
		count.started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			v := visit{swarm: s, src: &s.sources[sourceOf(first+i, len(s.sources))], hold: hold, count: count}
			results[i] = v.run(runCtx)
			count.add(results[i].Outcome)
		}()
	}
	for i := launched; i < len(results); i++ {
		results[i] = result{Outcome: Error, ErrKind: stopKind(runCtx), ErrText: "never started: the run was stopped"}
		count.add(Error)
	}
	wg.Wait()
	return results
}

// stoppedBy says why the run ended before every user did ("timeout" or "interrupted"), or "" if it did not.
func stoppedBy(results []result) string {
	for _, r := range results {
		if r.ErrKind == kindTimeout || r.ErrKind == kindInterrupted {
			return r.ErrKind
		}
	}
	return ""
}

const (
	kindTimeout     = "timeout"
	kindInterrupted = "interrupted"
)

// stopKind names why ctx ended: the run's own timeout, or the caller (a signal, a test).
func stopKind(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return kindTimeout
	}
	return kindInterrupted
}
