package swarm

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a run found. Its JSON is what `swarm -json FILE` writes.
type Report struct {
	URL          string `json:"url"`
	Screening    string `json:"screening"`
	Users        int    `json:"users"`
	Concurrency  int    `json:"concurrency"`
	SeatsPerUser int    `json:"seats_per_user"`
	Retries      int    `json:"retries"`
	ElapsedMs    int64  `json:"elapsed_ms"`
	// Stopped is "timeout" or "interrupted" when the run ended before every user did; "" otherwise.
	Stopped  string   `json:"stopped,omitempty"`
	Outcomes Outcomes `json:"outcomes"`
	// Errors counts the error outcomes by kind, with one user's full error as an example.
	Errors map[string]ErrorKind `json:"errors,omitempty"`
	// Reconnects counts the dials beyond each user's first.
	Reconnects   int          `json:"reconnects"`
	Latency      Latencies    `json:"latency"`
	Verification Verification `json:"verification"`
}

// Outcomes counts the users by how their visit ended; the four add up to Users.
type Outcomes struct {
	Ticket  int `json:"ticket"`
	SoldOut int `json:"sold_out"`
	GaveUp  int `json:"gave_up"`
	Error   int `json:"error"`
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

// Latency summarizes samples by nearest-rank percentiles, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// Verification compares the seat map with the tickets: the seats sold during the run must be exactly the
// seats of the run's tickets, and no seat may be in two tickets.
type Verification struct {
	OK bool `json:"ok"`
	// SoldBefore counts the seats already sold when the run began; they are not the run's to explain.
	SoldBefore int `json:"sold_before"`
	// SoldDuring counts the seats sold after the run and not before it.
	SoldDuring int `json:"sold_during"`
	Tickets    int `json:"tickets"`
	// TicketSeats sums the seats of all tickets.
	TicketSeats int `json:"ticket_seats"`
	// Problems lists every discrepancy, one sentence each, sorted.
	Problems []string `json:"problems,omitempty"`
}

// summarize counts the results of a run; the verification is left to the caller.
func summarize(cfg Config, results []result, elapsed time.Duration) Report {
	rep := Report{
		URL: cfg.URL, Screening: cfg.Screening, Users: cfg.Users, Concurrency: cfg.Concurrency,
		SeatsPerUser: cfg.Seats, Retries: cfg.Retries, ElapsedMs: elapsed.Milliseconds(),
	}
	var connect, inQueue, reservation []time.Duration
	for _, r := range results {
		switch r.outcome {
		case Ticket:
			rep.Outcomes.Ticket++
		case SoldOut:
			rep.Outcomes.SoldOut++
		case GaveUp:
			rep.Outcomes.GaveUp++
		default:
			rep.Outcomes.Error++
			if rep.Errors == nil {
				rep.Errors = map[string]ErrorKind{}
			}
			k := rep.Errors[r.errKind]
			k.Count++
			if k.Example == "" {
				k.Example = r.errText
			}
			rep.Errors[r.errKind] = k
		}
		rep.Reconnects += r.reconnects
		if r.connected {
			connect = append(connect, r.connect)
		}
		if r.admitted {
			inQueue = append(inQueue, r.inQueue)
		}
		reservation = append(reservation, r.reservations...)
	}
	rep.Latency = Latencies{Connect: summarizeLatency(connect), Queue: summarizeLatency(inQueue), Reservation: summarizeLatency(reservation)}
	return rep
}

// tickets returns the seats of every ticket of a run.
func tickets(results []result) [][]string {
	var out [][]string
	for _, r := range results {
		if r.outcome == Ticket {
			out = append(out, r.seats)
		}
	}
	return out
}

func summarizeLatency(samples []time.Duration) Latency {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return Latency{
		Count: len(sorted),
		P50Ms: millis(percentile(sorted, 50)),
		P95Ms: millis(percentile(sorted, 95)),
		P99Ms: millis(percentile(sorted, 99)),
	}
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

// verify checks the seat map after a run against the one before it and the run's tickets: every seat sold
// during the run is in exactly one ticket, every ticket seat is sold and was not sold before, and a seat
// sold before is still sold.
func verify(before, after []seat, tickets [][]string) Verification {
	v := Verification{Tickets: len(tickets)}
	soldBefore := map[string]bool{}
	for _, s := range before {
		if s.Status == "sold" {
			soldBefore[s.ID] = true
		}
	}
	v.SoldBefore = len(soldBefore)
	status := make(map[string]string, len(after))
	for _, s := range after {
		status[s.ID] = s.Status
		if s.Status == "sold" && !soldBefore[s.ID] {
			v.SoldDuring++
		}
	}
	inTickets := map[string]int{}
	for _, t := range tickets {
		v.TicketSeats += len(t)
		for _, id := range t {
			inTickets[id]++
		}
	}

	var problems []string
	for id, n := range inTickets {
		st, known := status[id]
		switch {
		case n > 1:
			problems = append(problems, fmt.Sprintf("seat %s sold twice: it is in %d tickets", id, n))
		case soldBefore[id]:
			problems = append(problems, fmt.Sprintf("seat %s sold twice: a ticket of this run has it, but it was sold before the run", id))
		}
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("seat %s is in a ticket but not in the seat map", id))
		case st != "sold":
			problems = append(problems, fmt.Sprintf("seat %s is in a ticket but the seat map shows it %q", id, st))
		}
	}
	for id, st := range status {
		switch {
		case st == "sold" && !soldBefore[id] && inTickets[id] == 0:
			problems = append(problems, fmt.Sprintf("seat %s was sold during the run but is in no ticket", id))
		case st != "sold" && soldBefore[id]:
			problems = append(problems, fmt.Sprintf("seat %s was sold before the run but the seat map now shows it %q", id, st))
		}
	}
	if v.SoldDuring != v.TicketSeats {
		problems = append(problems, fmt.Sprintf("%d seats sold during the run, but the tickets hold %d", v.SoldDuring, v.TicketSeats))
	}
	sort.Strings(problems)
	v.Problems, v.OK = problems, len(problems) == 0
	return v
}

