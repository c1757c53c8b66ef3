// The wait estimate: a screening's admission rate measured over the last minute of its events, and the wait
// it gives a rank.

package hub

import "sync"

// paceWindow is how far back the admission rate is measured: long enough to smooth the ticks, short
// enough to follow an operator's change of pace within a minute.
const paceWindowMs = 60_000

// pace is a moving average of a screening's admission rate: the admissions of the events in the last
// paceWindow, over the time they span. The screening's follower moves it, once per event; the mutex keeps it
// whole when something else dispatches an event too (Hub.Dispatch, called by a test while the follower reads
// the line).
type pace struct {
	mu      sync.Mutex
	samples []paceSample
}

type paceSample struct {
	atMs     int64
	admitted int
	// read: the start line read with the line (start), not an event heard.
	read bool
}

// add records an event at atMs that admitted n (0 for one that only moved the line).
func (p *pace) add(atMs int64, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.samples) > 0 && atMs < p.samples[len(p.samples)-1].atMs {
		return // an event from another instance's clock that crossed a later one: keep time monotonic
	}
	if len(p.samples) == 1 && p.samples[0].read && atMs == p.samples[0].atMs {
		return // the admission the start line was read at, heard after the read: it is the start line
	}
	p.samples = append(p.samples, paceSample{atMs: atMs, admitted: n})
	cut := 0
	for cut < len(p.samples)-1 && p.samples[cut].atMs < atMs-paceWindowMs {
		cut++
	}
	if cut > 0 {
		p.samples = append(p.samples[:0], p.samples[cut:]...)
	}
}

// start gives a pace that has seen no event its start line: the latest admission, read with the line
// (queue.Line.AdmittedAtMs). An instance that began to follow the screening after that admission, or
// missed it, then measures the rate from the first event it hears, as one that heard the admission does:
// the start line's own admissions are not part of the rate either way.
func (p *pace) start(atMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.samples) == 0 && atMs > 0 {
		p.samples = append(p.samples, paceSample{atMs: atMs, read: true})
	}
}

// paceRate is a measured admission rate as the exact fraction admitted / spanMs, so a wait computed from
// it is exact too (a float rate's quotient can land a hair above a whole second and round up one more).
type paceRate struct {
	admitted int64
	spanMs   int64
}

// rate is the admissions over the window and the time they span; zero while fewer than two events span it:
// the admissions of the first event are the start line, not part of the rate.
func (p *pace) rate() paceRate {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.samples) < 2 {
		return paceRate{}
	}
	first, last := p.samples[0], p.samples[len(p.samples)-1]
	spanMs := last.atMs - first.atMs
	if spanMs <= 0 {
		return paceRate{}
	}
	var n int64
	for _, s := range p.samples[1:] {
		n += int64(s.admitted)
	}
	return paceRate{admitted: n, spanMs: spanMs}
}

// perSecond is the rate in admissions per second (0 while unknown).
func (p *pace) perSecond() float64 {
	r := p.rate()
	if r.admitted <= 0 {
		return 0
	}
	return float64(r.admitted) * 1000 / float64(r.spanMs)
}

// etaSeconds is the wait of the rank (1-based) at rate r, rounded up to the second: ⌈rank·span / (admitted·1000)⌉
// in integers; -1 when unknown (no rate yet, or nobody admitted in the window).
func etaSeconds(rank int64, r paceRate) int64 {
	if r.admitted <= 0 || r.spanMs <= 0 || rank <= 0 {
		return -1
	}
	den := r.admitted * 1000
	return (rank*r.spanMs + den - 1) / den
}
