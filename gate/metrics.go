// The gate's counter: every request it decided, by room and outcome. The room label takes only the rooms
// gate.paths names (and "" for unprotected paths), so its series are bounded by the configuration.

package gate

import "github.com/prometheus/client_golang/prometheus"

// The outcomes of a request at the gate.
const (
	outcomeUnprotected = "unprotected" // not under a protected prefix: to the origin untouched
	outcomePassthrough = "passthrough" // the room's mode is passthrough: through without an admission
	outcomePassed      = "passed"      // a live admission's cookie: through
	outcomeDirect      = "admitted_direct"
	// direct_limited: the room had a free slot, but the client's address had taken its share of direct
	// admissions (limit.Rate); sent to the line, and counted as queued too.
	outcomeDirectLimited = "direct_limited"
	outcomeQueued        = "queued"   // sent to the line (redirect or JSON)
	outcomeRefused       = "refused"  // a cookie (or an entered pass) that is not a live admission of this room
	outcomeReleased      = "released" // the origin ended the admission; its slot freed
	outcomeEntered       = "entered"  // the enter form set the cookie of an admission from the line
	// rate_limited: a JSON client whose address was over its pace of new places (limit.Rate, shared with
	// the sockets): 429 RATE_LIMITED, no place; held: the same with the infinite queue on, shown a place
	// registered nowhere. Each is counted as queued too.
	outcomeRateLimited = "rate_limited"
	outcomeHeld        = "held"
)

type metrics struct {
	requests *prometheus.CounterVec
	// counters are the series of every room and outcome, looked up once: a request costs a map read, not a
	// hash of its labels.
	counters map[[2]string]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, paths []Path) *metrics {
	m := &metrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitroom_gate_requests_total",
		Help: "Requests the gate decided, by room (empty: unprotected paths) and outcome.",
	}, []string{"room", "outcome"})}
	if reg != nil {
		reg.MustRegister(m.requests)
	}
	// Every series a dashboard reads exists from the start, at 0.
	m.counters = map[[2]string]prometheus.Counter{{"", outcomeUnprotected}: m.requests.WithLabelValues("", outcomeUnprotected)}
	for _, p := range paths {
		for _, o := range []string{outcomePassthrough, outcomePassed, outcomeDirect, outcomeQueued, outcomeRefused, outcomeReleased, outcomeEntered, outcomeDirectLimited, outcomeRateLimited, outcomeHeld} {
			m.counters[[2]string{p.Room, o}] = m.requests.WithLabelValues(p.Room, o)
		}
	}
	return m
}

// count counts one request of room with outcome (rooms and outcomes are fixed at New: the map is only read).
func (m *metrics) count(room, outcome string) {
	if c, ok := m.counters[[2]string{room, outcome}]; ok {
		c.Inc()
		return
	}
	m.requests.WithLabelValues(room, outcome).Inc()
}
