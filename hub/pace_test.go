package hub

import (
	"math"
	"math/big"
	"testing"
)

// paceOf is a pace fed the events (atMs, admitted) in order.
func paceOf(events ...[2]int64) *pace {
	p := &pace{}
	for _, ev := range events {
		p.add(ev[0], int(ev[1]))
	}
	return p
}

func TestPerSecondIsTheAdmissionsAfterTheFirstEventOverTheirSpan(t *testing.T) {
	for _, c := range []struct {
		name   string
		events [][2]int64
		want   float64
	}{
		{"no event", nil, 0},
		{"one event: no span yet", [][2]int64{{1000, 50}}, 0},
		{"two events at the same time", [][2]int64{{1000, 5}, {1000, 5}}, 0},
		// The first event's admissions are the start line: 10 + 10 over 2 s.
		{"steady ticks", [][2]int64{{0, 10}, {1000, 10}, {2000, 10}}, 10},
		{"events that only moved the line count their time", [][2]int64{{0, 10}, {1000, 0}, {2000, 0}, {4000, 20}}, 5},
		{"a refill between ticks", [][2]int64{{0, 10}, {500, 1}, {1000, 10}}, 11},
		{"slow pace", [][2]int64{{0, 1}, {30_000, 1}, {60_000, 1}}, 2.0 / 60},
	} {
		if got := paceOf(c.events...).perSecond(); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: perSecond() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPaceForgetsEventsOlderThanTheWindow(t *testing.T) {
	// A burst long ago, then a slow pace: the burst no longer counts once it is out of the window.
	p := paceOf([2]int64{0, 0}, [2]int64{1000, 1000}, [2]int64{31_000, 30}, [2]int64{61_000, 30})
	// The window is 60 s back from the newest event, inclusive: the event at 1,000 is exactly 60 s old
	// and still in; the one at 0 is out and becomes nothing (the new first event is the start line).
	if got, want := p.perSecond(), 60.0/60; got != want {
		t.Errorf("perSecond() with the burst at the window's edge = %v, want %v (1,000 at 1 s is the start line)", got, want)
	}
	if len(p.samples) != 3 {
		t.Errorf("samples kept = %d (%v), want 3 (1 s, 31 s, 61 s)", len(p.samples), p.samples)
	}
	p.add(91_000, 30)
	if got, want := p.perSecond(), 60.0/60; got != want {
		t.Errorf("perSecond() after the window moved on = %v, want %v (30 + 30 since 31 s over 60 s)", got, want)
	}
	if len(p.samples) != 3 || p.samples[0].atMs != 31_000 {
		t.Errorf("samples kept = %v, want the ones at 31 s, 61 s, 91 s", p.samples)
	}

	// After a long silence, the newest event alone is kept: no rate until the next one.
	p.add(500_000, 10)
	if len(p.samples) != 1 || p.perSecond() != 0 {
		t.Errorf("after a silence longer than the window: samples %v, perSecond %v; want only the newest, 0", p.samples, p.perSecond())
	}
	p.add(501_000, 4)
	if got := p.perSecond(); got != 4 {
		t.Errorf("perSecond() one tick after the silence = %v, want 4", got)
	}
}

func TestPaceIgnoresAnEventOlderThanTheNewest(t *testing.T) {
	// Another instance's clock: an event stamped before the newest is dropped, so the span never shrinks.
	p := paceOf([2]int64{10_000, 0}, [2]int64{12_000, 20}, [2]int64{11_000, 1000})
	if got := p.perSecond(); got != 10 {
		t.Errorf("perSecond() = %v, want 10 (20 over 2 s; the event from the past ignored)", got)
	}
	if len(p.samples) != 2 {
		t.Errorf("samples = %v, want 2", p.samples)
	}
}

// A pace that has heard no event starts at the latest admission read with the line: the first event it
// hears then gives a rate, the one a pace that heard the admission gives. A pace that has events, or a line
// with no admission yet, is left as it is.
func TestPaceStartsAtTheLatestAdmissionReadWithTheLine(t *testing.T) {
	p := &pace{}
	p.start(10_000)
	p.add(14_000, 2)
	if got, want := p.perSecond(), paceOf([2]int64{10_000, 1}, [2]int64{14_000, 2}).perSecond(); got != want || got != 0.5 {
		t.Errorf("perSecond() started at 10 s, then 2 at 14 s = %v, want %v (as if the admission at 10 s was heard) = 0.5", got, want)
	}
	// The admission the line was read at, heard after the read (published between the subscription and the
	// read), is the start line already: its admissions are not counted as well.
	p = &pace{}
	p.start(10_000)
	p.add(10_000, 5)
	p.add(14_000, 2)
	if got := p.perSecond(); got != 0.5 {
		t.Errorf("perSecond() started at 10 s, the admission at 10 s heard after, then 2 at 14 s = %v, want 0.5", got)
	}
	p = paceOf([2]int64{12_000, 1})
	p.start(10_000)
	if len(p.samples) != 1 || p.samples[0].atMs != 12_000 {
		t.Errorf("start on a pace that heard an event: samples %v, want only the event at 12 s", p.samples)
	}
	p = &pace{}
	p.start(0)
	if len(p.samples) != 0 {
		t.Errorf("start(0) (no admission yet): samples %v, want none", p.samples)
	}
}

func TestETASecondsRoundsTheWaitUp(t *testing.T) {
	for _, c := range []struct {
		rank, admitted, spanMs, want int64
	}{
		{1, 10, 1000, 1},     // 0.1 s: the next second
		{10, 10, 1000, 1},    // exactly 1 s
		{11, 10, 1000, 2},    // 1.1 s
		{1, 1, 2000, 2},      // one every two seconds
		{3, 3, 2000, 2},      // exactly 2 s
		{100, 3, 1000, 34},   // 33.3 s
		{1000, 7, 1000, 143}, // 142.86 s
		{1 << 40, 1, 1000, 1 << 40},
	} {
		if got := etaSeconds(c.rank, paceRate{c.admitted, c.spanMs}); got != c.want {
			t.Errorf("etaSeconds(%d, %d over %d ms) = %d, want %d", c.rank, c.admitted, c.spanMs, got, c.want)
		}
	}
}

// An exact wait is that wait, not a second more. Through a float rate (admissions × 1000 / span in ms) the
// quotient may land a hair above the exact value: 1 admission over 49 s is 0.02040816326530612 per second,
// and 1 / that is 49.00000000000001, which math.Ceil makes 50. The rate is kept as a fraction instead.
func TestETASecondsOfAnExactWaitIsThatWait(t *testing.T) {
	for _, c := range []struct {
		rank, admitted, spanMs, want int64
	}{
		{1, 1, 49_000, 49},
		{2, 1, 49_000, 98},
		{4, 1, 49_000, 196},
		{3, 1, 10_000, 30},
		{7, 7, 10_000, 10},
	} {
		p := paceOf([2]int64{0, 0}, [2]int64{c.spanMs, c.admitted})
		if got := etaSeconds(c.rank, p.rate()); got != c.want {
			t.Errorf("etaSeconds(rank %d) at %d admitted over %d ms = %d, want %d", c.rank, c.admitted, c.spanMs, got, c.want)
		}
	}
	// The whole neighbourhood of the case above, against exact rational arithmetic.
	for rank := int64(1); rank <= 200; rank++ {
		for admitted := int64(1); admitted <= 100; admitted += 7 {
			for spanMs := int64(1000); spanMs <= 60_000; spanMs += 997 {
				want := new(big.Rat).SetFrac64(rank*spanMs, admitted*1000)
				ceil := new(big.Int).Div(want.Num(), want.Denom())
				if !want.IsInt() {
					ceil.Add(ceil, big.NewInt(1))
				}
				if got := etaSeconds(rank, paceRate{admitted, spanMs}); got != ceil.Int64() {
					t.Fatalf("etaSeconds(%d, %d over %d ms) = %d, want %v", rank, admitted, spanMs, got, ceil)
				}
			}
		}
	}
}

func TestETASecondsIsUnknownWithoutARate(t *testing.T) {
	for _, r := range []paceRate{{}, {0, 1000}, {5, 0}, {-1, 1000}} {
		if got := etaSeconds(5, r); got != -1 {
			t.Errorf("etaSeconds(5, %+v) = %d, want -1 (unknown)", r, got)
		}
	}
	if got := etaSeconds(5, paceOf([2]int64{1000, 10}).rate()); got != -1 {
		t.Errorf("etaSeconds after a single event = %d, want -1 (unknown)", got)
	}
}
