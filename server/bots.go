// The quiet treatment of what looks like a bot (bots.*, the "infinite queue"): which sockets are held
// instead of refused (over their address's limits, or from an address that keeps failing the proof of
// work or the access code, then only without a valid solution; from an address over its wrong codes,
// whatever it brought); how many one instance holds; the held token's place, answered as a waiting one's
// (queue's decoys); and the entry's metrics.

package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/limit"
)

// Bots is the infinite queue's settings (bots.*).
type Bots struct {
	// InfiniteQueue holds such sockets instead of refusing them.
	InfiniteQueue bool
	// FailureLimit is how many refusals for the proof of work or the code an address may have in a minute.
	FailureLimit int
	// Hold is how long a held socket is kept.
	Hold time.Duration
	// MaxHeld bounds the sockets this instance holds.
	MaxHeld int
}

// botWatch counts each address's failures and the sockets held.
type botWatch struct {
	Bots
	failures *limit.Rate // a failure spends a token; a spent address is failing
	held     atomic.Int64
}

// newBotWatch counts failures against b.FailureLimit a minute; at 0 the rate is nil and counts nothing.
func newBotWatch(b Bots) *botWatch {
	return &botWatch{Bots: b, failures: limit.NewRate(float64(b.FailureLimit)/60, b.FailureLimit)}
}

// fail counts one failure of addr.
func (w *botWatch) fail(addr string, now time.Time) {
	w.failures.Allow(addr, now)
}

// failing reports whether addr used up its failures of the last minute.
func (w *botWatch) failing(addr string, now time.Time) bool {
	return w.failures.Spent(addr, now)
}

// The reasons a socket is held, the label of waitroom_bots_held_total.
const (
	heldRateLimited = "rate_limited"
	heldFailures    = "failures"
	heldWrongCodes  = "wrong_codes"
)

// holdVerdict puts a's socket in the infinite queue for reason when the treatment is on and this instance
// holds fewer than bots.max_held: a verdict for the hub to hold it; false when it did not (the caller
// refuses the socket as it would have). The socket is shown a place behind everyone now waiting, which
// never moves, and a token that is registered in no line; the status route answers that token as a waiting
// one while it is held (queue.NewDecoy). The caller has made sure the socket's own token holds no place: a
// held socket must never lose a real one.
func (s *Server) holdVerdict(ctx context.Context, a arrival, reason string) (hub.Verdict, bool) {
	w := s.bots
	if !w.InfiniteQueue {
		return hub.Verdict{}, false
	}
	if w.held.Add(1) > int64(w.MaxHeld) {
		w.held.Add(-1)
		return hub.Verdict{}, false
	}
	decoy, err := s.Queue.NewDecoy(ctx, a.screening, w.Hold)
	if err != nil {
		s.Log.Warn("socket: remember a held place", "screening", a.screening, "err", err)
	}
	s.entryMetrics.heldTotal.WithLabelValues(reason).Inc()
	first := hub.QueuedMessage(decoy)
	return hub.Verdict{Hold: first, HoldFor: w.Hold, HoldDone: func() { w.held.Add(-1) }}, true
}

// entryMetrics count what the entry checks decided.
type entryMetrics struct {
	entries    *prometheus.CounterVec
	challenges prometheus.Counter
	heldTotal  *prometheus.CounterVec
	heldNow    prometheus.GaugeFunc
}

// newEntryMetrics registers the entry's metrics on reg (nil: none); held counts the sockets held now.
func newEntryMetrics(reg prometheus.Registerer, held *atomic.Int64) *entryMetrics {
	m := &entryMetrics{
		entries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "entry_checks_total",
			Help: "Sockets of screenings with entry rules (a proof of work, an access code), by outcome: ok (a new place), kept (a token that held its place), or the refusal's code (POW_REQUIRED, POW_INVALID, CODE_REQUIRED, CODE_INVALID, CODE_USED, RATE_LIMITED for an address over its wrong codes, UNAVAILABLE).",
		}, []string{"outcome"}),
		challenges: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "pow_challenges_total",
			Help: "Proof-of-work challenges issued (GET /api/screenings/{id}/challenge).",
		}),
		heldTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Subsystem: "bots", Name: "held_total",
			Help: "Sockets put in the infinite queue (bots.infinite_queue), by reason: rate_limited (over the address's limits), failures (the address kept failing the proof of work or the code) or wrong_codes (the address is over limits.wrong_codes_per_minute).",
		}, []string{"reason"}),
		heldNow: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "waitroom", Subsystem: "bots", Name: "held",
			Help: "Sockets this instance holds in the infinite queue now.",
		}, func() float64 { return float64(held.Load()) }),
	}
	if reg != nil {
		reg.MustRegister(m.entries, m.challenges, m.heldTotal, m.heldNow)
	}
	return m
}

func (m *entryMetrics) outcome(o string) { m.entries.WithLabelValues(o).Inc() }
