// The entry's metrics: what the checks decided, the challenges issued, the sockets held as bots.

package entry

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics count what the entry checks decided.
type metrics struct {
	entries    *prometheus.CounterVec
	challenges prometheus.Counter
	heldTotal  *prometheus.CounterVec
	heldNow    prometheus.GaugeFunc
}

// newMetrics registers the entry's metrics on reg (nil: none); held counts the sockets held now.
func newMetrics(reg prometheus.Registerer, held *atomic.Int64) *metrics {
	m := &metrics{
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

func (m *metrics) outcome(o string) { m.entries.WithLabelValues(o).Inc() }
