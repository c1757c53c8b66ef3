// The e-mails' Prometheus metrics: what was written, each attempt's outcome, what waits, and the links
// claimed.

package notify

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The outcomes of an attempt, the label of waitroom_notify_attempts_total.
const (
	outcomeSent          = "sent"
	outcomeFailedAttempt = "failed_attempt"
	outcomeGaveUp        = "gave_up"
)

// Metrics count the e-mails through the outbox on this instance, and gauge those pending as its last poll
// read them. Each server registers its own.
type Metrics struct {
	Written  prometheus.Counter
	Sent     prometheus.Counter
	Failed   prometheus.Counter
	Deferred prometheus.Counter
	Attempts *prometheus.CounterVec
	Pending  prometheus.Gauge
	Claims   *prometheus.CounterVec
}

// NewMetrics makes the e-mails' metrics and registers them with reg (nil: nowhere).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "notify", Name: name, Help: help})
	}
	m := &Metrics{
		Written: counter("written_total", "E-mails written into the outbox (Due): one per notice and token with an address."),
		Sent:    counter("sent_total", "E-mails the SMTP server took."),
		Failed:  counter("failed_total", "E-mails given up: after their last attempt, or their deadline passed before they could be sent."),
		Deferred: counter("deferred_total",
			"Times an e-mail was due but its address had notify.per_address e-mails in the past hour: it waits for the hour to free a place."),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "notify", Name: "attempts_total",
			Help: "Attempts to send an e-mail, by outcome: sent, failed_attempt (tried again later), gave_up (the last attempt failed)."},
			[]string{"outcome"}),
		Pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "waitroom", Subsystem: "notify", Name: "pending",
			Help: "E-mails neither sent nor given up, as this instance's last poll of the outbox read them."}),
		Claims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "waitroom", Subsystem: "notify", Name: "claims_total",
			Help: "Links opened, by outcome: ok, used (opened before), expired, unknown (forged or forgotten)."}, []string{"outcome"}),
	}
	for _, o := range []string{outcomeSent, outcomeFailedAttempt, outcomeGaveUp} {
		m.Attempts.WithLabelValues(o)
	}
	for _, o := range []string{"ok", "used", "expired", "unknown"} {
		m.Claims.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.Written, m.Sent, m.Failed, m.Deferred, m.Attempts, m.Pending, m.Claims)
	}
	return m
}

// claim counts a claim's outcome (an error other than a refusal is not counted).
func (m *Metrics) claim(err error) {
	outcome := ""
	switch {
	case err == nil:
		outcome = "ok"
	case errors.Is(err, ErrLinkUsed):
		outcome = "used"
	case errors.Is(err, ErrLinkExpired):
		outcome = "expired"
	case errors.Is(err, ErrLinkUnknown):
		outcome = "unknown"
	default:
		return
	}
	m.Claims.WithLabelValues(outcome).Inc()
}
