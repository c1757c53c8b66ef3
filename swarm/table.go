// The report as the tables a person reads at the end of a run.

package swarm

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

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
	r.writePow(p)
	r.writePush(p)
	r.writeBoxOffice(p)
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
	if r.Mode == Line {
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
	if r.Mode == Line {
		p("held\t%d\n", r.Outcomes.Held)
		p("admitted\t%d\n", r.Outcomes.Admitted)
		p("sold_out\t%d\n", r.Outcomes.SoldOut)
	} else {
		p("ticket\t%d\n", r.Outcomes.Ticket)
		if r.BoxOffice != nil && r.BoxOffice.Checkout == HoldCheckout {
			p("refunded\t%d\n", r.Outcomes.Refunded)
			p("lapsed (paid too late)\t%d\n", r.Outcomes.Lapsed)
			p("unpaid (hold left to lapse)\t%d\n", r.Outcomes.Unpaid)
		}
		p("sold_out\t%d\n", r.Outcomes.SoldOut)
		p("gave_up\t%d\n", r.Outcomes.GaveUp)
	}
	p("error\t%d\n", r.Outcomes.Error)
	p("reconnects\t%d\n", r.Reconnects)
	if r.Busy > 0 {
		p("busy refusals\t%d (came back after the server's retry_after_ms)\n", r.Busy)
	}
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
	if len(r.Limits) == 0 {
		return
	}
	p("\n")
	for _, h := range r.Limits {
		p("LIMITS\t%d users refused by the server's %s: %s\n", h.Users, strings.Join(h.Settings, " / "), h.Refusal)
	}
	p("\t%s\n", LimitAdvice(r.Limits))
}

func (r Report) writeLatency(p printer) {
	type row struct {
		name string
		l    Latency
	}
	rows := []row{{"connect", r.Latency.Connect}, {"time in queue", r.Latency.Queue}}
	if r.Mode != Line {
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
		since := "the first dial"
		if r.Pow != nil {
			since = fmt.Sprintf("the first challenge fetch (%s after the first dial)", showMsOf(reg.BurstMs))
		}
		p("REGISTRATION\t%d of %d users got their place %s after %s: %.1f users/s\n",
			reg.Registered, r.Users, showMsOf(reg.ArrivalMs), since, reg.PerSecond)
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

func (r Report) writeBoxOffice(p printer) {
	b := r.BoxOffice
	if b == nil {
		return
	}
	p("\nBOX OFFICE\t%s checkout", b.Checkout)
	if b.Checkout == HoldCheckout {
		p(": pay share %g, refund share %g of payers, pay delay %s-%s", b.PayShare, b.CancelShare,
			time.Duration(b.PayDelayMin)*time.Millisecond, time.Duration(b.PayDelayMax)*time.Millisecond)
	}
	p("\n")
	if b.Checkout == HoldCheckout {
		p("HOLDS\t%d held, %d paid, %d confirmed, %d lapsed before their confirm, %d left unpaid, %d refunded\n",
			b.Holds, b.Paid, b.Confirmed, b.Lapsed, b.Unpaid, b.Refunded)
		p("HELD WAITS\t%d seat-map reads again while every free seat was held; %d reservations answered 409 SOLD_OUT\n", b.HeldWaits, b.SoldOutAnswers)
		p("SETTLE\t%s after the last user, for the last holds to lapse\n", time.Duration(b.SettleMs)*time.Millisecond)
		if b.Waitlisted > 0 || b.Offered > 0 {
			p("WAITLIST\t%d users stayed on it after sold_out; %d were offered seats\n", b.Waitlisted, b.Offered)
		}
	}
	p("RESERVATIONS PER TICKET\t%.2f\n", b.ReservationsPerTicket)
	if b.SoldOutMs > 0 {
		p("SOLD OUT\t%s after the first dial (the last confirmation)\n", time.Duration(b.SoldOutMs)*time.Millisecond)
	}
	if b.Checkout == HoldCheckout {
		p("\nCHECKOUT LATENCY\tCOUNT\tP50\tP95\tP99\tMAX\n")
		for _, row := range []struct {
			name string
			l    Latency
		}{{"hold to confirm (user, pay delay included)", b.HoldToConfirm}, {"confirm call", b.ConfirmCall},
			{"hold to confirm (database)", b.Orders.HoldToConfirm}} {
			l := row.l
			p("%s\t%d\t%s\t%s\t%s\t%s\n", row.name, l.Count, showMs(l, l.P50Ms), showMs(l, l.P95Ms), showMs(l, l.P99Ms), showMs(l, l.MaxMs))
		}
	}
	o := b.Orders
	if o.Skipped != "" {
		p("ORDERS\tnot checked: %s\n", o.Skipped)
	} else {
		statuses := make([]string, 0, len(o.ByStatus))
		for st, n := range o.ByStatus {
			statuses = append(statuses, fmt.Sprintf("%s %d", st, n))
		}
		sort.Strings(statuses)
		p("ORDERS\t%s; seats: %d sold, %d held, %d available of %d\n", strings.Join(statuses, ", "), o.Sold, o.Held, o.Available, o.Seats)
		for _, ev := range o.SoldOutEvents {
			p("SOLD_OUT EVENT\t%s: %d seats in no order, %d only held then\n",
				time.UnixMilli(ev.AtMs).UTC().Format("15:04:05.000"), ev.Free, ev.Held)
		}
	}
	w := b.Webhooks
	if w.Listen == "" {
		return
	}
	sig := "signatures not checked"
	if w.Verified {
		sig = "signatures checked"
	}
	expect := "not expected yet: a shortfall is reported, not failed"
	if w.Expected {
		expect = "expected: a shortfall fails the run"
	}
	p("WEBHOOKS\t%d received (%d deliveries, %d badly signed; %s) of %d in the outbox, %d missing; %s\n",
		w.Received, w.Deliveries, w.BadSignature, sig, w.Outbox, w.Missing, expect)
	if w.Note != "" {
		p("\t%s\n", w.Note)
	}
}
