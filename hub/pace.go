package hub

import "math"

// paceWindow is how far back the admission rate is measured: long enough to smooth the ticks, short
// enough to follow an operator's change of pace within a minute.
const paceWindowMs = 60_000

// pace is a moving average of a screening's admission rate: the admissions of the events in the last
// paceWindow, over the time they span. Owned by the screening's subscription goroutine.
type pace struct {
	samples []paceSample
}

type paceSample struct {
	atMs     int64
	admitted int
}

// add records an event at atMs that admitted n (0 for one that only moved the line).
func (p *pace) add(atMs int64, n int) {
	if len(p.samples) > 0 && atMs < p.samples[len(p.samples)-1].atMs {
		return // an event from another instance's clock that crossed a later one: keep time monotonic
	}
	p.samples = append(p.samples, paceSample{atMs, n})
	cut := 0
	for cut < len(p.samples)-1 && p.samples[cut].atMs < atMs-paceWindowMs {
		cut++
	}
	if cut > 0 {
		p.samples = append(p.samples[:0], p.samples[cut:]...)
	}
}

// perSecond is the admissions per second over the window, or 0 while fewer than two events span it: the
// admissions of the first event are the start line, not part of the rate.
func (p *pace) perSecond() float64 {
	if len(p.samples) < 2 {
		return 0
	}
	first, last := p.samples[0], p.samples[len(p.samples)-1]
	spanMs := last.atMs - first.atMs
	if spanMs <= 0 {
		return 0
	}
	n := 0
	for _, s := range p.samples[1:] {
		n += s.admitted
	}
	return float64(n) * 1000 / float64(spanMs)
}

// etaSeconds is the wait of the rank (1-based) at perSecond, rounded up; -1 when unknown (no rate yet).
func etaSeconds(rank int64, perSecond float64) int64 {
	if perSecond <= 0 {
		return -1
	}
	return int64(math.Ceil(float64(rank) / perSecond))
}
