// The progress line: the counts users add as they go, and the line redrawn from them while a run lasts.

package swarm

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// tally is what the progress line shows, counted as users go. A child process's tally is mirrored in
// the parent from the child's progress reports (see childLog).
type tally struct {
	started, registered                     atomic.Int64
	ticket, soldOut, gaveUp, held, admitted atomic.Int64
	errored                                 atomic.Int64
	refunded, lapsed, unpaid                atomic.Int64
}

func (t *tally) add(o Outcome) {
	switch o {
	case Ticket:
		t.ticket.Add(1)
	case SoldOut:
		t.soldOut.Add(1)
	case GaveUp:
		t.gaveUp.Add(1)
	case Held:
		t.held.Add(1)
	case Admitted:
		t.admitted.Add(1)
	case Refunded:
		t.refunded.Add(1)
	case Lapsed:
		t.lapsed.Add(1)
	case Unpaid:
		t.unpaid.Add(1)
	default:
		t.errored.Add(1)
	}
}

// counts is a tally at one moment, in a fixed order: the progress report of a child carries them so.
type counts [11]int64

func (t *tally) fields() [11]*atomic.Int64 {
	return [11]*atomic.Int64{&t.started, &t.registered, &t.ticket, &t.soldOut, &t.gaveUp, &t.held, &t.admitted, &t.errored,
		&t.refunded, &t.lapsed, &t.unpaid}
}

func (t *tally) load() counts {
	var c counts
	for i, f := range t.fields() {
		c[i] = f.Load()
	}
	return c
}

func (t *tally) store(c counts) {
	for i, f := range t.fields() {
		f.Store(c[i])
	}
}

// sum adds up the tallies of every process of a run.
func sum(tallies []*tally) counts {
	var total counts
	for _, t := range tallies {
		for i, n := range t.load() {
			total[i] += n
		}
	}
	return total
}

// barWidth is the number of cells of the progress bar.
const barWidth = 30

func draw(w io.Writer, c counts, cfg Config) {
	started, registered, ticket, soldOut, gaveUp, held, admitted, errored := c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
	refunded, lapsed, unpaid := c[8], c[9], c[10]
	done := ticket + soldOut + gaveUp + held + admitted + errored + refunded + lapsed + unpaid
	running := max(started-done, 0)
	users := int64(cfg.Users)
	filled := int(min(done, users) * barWidth / users)
	width := len(fmt.Sprint(users))
	bar := strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled)
	if cfg.Mode == Line {
		fmt.Fprintf(w, "\r[%s] %*d/%d  registered %*d  running %*d  held %*d  admitted %*d  sold_out %*d  error %*d",
			bar, width, done, users, width, registered, width, running, width, held, width, admitted, width, soldOut, width, errored)
		return
	}
	if cfg.Checkout.hold() {
		fmt.Fprintf(w, "\r[%s] %*d/%d  running %*d  ticket %*d  refunded %*d  lapsed %*d  unpaid %*d  sold_out %*d  gave_up %*d  error %*d",
			bar, width, done, users, width, running, width, ticket, width, refunded, width, lapsed, width, unpaid,
			width, soldOut, width, gaveUp, width, errored)
		return
	}
	fmt.Fprintf(w, "\r[%s] %*d/%d  running %*d  ticket %*d  sold_out %*d  gave_up %*d  error %*d",
		bar, width, done, users, width, running, width, ticket, width, soldOut, width, gaveUp, width, errored)
}

// startBar redraws the progress line of the tallies' sum on w until the returned stop is called, which
// draws it a last time, ends the line, and returns once the drawing goroutine has stopped.
func startBar(w io.Writer, tallies []*tally, cfg Config) (stop func()) {
	if w == nil {
		return func() {}
	}
	return every(progressEvery, func(last bool) {
		draw(w, sum(tallies), cfg)
		if last {
			fmt.Fprintln(w)
		}
	})
}

// every calls f each period in a goroutine of its own until the returned stop is called, which calls
// f(true) a last time and returns once the goroutine has stopped.
func every(period time.Duration, f func(last bool)) (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				f(true)
				return
			case <-tick.C:
				f(false)
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}
