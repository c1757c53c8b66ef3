// What booking counts for an operator: every order transition by outcome (the error codes of its refusals),
// and the holds the sweeper expired.

package booking

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are booking's counters.
type Metrics struct {
	// Transitions counts order transitions (hold, confirm, cancel, expire) by outcome: ok, or the code of
	// the refusal.
	Transitions *prometheus.CounterVec
}

// NewMetrics makes booking's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "order", Name: "transitions_total",
			Help: "Order transitions (hold, confirm, cancel, expire), by outcome: ok or the refusal's code."}, []string{"transition", "outcome"}),
	}
	reg.MustRegister(m.Transitions)
	return m
}

// SetMetrics makes b count its order transitions in m. Call it before b is used.
func (b *Booking) SetMetrics(m *Metrics) { b.metrics = m }

// transition counts transition name with the outcome of err; nothing on a nil Metrics.
func (m *Metrics) transition(name string, err error) {
	if m == nil {
		return
	}
	m.Transitions.WithLabelValues(name, outcome(err)).Inc()
}

// outcome is the word for err in the metrics: ok, or the code the API answers it with.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrHoldExpired):
		return "HOLD_EXPIRED"
	case errors.Is(err, ErrOrderCancelled):
		return "ORDER_CANCELLED"
	case errors.Is(err, ErrOrderConfirmed):
		return "ORDER_CONFIRMED"
	case errors.Is(err, ErrOrderNotFound):
		return "ORDER_NOT_FOUND"
	}
	return "INTERNAL"
}
