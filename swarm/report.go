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
	// Skipped says why nothing was checked (hold mode reserves nothing); OK is then true.
	Skipped string `json:"skipped,omitempty"`
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

// tickets returns the seats of every ticket of a run.
func tickets(results []result) [][]string {
	var out [][]string
	for _, r := range results {
		if r.Outcome == Ticket {
			out = append(out, r.Seats)
		}
	}
	return out
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

const (
	// maxProblemsShown bounds the discrepancies the table lists; the JSON has them all.
	maxProblemsShown = 20
	// maxTicksShown bounds the ticks the table lists in time order; maxWorstTicks adds the worst of the
	// others by p99. The JSON has them all.
	maxTicksShown = 20
	maxWorstTicks = 5
)

// printer writes tab-separated table rows.
type printer func(format string, args ...any)

// WriteTable prints the report as the tables a person reads at the end of a run.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := printer(func(format string, args ...any) { fmt.Fprintf(tw, format, args...) })
	r.writeHeader(p)
	r.writeOutcomes(p)
	r.writeLatency(p)
	r.writePush(p)
	r.writeVerification(p)
	return tw.Flush()
}

func (r Report) writeHeader(p printer) {
	var spread string
	if r.Procs > 1 {
		spread += fmt.Sprintf(", %d processes", r.Procs)
	}
	if r.Sources > 1 {
		spread += fmt.Sprintf(", %d source addresses", r.Sources)
	}
	elapsed := (time.Duration(r.ElapsedMs) * time.Millisecond).String()
	if r.Mode == Hold {
		leave := "no leave: places kept"
		if r.Leave {
			leave = "leave at the end"
		}
		p("swarm: hold %d users for %s at %s for %s (%s%s) in %s\n",
			r.Users, r.Screening, r.URL, time.Duration(r.DurationMs)*time.Millisecond, leave, spread, elapsed)
	} else {
		seatWord := "seats"
		if r.SeatsPerUser == 1 {
			seatWord = "seat"
		}
		p("swarm: %d users for %s at %s (concurrency %d, %d %s each, %d retries%s) in %s\n",
			r.Users, r.Screening, r.URL, r.Concurrency, r.SeatsPerUser, seatWord, r.Retries, spread, elapsed)
	}
	if r.Stopped != "" {
		p("STOPPED early (%s): users still going were counted as errors\n", r.Stopped)
	}
}

