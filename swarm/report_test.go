// Tests of the report: percentiles, sums, the seat verification, the table, and the seat pick.

package swarm

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond // 1ms … 100ms
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample p50", ms(7), 50, 7 * time.Millisecond},
		{"one sample p99", ms(7), 99, 7 * time.Millisecond},
		{"two samples p50 is the lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"two samples p95 is the upper", ms(1, 2), 95, 2 * time.Millisecond},
		{"four samples p50", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"four samples p99", ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{"hundred p50", hundred, 50, 50 * time.Millisecond},
		{"hundred p95", hundred, 95, 95 * time.Millisecond},
		{"hundred p99", hundred, 99, 99 * time.Millisecond},
		{"hundred p100", hundred, 100, 100 * time.Millisecond},
		{"hundred p0 is the minimum", hundred, 0, 1 * time.Millisecond},
		{"ten p99 is the maximum", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarizeLatencySortsAndReportsMilliseconds(t *testing.T) {
	samples := []time.Duration{3 * time.Millisecond, 1500 * time.Microsecond, 2 * time.Millisecond, 250 * time.Microsecond}
	got := summarizeLatency(samples)
	want := Latency{Count: 4, P50Ms: 1.5, P95Ms: 3, P99Ms: 3, MaxMs: 3}
	if got != want {
		t.Errorf("summarizeLatency(%v) = %+v, want %+v", samples, got, want)
	}
	if !slices.Equal(samples, []time.Duration{3 * time.Millisecond, 1500 * time.Microsecond, 2 * time.Millisecond, 250 * time.Microsecond}) {
		t.Errorf("summarizeLatency reordered its input: %v", samples)
	}
}

// seatsOf builds a seat map: ids listed in sold are sold, the rest available.
func seatsOf(ids string, sold ...string) []seat {
	var out []seat
	for _, id := range strings.Fields(ids) {
		st := "available"
		if slices.Contains(sold, id) {
			st = "sold"
		}
		out = append(out, seat{ID: id, Status: st})
	}
	return out
}

func TestVerifyFindsEveryDiscrepancy(t *testing.T) {
	const all = "A1 A2 A3 A4"
	for _, tc := range []struct {
		name         string
		before       []seat
		after        []seat
		tickets      [][]string
		wantOK       bool
		wantProblems []string
		wantDuring   int
		wantSeats    int
	}{
		{
			name:   "every sold seat in one ticket",
			before: seatsOf(all), after: seatsOf(all, "A1", "A2", "A3"),
			tickets: [][]string{{"A1"}, {"A2", "A3"}},
			wantOK:  true, wantDuring: 3, wantSeats: 3,
		},
		{
			name:   "nothing sold, no tickets",
			before: seatsOf(all), after: seatsOf(all),
			wantOK: true,
		},
		{
			name:   "seats sold before the run are not the run's",
			before: seatsOf(all, "A4"), after: seatsOf(all, "A1", "A4"),
			tickets: [][]string{{"A1"}},
			wantOK:  true, wantDuring: 1, wantSeats: 1,
		},
		{
			name:   "a seat in two tickets is sold twice",
			before: seatsOf(all), after: seatsOf(all, "A1", "A2"),
			tickets: [][]string{{"A1"}, {"A1", "A2"}},
			wantProblems: []string{
				"2 seats sold during the run, but the tickets hold 3",
				"seat A1 sold twice: it is in 2 tickets",
			},
			wantDuring: 2, wantSeats: 3,
		},
		{
			name:   "a ticket for a seat sold before the run is a double sale",
			before: seatsOf(all, "A1"), after: seatsOf(all, "A1"),
			tickets: [][]string{{"A1"}},
			wantProblems: []string{
				"0 seats sold during the run, but the tickets hold 1",
				"seat A1 sold twice: a ticket of this run has it, but it was sold before the run",
			},
			wantSeats: 1,
		},
		{
			name:   "a ticket seat the map does not show sold is missing",
			before: seatsOf(all), after: seatsOf(all, "A1"),
			tickets: [][]string{{"A1"}, {"A2"}},
			wantProblems: []string{
				"1 seats sold during the run, but the tickets hold 2",
				`seat A2 is in a ticket but the seat map shows it "available"`,
			},
			wantDuring: 1, wantSeats: 2,
		},
		{
			name:   "a ticket seat that is not in the map",
			before: seatsOf(all), after: seatsOf(all, "A1"),
			tickets: [][]string{{"A1", "Z9"}},
			wantProblems: []string{
				"1 seats sold during the run, but the tickets hold 2",
				"seat Z9 is in a ticket but not in the seat map",
			},
			wantDuring: 1, wantSeats: 2,
		},
		{
			name:   "a seat sold in no ticket",
			before: seatsOf(all), after: seatsOf(all, "A1", "A3"),
			tickets: [][]string{{"A1"}},
			wantProblems: []string{
				"2 seats sold during the run, but the tickets hold 1",
				"seat A3 was sold during the run but is in no ticket",
			},
			wantDuring: 2, wantSeats: 1,
		},
		{
			name:   "a seat sold before that became available",
			before: seatsOf(all, "A4"), after: seatsOf(all),
			wantProblems: []string{
				`seat A4 was sold before the run but the seat map now shows it "available"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verify(tc.before, tc.after, tc.tickets)
			if v.OK != tc.wantOK {
				t.Errorf("OK = %v, want %v (problems %q)", v.OK, tc.wantOK, v.Problems)
			}
			if !slices.Equal(v.Problems, tc.wantProblems) {
				t.Errorf("Problems =\n  %q\nwant\n  %q", v.Problems, tc.wantProblems)
			}
			if v.SoldDuring != tc.wantDuring || v.TicketSeats != tc.wantSeats || v.Tickets != len(tc.tickets) {
				t.Errorf("SoldDuring, TicketSeats, Tickets = %d, %d, %d; want %d, %d, %d",
					v.SoldDuring, v.TicketSeats, v.Tickets, tc.wantDuring, tc.wantSeats, len(tc.tickets))
			}
		})
	}
}

func TestSummarizeCountsEveryUserOnce(t *testing.T) {
	results := []result{
		{Outcome: Ticket, Connected: true, Connect: time.Millisecond, WasAdmitted: true, InQueue: time.Second, Reservations: []time.Duration{time.Millisecond, 2 * time.Millisecond}, Seats: []string{"A1"}},
		{Outcome: SoldOut, Connected: true, Connect: 2 * time.Millisecond},
		{Outcome: GaveUp, Connected: true, Connect: 3 * time.Millisecond, WasAdmitted: true, InQueue: 2 * time.Second, Reservations: []time.Duration{time.Millisecond}},
		{Outcome: Error, ErrKind: "read", ErrText: "read: reset", Reconnects: 2},
		{Outcome: Error, ErrKind: "read", ErrText: "read: eof"},
	}
	rep := summarize(Config{Users: len(results), Seats: 1}, results, time.Second)
	if want := (Outcomes{Ticket: 1, SoldOut: 1, GaveUp: 1, Error: 2}); rep.Outcomes != want {
		t.Errorf("Outcomes = %+v, want %+v", rep.Outcomes, want)
	}
	if got := rep.Errors["read"]; got.Count != 2 || got.Example != "read: reset" {
		t.Errorf(`Errors["read"] = %+v, want 2 with the first user's error as example`, got)
	}
	if rep.Latency.Connect.Count != 3 || rep.Latency.Queue.Count != 2 || rep.Latency.Reservation.Count != 3 {
		t.Errorf("latency counts = %d, %d, %d; want 3, 2, 3", rep.Latency.Connect.Count, rep.Latency.Queue.Count, rep.Latency.Reservation.Count)
	}
	if rep.Reconnects != 2 {
		t.Errorf("Reconnects = %d, want 2", rep.Reconnects)
	}
	if got := tickets(results); len(got) != 1 || !slices.Equal(got[0], []string{"A1"}) {
		t.Errorf("tickets = %v, want [[A1]]", got)
	}
}

func TestWriteTableListsProblems(t *testing.T) {
	rep := Report{Users: 2, Screening: "s", SeatsPerUser: 1, Outcomes: Outcomes{Ticket: 2},
		Verification: verify(seatsOf("A1 A2"), seatsOf("A1 A2", "A1"), [][]string{{"A1"}, {"A1"}})}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"VERIFICATION", "FAILED", "seat A1 sold twice: it is in 2 tickets", "ticket", "time in queue"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestPickSeatsTakesAvailableAndAvoidsLockedWhileOthersAreLeft(t *testing.T) {
	seats := seatsOf("A1 A2 A3 A4", "A1")
	for range 50 {
		got := pickSeats(seats, map[string]bool{"A2": true}, 2)
		slices.Sort(got)
		if !slices.Equal(got, []string{"A3", "A4"}) {
			t.Fatalf("pickSeats(A1 sold, A2 avoided, 2) = %v, want [A3 A4]", got)
		}
	}
	if got := pickSeats(seats, map[string]bool{"A2": true, "A3": true, "A4": true}, 1); len(got) != 1 || got[0] == "A1" {
		t.Errorf("pickSeats with every free seat avoided = %v, want one of them anyway", got)
	}
	if got := pickSeats(seats, nil, 5); len(got) != 3 {
		t.Errorf("pickSeats(5 of 3 left) = %v, want the 3 left", got)
	}
	if got := pickSeats(seatsOf("A1", "A1"), nil, 1); len(got) != 0 {
		t.Errorf("pickSeats(none left) = %v, want none", got)
	}
}
