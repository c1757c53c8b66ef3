// Package swarm owns the load test: virtual users that each take the whole path of docs/protocol.md against
// a running server (open the waiting-room socket, wait for pushes, reserve on admission, stop on sold out),
// a progress line while they run, and a report of outcomes, latencies and a check of the seats sold.
//
// Guarantees: at most Config.Concurrency users exist at once (one goroutine and one socket each); every
// socket read and write has a deadline and the whole run ends by Config.Timeout, so Run always returns;
// every goroutine and connection Run starts is stopped and closed before it returns; a user only ever
// reacts to what the server pushes and never polls the status endpoint; every user ends in exactly one
// outcome. The verification compares the seat map after the run with the one before it, so seats that
// were already sold when the run began are not counted as the run's.
package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// requestTimeout bounds one REST call (the seat map, a reservation).
	requestTimeout = 30 * time.Second
	// verifyTimeout bounds the seat-map read of the verification, which runs even after the run was stopped.
	verifyTimeout = 10 * time.Second
	// progressEvery is how often the progress line is redrawn (five times a second).
	progressEvery = 200 * time.Millisecond
	// maxIdleConns caps the idle keep-alive connections the shared HTTP client keeps to the server.
	maxIdleConns = 1024
)

// Config is one run.
type Config struct {
	// URL is the server's base URL, http:// or https://; the socket URL is derived from it.
	URL string
	// Screening is the id of the screening every user queues for.
	Screening string
	// Users is how many virtual users take part.
	Users int
	// Concurrency is how many users exist (are connected) at once; 0 means Users.
	Concurrency int
	// Seats is how many seats a user reserves; 0 means 1. A user who finds fewer left takes what is left.
	Seats int
	// Retries is how many times a user tries other seats after a 409 SEAT_TAKEN or SEAT_LOCKED before it
	// gives up. 0 means one try only.
	Retries int
	// Timeout bounds the whole run; users still going when it passes end as errors of kind "timeout".
	// 0 means 5 minutes.
	Timeout time.Duration
}

// DefaultTimeout is the bound of a run whose Config.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

// errTimeout is the cause of the run's context when Config.Timeout passes.
var errTimeout = errors.New("swarm: run timeout")

func (c Config) normalized() (Config, error) {
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
	}
	var errs []error
	if c.Users < 1 {
		errs = append(errs, fmt.Errorf("users = %d, want at least 1", c.Users))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Errorf("retries = %d, want 0 or more", c.Retries))
	}
	if c.Screening == "" {
		errs = append(errs, errors.New("screening is empty"))
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("url %q: %w", c.URL, err))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("url %q: want http://host[:port] or https://host[:port]", c.URL))
	}
	c.URL = strings.TrimSuffix(c.URL, "/")
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("swarm: config: %w", err)
	}
	return c, nil
}

// swarm is what every user of one run shares: the settings, one HTTP client, one socket dialer.
type swarm struct {
	cfg     Config
	client  *http.Client
	dialer  *websocket.Dialer
	seatURL string
	bookURL string
	wsURL   string
}

func newSwarm(cfg Config) *swarm {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = min(cfg.Concurrency, maxIdleConns)
	transport.MaxIdleConnsPerHost = transport.MaxIdleConns
	screening := url.PathEscape(cfg.Screening)
	ws := "ws" + strings.TrimPrefix(cfg.URL, "http") // http→ws, https→wss
	return &swarm{
		cfg:     cfg,
		client:  &http.Client{Transport: transport, Timeout: requestTimeout},
		dialer:  &websocket.Dialer{HandshakeTimeout: handshakeTimeout, NetDialContext: (&net.Dialer{Timeout: handshakeTimeout}).DialContext},
		seatURL: cfg.URL + "/api/screenings/" + screening + "/seats",
		bookURL: cfg.URL + "/api/screenings/" + screening + "/reservations",
		wsURL:   ws + "/ws/screenings/" + screening,
	}
}

// Run sends cfg.Users virtual users at the server, at most cfg.Concurrency at once, and reports how they
// fared. It redraws a progress line on progress (nil: none) while they run. The error is only for a run
// that could not start (a bad Config, a server or screening that does not answer); a run stopped by ctx or
// by cfg.Timeout still returns its report, with Stopped saying why.
func Run(ctx context.Context, cfg Config, progress io.Writer) (Report, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return Report{}, err
	}
	s := newSwarm(cfg)
	defer s.client.CloseIdleConnections()

	before, err := s.seatMap(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("swarm: seat map of %s before the run: %w", cfg.Screening, err)
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
	defer cancel()
	started := time.Now()
	results := make([]result, cfg.Users)
	var count tally
	stopBar := startBar(progress, &count, cfg.Users)

	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	launched := 0
launch:
	for i := range results {
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
			results[i] = s.user(runCtx)
			count.add(results[i].outcome)
		}()
	}
	for i := launched; i < len(results); i++ {
		results[i] = result{outcome: Error, errKind: stopKind(runCtx), errText: "never started: the run was stopped"}
		count.add(Error)
	}
	wg.Wait()
	elapsed := time.Since(started)
	stopped := ""
	if runCtx.Err() != nil && cancelled(results) {
		stopped = stopKind(runCtx)
	}
	stopBar()

	rep := summarize(cfg, results, elapsed)
	rep.Stopped = stopped
	verifyCtx, cancelVerify := context.WithTimeout(context.WithoutCancel(ctx), verifyTimeout)
	defer cancelVerify()
	after, err := s.seatMap(verifyCtx)
	if err != nil {
		rep.Verification = Verification{Problems: []string{fmt.Sprintf("could not read the seat map after the run: %v", err)}}
		return rep, nil
	}
	rep.Verification = verify(before, after, tickets(results))
	return rep, nil
}

// cancelled reports whether some user ended because the run was stopped.
func cancelled(results []result) bool {
	for _, r := range results {
		if r.errKind == kindTimeout || r.errKind == kindInterrupted {
			return true
		}
	}
	return false
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

// tally is what the progress line shows, counted as users finish.
type tally struct {
	started, ticket, soldOut, gaveUp, errored atomic.Int64
}

func (t *tally) add(o Outcome) {
	switch o {
	case Ticket:
		t.ticket.Add(1)
	case SoldOut:
		t.soldOut.Add(1)
	case GaveUp:
		t.gaveUp.Add(1)
	default:
		t.errored.Add(1)
	}
}

// barWidth is the number of cells of the progress bar.
const barWidth = 30

func (t *tally) draw(w io.Writer, users int) {
	ticket, soldOut, gaveUp, errored := t.ticket.Load(), t.soldOut.Load(), t.gaveUp.Load(), t.errored.Load()
	done := ticket + soldOut + gaveUp + errored
	running := max(t.started.Load()-done, 0)
	filled := int(done * barWidth / int64(users))
	width := len(fmt.Sprint(users))
	fmt.Fprintf(w, "\r[%s%s] %*d/%d  running %*d  ticket %*d  sold_out %*d  gave_up %*d  error %*d",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), width, done, users,
		width, running, width, ticket, width, soldOut, width, gaveUp, width, errored)
}

// startBar redraws the progress line on w until the returned stop is called, which draws it a last time,
// ends the line, and returns once the drawing goroutine has stopped.
func startBar(w io.Writer, t *tally, users int) (stop func()) {
	if w == nil {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				t.draw(w, users)
				fmt.Fprintln(w)
				return
			case <-tick.C:
				t.draw(w, users)
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}
