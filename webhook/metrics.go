// The deliveries' Prometheus metrics: each attempt's outcome, and the webhooks still pending.

package webhook

import "github.com/prometheus/client_golang/prometheus"

// The outcomes of an attempt, the label of waitroom_webhook_deliveries_total.
const (
	outcomeDelivered     = "delivered"
	outcomeFailedAttempt = "failed_attempt"
	outcomeGaveUp        = "gave_up"
)

// Metrics count the attempts by outcome, and gauge the webhooks not delivered and not given up as this
// instance's last poll read them. Each server registers its own.
type Metrics struct {
	Deliveries *prometheus.CounterVec
	Pending    prometheus.Gauge
}

// NewMetrics makes the deliveries' metrics and registers them with reg (nil: nowhere).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "webhook", Name: "deliveries_total",
			Help: "Webhook attempts by outcome: delivered (a 2xx), failed_attempt (tried again later), gave_up (the last attempt failed)."},
			[]string{"outcome"}),
		Pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "webhook", Name: "pending",
			Help: "Webhooks neither delivered nor given up, as this instance's last poll of the outbox read them."}),
	}
	for _, o := range []string{outcomeDelivered, outcomeFailedAttempt, outcomeGaveUp} {
		m.Deliveries.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.Deliveries, m.Pending)
	}
	return m
}
