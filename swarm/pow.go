// The proof of work a user solves before it dials for a new place, as the altcha widget would: the
// screening's cost, read once at the start of the run; a challenge fetched and solved with one worker on the
// user's own goroutine, at most one solve per core at once; and what those solves add up to in the report.

package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/waitroom/waitroom/altcha"
)

// screeningInfo is what the run reads of the public screening JSON.
type screeningInfo struct {
	PowCost int `json:"pow_cost"` // 0, or absent from an older server: no proof of work
}

// readScreening reads the screening's public JSON (GET /api/screenings/{id}).
func (s *swarm) readScreening(ctx context.Context, client *http.Client) (screeningInfo, error) {
	var info screeningInfo
	u := s.cfg.URL + "/api/screenings/" + url.PathEscape(s.cfg.Screening)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := getJSON(ctx, client, u, &info); err != nil {
		return info, err
	}
	if info.PowCost < 0 {
		return info, fmt.Errorf("GET %s: pow_cost %d, want 0 or more", u, info.PowCost)
	}
	return info, nil
}

// httpError is a GET answered with another status than 200.
type httpError struct {
	url    string
	status int
	code   string // the error body's code, "" if none
}

func (e *httpError) Error() string { return fmt.Sprintf("GET %s: %d %s", e.url, e.status, e.code) }

// getJSON GETs u and decodes its 200 JSON answer into v; another status is an *httpError with the error
// body's code.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&e)
		return &httpError{url: u, status: resp.StatusCode, code: e.Error.Code}
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: decode: %w", u, err)
	}
	return nil
}

// newSolveSlots is the run's bound on solves at once in this process: one per core, as a bot's tabs share
// its cores. More at once would not solve sooner; they would crowd the sockets' readers off the cores and
// let the challenges of those queued last expire while they wait.
func newSolveSlots() chan struct{} { return make(chan struct{}, runtime.GOMAXPROCS(0)) }

// prove fetches a challenge and solves it, once a solve slot is free, and returns the widget's payload
// for the hello's altcha field. ok false: the ending of the attempt (a failed fetch is tried
// again as a failed dial is; a challenge that cannot be solved is not).
func (v *visit) prove(ctx context.Context, r *result) (payload string, end ending, ok bool) {
	askedAt := time.Now()
	if r.FirstChallengeAt.IsZero() {
		r.FirstChallengeAt = askedAt
	}
	select {
	case v.solveSlots <- struct{}{}:
	case <-ctx.Done():
		return "", ending{kind: stopKind(ctx), err: context.Cause(ctx)}, false
	case <-v.hold:
		return "", ending{kind: kindHoldConnecting, err: errors.New("the hold ended while the user waited to solve")}, false
	}
	defer func() { <-v.solveSlots }()
	r.SolveWaits = append(r.SolveWaits, time.Since(askedAt))
	var ch altcha.Challenge
	fetchCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	err := getJSON(fetchCtx, v.src.client, v.challengeURL, &ch)
	cancel()
	if err != nil {
		r.ChallengeFailures++
		return "", challengeEnding(ctx, err), false
	}
	fetchedAt := time.Now()
	sol, err := altcha.Solve(ctx, ch, 1)
	if err != nil {
		return "", ending{kind: requestKind(ctx, "solve"), err: err}, false
	}
	r.Solves = append(r.Solves, time.Since(fetchedAt))
	return altcha.Payload{Challenge: ch, Solution: sol}.Encode(), ending{}, true
}

// challengeEnding names a failed challenge fetch. What may pass (no answer, 429, a 5xx) is tried again;
// another refusal (404: no such screening) is not.
func challengeEnding(ctx context.Context, err error) ending {
	if ctx.Err() != nil {
		return ending{kind: stopKind(ctx), err: err}
	}
	var he *httpError
	if !errors.As(err, &he) {
		return ending{retry: true, kind: "challenge", err: err}
	}
	kind := fmt.Sprintf("challenge %d", he.status)
	if he.code != "" {
		kind += " " + he.code
	}
	retry := he.status == http.StatusTooManyRequests || he.status >= http.StatusInternalServerError
	return ending{retry: retry, kind: kind, err: err}
}

// Pow is what the users' proofs of work cost them, in a run against a screening that asked for one.
type Pow struct {
	// Cost is the screening's pow_cost: the mean number of key derivations of a solve.
	Cost int `json:"cost"`
	// Solves is each solve, from its challenge fetched to its solution found, one per dial for a new place.
	Solves Spread `json:"solves"`
	// Waits is each solve's wait for a core of this machine's, before its challenge was fetched: the queue
	// the users' solves form when more arrive at once than there are cores.
	Waits Spread `json:"waits"`
	// ChallengeFailures counts the challenge fetches that failed (no answer, or not a 200).
	ChallengeFailures int `json:"challenge_failures"`
}

// Spread summarizes samples by nearest-rank percentiles and the maximum, in milliseconds.
type Spread struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

func summarizeSpread(samples []time.Duration) Spread {
	sorted, maxMs := sortedSamples(samples)
	return Spread{
		Count: len(sorted),
		P50Ms: millis(percentile(sorted, 50)),
		P90Ms: millis(percentile(sorted, 90)),
		P99Ms: millis(percentile(sorted, 99)),
		MaxMs: maxMs,
	}
}

// summarizePow adds up the users' solves; nil when the screening asked for no proof of work.
func summarizePow(cfg Config, results []result) *Pow {
	if cfg.PowCost <= 0 {
		return nil
	}
	p := &Pow{Cost: cfg.PowCost}
	var solves, waits []time.Duration
	for _, r := range results {
		solves = append(solves, r.Solves...)
		waits = append(waits, r.SolveWaits...)
		p.ChallengeFailures += r.ChallengeFailures
	}
	p.Solves, p.Waits = summarizeSpread(solves), summarizeSpread(waits)
	return p
}

// writePow prints the solves' figures, when the run solved.
func (r Report) writePow(p printer) {
	w := r.Pow
	if w == nil {
		return
	}
	p("\nPROOF OF WORK\tCOUNT\tP50\tP90\tP99\tMAX\t(cost %d key derivations)\n", w.Cost)
	for _, row := range []struct {
		name string
		s    Spread
	}{{"solve", w.Solves}, {"wait for a core", w.Waits}} {
		s, l := row.s, Latency{Count: row.s.Count} // showMs reads only the count, to print "-" for none
		p("%s\t%d\t%s\t%s\t%s\t%s\n", row.name, s.Count, showMs(l, s.P50Ms), showMs(l, s.P90Ms), showMs(l, s.P99Ms), showMs(l, s.MaxMs))
	}
	p("challenge failures\t%d\n", w.ChallengeFailures)
	p("(solve: from the challenge fetched to its solution, one worker; wait: for a free core before the fetch)\n")
}
