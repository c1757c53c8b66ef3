// The scheduler's Prometheus metrics (Metrics, NewMetrics), with the queue's count-off counters among them.

package queue

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the scheduler does (the seed's counters, plus skips by reason, line and active gauges
// and tick duration). Each server registers its own, so tests can run several servers in one process.
type Metrics struct {
	Runs         *prometheus.CounterVec
	Refills      *prometheus.CounterVec
	Admitted     *prometheus.CounterVec
	Failures     *prometheus.CounterVec
	LockMisses   *prometheus.CounterVec
	CapacityHits *prometheus.CounterVec
	Skips        *prometheus.CounterVec
	Abandoned    *prometheus.CounterVec
	Shuffled     *prometheus.CounterVec
	Opens        *prometheus.CounterVec
	Waiting      *prometheus.GaugeVec
	Active       *prometheus.GaugeVec
	Paused       *prometheus.GaugeVec
	TickSeconds  *prometheus.HistogramVec
	// CountOffResends and CountOffsLost count the count-offs sent again for want of an answer, and those
	// given up after every resend (their tokens stay counted as connected: docs/fairness.md). The queue
	// counts them once SetMetrics gave it these metrics.
	CountOffResends prometheus.Counter
	CountOffsLost   prometheus.Counter
	// BeaconMisses counts the times the beacon named by fairness.beacon could not be used: when a
	// pre-queue's seed was drawn (stage "commit": the commitment says beacon=none) or at the opening (stage
	// "open": the round was not fetched in time, and the seed alone ordered the pre-queue).
	BeaconMisses *prometheus.CounterVec
}

// NewMetrics makes the scheduler's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "admission", Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "queue", Name: name, Help: help}, []string{"screening"})
	}
	qcounter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "queue", Name: name, Help: help}, []string{"screening"})
	}
	m := &Metrics{
		Runs:         counter("runs_total", "Admission ticks attempted.", "screening"),
		Refills:      counter("refills_total", "Admissions into slots freed by a reservation or a leave, between ticks.", "screening"),
		Admitted:     counter("admitted_total", "Users admitted (successful activations), by ticks and refills.", "screening"),
		Failures:     counter("failures_total", "Admission ticks that failed with an error.", "screening"),
		LockMisses:   counter("lock_misses_total", "Ticks skipped because another instance held the lock or ran the tick.", "screening"),
		CapacityHits: counter("capacity_hits_total", "Ticks that admitted nobody because max_active users held a slot.", "screening"),
		Skips:        counter("skips_total", "Ticks that admitted nobody, by reason.", "screening", "reason"),
		Abandoned:    qcounter("abandoned_total", "Waiting users dropped from the line (or the pre-queue) because their sockets were gone longer than queue.grace."),
		Shuffled:     qcounter("prequeue_shuffled_total", "Users who waited in the pre-queue and took a shuffled place when the line opened."),
		Opens:        counter("opens_total", "Lines this instance opened at their sale time (once per screening across instances).", "screening"),
		Waiting:      gauge("waiting", "Users waiting in line after the last tick."),
		Active:       gauge("active", "Admitted users holding a slot after the last tick."),
		Paused:       gauge("paused", "1 while the operator has paused the screening's admission (as this instance last saw it)."),
		TickSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "waitroom", Subsystem: "admission", Name: "tick_duration_seconds",
			Help: "Time one admission tick took on this instance, lock to publish (lock misses included).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"screening"}),
	}
	m.CountOffResends = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "queue", Name: "count_off_resends_total",
		Help: "Count-offs of closed sockets sent to Redis again because their pipeline got no answer (each runs once: its mark)."})
	m.CountOffsLost = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "queue", Name: "count_offs_lost_total",
		Help: "Count-offs given up without an answer after every resend: their tokens stay counted as connected."})
	m.BeaconMisses = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "queue", Name: "beacon_misses_total",
		Help: "Times the randomness beacon could not be used for a pre-queue's seed: at its commitment or at its opening (stage)."}, []string{"screening", "stage"})
	reg.MustRegister(m.BeaconMisses)
	reg.MustRegister(m.Runs, m.Refills, m.Admitted, m.Failures, m.LockMisses, m.CapacityHits, m.Skips, m.Abandoned, m.Shuffled, m.Opens, m.Waiting, m.Active, m.Paused, m.TickSeconds,
		m.CountOffResends, m.CountOffsLost)
	return m
}
