// The report of a run: what users' results add up to (outcomes, error kinds, latency percentiles), as Run
// returns it and `swarm -json` writes it.

package swarm

import (
	"math"
	"slices"
	"time"
)

// Report is what a run found. Its JSON is what `swarm -json FILE` writes.
type Report struct {
	URL          string `json:"url"`
	Screening    string `json:"screening"`
	Mode         Mode   `json:"mode"`
	Users        int    `json:"users"`
	Concurrency  int    `json:"concurrency"`
	SeatsPerUser int    `json:"seats_per_user"`
	Retries      int    `json:"retries"`
	// DurationMs is the hold's length (hold mode); Leave says users sent leave before closing at its end.
	DurationMs int64 `json:"duration_ms,omitempty"`
	Leave      bool  `json:"leave,omitempty"`
	// Procs is the number of processes the users ran in; Sources the number of source addresses.
	Procs     int   `json:"procs"`
	Sources   int   `json:"sources"`
	ElapsedMs int64 `json:"elapsed_ms"`
	// Stopped is "timeout" or "interrupted" when the run ended before every user did; "" otherwise.
	Stopped  string   `json:"stopped,omitempty"`
	Outcomes Outcomes `json:"outcomes"`
	// Errors counts the error outcomes by kind, with one user's full error as an example.
	Errors map[string]ErrorKind `json:"errors,omitempty"`
	// Reconnects counts the dials beyond each user's first.
	Reconnects   int          `json:"reconnects"`
	Latency      Latencies    `json:"latency"`
	Registration Registration `json:"registration"`
	Push         Push         `json:"push"`
	Verification Verification `json:"verification"`
}

// Outcomes counts the users by how their visit ended; they add up to Users. Held and Admitted are hold
// mode's, Ticket and GaveUp flow mode's.
type Outcomes struct {
	Ticket   int `json:"ticket"`
	SoldOut  int `json:"sold_out"`
	GaveUp   int `json:"gave_up"`
	Held     int `json:"held,omitempty"`
	Admitted int `json:"admitted,omitempty"`
	Error    int `json:"error"`
}

// ErrorKind is one kind of error outcome.
type ErrorKind struct {
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// Latencies are the three measured waits.
type Latencies struct {
	// Connect is from dialing to the first message, once per user that got one.
	Connect Latency `json:"connect"`
	// Queue is from the first message to admitted, once per admitted user.
	Queue Latency `json:"queue"`
	// Reservation is the round trip of every POST of a reservation.
	Reservation Latency `json:"reservation"`
}

// Latency summarizes samples by nearest-rank percentiles and the maximum, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// summarize counts the results of a run, in whichever processes they ran; the verification is left to the
// caller.
func summarize(cfg Config, results []result, elapsed time.Duration) Report {
	rep := Report{
		URL: cfg.URL, Screening: cfg.Screening, Mode: cfg.Mode, Users: cfg.Users, Concurrency: cfg.Concurrency,
		SeatsPerUser: cfg.Seats, Retries: cfg.Retries, DurationMs: cfg.Duration.Milliseconds(), Leave: cfg.Leave,
		Procs: cfg.Procs, Sources: cfg.Sources, ElapsedMs: elapsed.Milliseconds(),
	}
	var connect, inQueue, reservation []time.Duration
	for _, r := range results {
		rep.count(r)
		rep.Reconnects += r.Reconnects
		if r.Connected {
			connect = append(connect, r.Connect)
		}
		if r.WasAdmitted {
			inQueue = append(inQueue, r.InQueue)
		}
		reservation = append(reservation, r.Reservations...)
	}
	rep.Latency = Latencies{Connect: summarizeLatency(connect), Queue: summarizeLatency(inQueue), Reservation: summarizeLatency(reservation)}
	rep.Registration = summarizeRegistration(results)
	rep.Push = summarizePush(results)
	return rep
}

// count adds r's outcome, and its error if it is one.
func (rep *Report) count(r result) {
	switch r.Outcome {
	case Ticket:
		rep.Outcomes.Ticket++
	case SoldOut:
		rep.Outcomes.SoldOut++
	case GaveUp:
		rep.Outcomes.GaveUp++
	case Held:
		rep.Outcomes.Held++
	case Admitted:
		rep.Outcomes.Admitted++
	default:
		rep.Outcomes.Error++
		if rep.Errors == nil {
			rep.Errors = map[string]ErrorKind{}
		}
		k := rep.Errors[r.ErrKind]
		k.Count++
		if k.Example == "" {
			k.Example = r.ErrText
		}
		rep.Errors[r.ErrKind] = k
	}
}

func summarizeLatency(samples []time.Duration) Latency {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	l := Latency{
		Count: len(sorted),
		P50Ms: millis(percentile(sorted, 50)),
		P95Ms: millis(percentile(sorted, 95)),
		P99Ms: millis(percentile(sorted, 99)),
	}
	if len(sorted) > 0 {
		l.MaxMs = millis(sorted[len(sorted)-1])
	}
	return l
}

// percentile is the nearest-rank p-th percentile of sorted: the smallest sample with at least p% of the
// samples at or below it. It is 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}