func (r Report) writeOutcomes(p printer) {
	p("\nOUTCOME\tUSERS\n")
	if r.Mode == Hold {
		p("held\t%d\n", r.Outcomes.Held)
		p("admitted\t%d\n", r.Outcomes.Admitted)
		p("sold_out\t%d\n", r.Outcomes.SoldOut)
	} else {
		p("ticket\t%d\n", r.Outcomes.Ticket)
		p("sold_out\t%d\n", r.Outcomes.SoldOut)
		p("gave_up\t%d\n", r.Outcomes.GaveUp)
	}
	p("error\t%d\n", r.Outcomes.Error)
	p("reconnects\t%d\n", r.Reconnects)
	if len(r.Errors) == 0 {
		return
	}
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

func (r Report) writeLatency(p printer) {
	type row struct {
		name string
		l    Latency
	}
	rows := []row{{"connect", r.Latency.Connect}, {"time in queue", r.Latency.Queue}}
	if r.Mode != Hold {
		rows = append(rows, row{"reservation", r.Latency.Reservation})
	}
	rows = append(rows, row{"position push", r.Push.Positions})
	p("\nLATENCY\tCOUNT\tP50\tP95\tP99\tMAX\n")
	for _, row := range rows {
		l := row.l
		p("%s\t%d\t%s\t%s\t%s\t%s\n", row.name, l.Count, showMs(l, l.P50Ms), showMs(l, l.P95Ms), showMs(l, l.P99Ms), showMs(l, l.MaxMs))
	}
	p("(position push: from a position message's tick_at to its receipt)\n")
}

func (r Report) writePush(p printer) {
	reg, push := r.Registration, r.Push
	p("\n")
	if reg.Registered > 0 {
		p("REGISTRATION\t%d of %d users got their place %s after the first dial: %.1f users/s\n",
			reg.Registered, r.Users, showMs(Latency{Count: 1}, reg.BurstMs), reg.PerSecond)
	} else {
		p("REGISTRATION\tno user got a place\n")
	}
	p("TICKS\t%d seen", push.Ticks)
	if push.CatchUps > 0 {
		p(" (and %d catch-up positions after a connect, not ticks)", push.CatchUps)
	}
	p("\n")
	p("POSITIONS\t%d users got at least one; %d of %d registered got one for every tick while they waited\n",
		push.UsersWithPosition, push.UsersWithEveryTick, reg.Registered)
	p("MISSED TICKS\t%d, by %d users\n", push.MissedTicks, push.UsersMissingTicks)
	if len(push.PerTick) == 0 {
		return
	}
	shown, omitted, worst := pickTicks(push.PerTick)
	p("\nTICK (after the first dial)\tCOUNT\tP50\tP99\tMAX\n")
	tickRow := func(t TickLatency, note string) {
		p("%s%s\t%d\t%s\t%s\t%s\n", showTickAt(t.TickAtMs, reg.FirstDialAtMs), note, t.Count, showMsOf(t.P50Ms), showMsOf(t.P99Ms), showMsOf(t.MaxMs))
	}
	for _, t := range shown {
		tickRow(t, "")
	}
	for _, t := range worst {
		tickRow(t, " (a worst p99)")
	}
	if len(worst) > 0 {
		p("(the first %d ticks in time order, then the %d of the other %d with the highest p99; %d ticks not listed, the JSON report has them all)\n",
			len(shown), len(worst), len(worst)+omitted, omitted)
	}
}

// pickTicks chooses the ticks the table lists: all of them if few, else the first maxTicksShown and the
// maxWorstTicks of the others with the highest p99; omitted counts the others not listed.
func pickTicks(ticks []TickLatency) (shown []TickLatency, omitted int, worst []TickLatency) {
	if len(ticks) <= maxTicksShown+maxWorstTicks {
		return ticks, 0, nil
	}
	rest := slices.Clone(ticks[maxTicksShown:])
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].P99Ms > rest[j].P99Ms })
	return ticks[:maxTicksShown], len(rest) - maxWorstTicks, rest[:maxWorstTicks]
}

// showTickAt renders a tick's time as an offset from the run's first dial.
func showTickAt(tickAtMs, firstDialAtMs int64) string {
	d := time.Duration(tickAtMs-firstDialAtMs) * time.Millisecond
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func (r Report) writeVerification(p printer) {
	v := r.Verification
	p("\nVERIFICATION\t")
	switch {
	case v.Skipped != "":
		p("not checked: %s\n", v.Skipped)
	case v.OK:
		p("OK: %d seats sold during the run = %d seats in %d tickets; no seat sold twice", v.SoldDuring, v.TicketSeats, v.Tickets)
		if v.SoldBefore > 0 {
			p(" (%d sold before the run)", v.SoldBefore)
		}
		p("\n")
	default:
		p("FAILED: %d seats sold during the run, %d seats in %d tickets; %d problems\n", v.SoldDuring, v.TicketSeats, v.Tickets, len(v.Problems))
		for i, problem := range v.Problems {
			if i == maxProblemsShown {
				p("  … and %d more (the JSON report lists them all)\n", len(v.Problems)-maxProblemsShown)
				break
			}
			p("  %s\n", problem)
		}
	}
}

// showMs renders a percentile for the table: "-" without samples, else a rounded duration.
func showMs(l Latency, ms float64) string {
	if l.Count == 0 {
		return "-"
	}
	return showMsOf(ms)
}

// showMsOf renders milliseconds as a duration rounded for reading.
func showMsOf(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second || d <= -time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond || d <= -time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	}
	return strings.TrimSpace(d.String())
}