// maxProblemsShown bounds the discrepancies the table lists; the JSON has them all.
const maxProblemsShown = 20

// WriteTable prints the report as the tables a person reads at the end of a run.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	seatWord := "seats"
	if r.SeatsPerUser == 1 {
		seatWord = "seat"
	}
	p("swarm: %d users for %s at %s (concurrency %d, %d %s each, %d retries) in %s\n",
		r.Users, r.Screening, r.URL, r.Concurrency, r.SeatsPerUser, seatWord, r.Retries,
		(time.Duration(r.ElapsedMs) * time.Millisecond).String())
	if r.Stopped != "" {
		p("STOPPED early (%s): users still going were counted as errors\n", r.Stopped)
	}
	p("\nOUTCOME\tUSERS\n")
	p("ticket\t%d\n", r.Outcomes.Ticket)
	p("sold_out\t%d\n", r.Outcomes.SoldOut)
	p("gave_up\t%d\n", r.Outcomes.GaveUp)
	p("error\t%d\n", r.Outcomes.Error)
	p("reconnects\t%d\n", r.Reconnects)
	if len(r.Errors) > 0 {
		p("\nERROR KIND\tUSERS\tEXAMPLE\n")
		kinds := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool {
			a, b := r.Errors[kinds[i]], r.Errors[kinds[j]]
			return a.Count > b.Count || a.Count == b.Count && kinds[i] < kinds[j]
		})
		for _, k := range kinds {
			p("%s\t%d\t%s\n", k, r.Errors[k].Count, r.Errors[k].Example)
		}
	}

	p("\nLATENCY\tCOUNT\tP50\tP95\tP99\n")
	for _, row := range []struct {
		name string
		l    Latency
	}{{"connect", r.Latency.Connect}, {"time in queue", r.Latency.Queue}, {"reservation", r.Latency.Reservation}} {
		p("%s\t%d\t%s\t%s\t%s\n", row.name, row.l.Count, showMs(row.l, row.l.P50Ms), showMs(row.l, row.l.P95Ms), showMs(row.l, row.l.P99Ms))
	}

	v := r.Verification
	p("\nVERIFICATION\t")
	if v.OK {
		p("OK: %d seats sold during the run = %d seats in %d tickets; no seat sold twice", v.SoldDuring, v.TicketSeats, v.Tickets)
		if v.SoldBefore > 0 {
			p(" (%d sold before the run)", v.SoldBefore)
		}
		p("\n")
	} else {
		p("FAILED: %d seats sold during the run, %d seats in %d tickets; %d problems\n", v.SoldDuring, v.TicketSeats, v.Tickets, len(v.Problems))
		for i, problem := range v.Problems {
			if i == maxProblemsShown {
				p("  … and %d more (the JSON report lists them all)\n", len(v.Problems)-maxProblemsShown)
				break
			}
			p("  %s\n", problem)
		}
	}
	return tw.Flush()
}

// showMs renders a percentile for the table: "-" without samples, else a rounded duration.
func showMs(l Latency, ms float64) string {
	if l.Count == 0 {
		return "-"
	}
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	}
	return strings.TrimSpace(d.String())
}
