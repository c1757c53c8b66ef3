// What the gates count for an operator: the wait for a slot and the refusals, by resource and class, and the
// slots each class holds.

package overload

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gates' counters, shared by every gate of an instance (the resource is a label).
type Metrics struct {
	// Wait is how long a request waited for its slot, by resource and class (0 when one was free).
	Wait *prometheus.HistogramVec
	// Refused counts the requests that waited as long as their class may, or until they gave up, unserved.
	Refused *prometheus.CounterVec
	// InUse is how many slots each class holds now.
	InUse *prometheus.GaugeVec
}

// NewMetrics makes the gates' metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "waitroom", Subsystem: "work", Name: "wait_seconds",
			Help:    "Time a request waited for a slot of a shared resource (database, handshake), by class of work.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"resource", "class"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "work", Name: "refused_total",
			Help: "Requests refused a slot of a shared resource after their class's wait, or given up, by class of work."}, []string{"resource", "class"}),
		InUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "work", Name: "in_use",
			Help: "Slots of a shared resource held now, by class of work."}, []string{"resource", "class"}),
	}
	reg.MustRegister(m.Wait, m.Refused, m.InUse)
	return m
}

// counted is one class's series of one gate.
type counted struct {
	wait    prometheus.Observer
	refuses prometheus.Counter
	held    prometheus.Gauge
}

// of is the series of class c at resource.
func (m *Metrics) of(resource string, c Class) *counted {
	return &counted{wait: m.Wait.WithLabelValues(resource, c.String()),
		refuses: m.Refused.WithLabelValues(resource, c.String()), held: m.InUse.WithLabelValues(resource, c.String())}
}

func (k *counted) waited(d time.Duration) {
	if k != nil {
		k.wait.Observe(d.Seconds())
	}
}

func (k *counted) refused() {
	if k != nil {
		k.refuses.Inc()
	}
}

func (k *counted) inUse(n int) {
	if k != nil {
		k.held.Set(float64(n))
	}
}
