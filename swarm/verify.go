// The check of the seats sold: the seat map after the run against the one before it and the run's tickets.

package swarm

import (
	"fmt"
	"sort"
)

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
	// Skipped says why nothing was checked (line mode reserves nothing); OK is then true.
	Skipped string `json:"skipped,omitempty"`
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
