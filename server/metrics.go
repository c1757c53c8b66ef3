// The HTTP metrics: every answer's duration by route pattern, method and status, and the reservation
// route's outcomes and duration, in the server's Prometheus registry.

package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets span an answer from a read out of memory (a millisecond) to a reservation that waited out
// its lock wait and a slow database (seconds), ×2.5 or ×2 a step: 1 ms … 10 s.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// unmatchedRoute labels a request whose path no route's pattern matched (echo's 404, a group's catch-all
// included), so a scan of made-up URLs adds no series. A known path asked with another method keeps its
// pattern (a 405, a CORS preflight).
const unmatchedRoute = "unmatched"

// httpMetrics are the server's own metrics.
type httpMetrics struct {
	requests            *prometheus.HistogramVec
	reservations        *prometheus.CounterVec
	reservationDuration prometheus.Histogram
	// keyRefusals counts the refused attempts at a bearer key (adminguard.go).
	keyRefusals *prometheus.CounterVec
	// qrDrawn counts the tickets' QR codes drawn, not those answered from the cache (orders.go).
	qrDrawn prometheus.Counter
	// patterns holds every route's pattern, filled by know once the routes are in, read only after.
	patterns map[string]bool
}

// newHTTPMetrics makes the server's metrics and registers them with reg (nil: nowhere, they only count).
func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "waitroom", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to answer a request, by route pattern (\"unmatched\" when no route matched), method and status. Server-sent event streams are not observed.",
			Buckets: latencyBuckets,
		}, []string{"route", "method", "status"}),
		reservations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "reservations_total",
			Help: "Reservation requests answered, by outcome: ok (2xx) or the error code of the answer (SEAT_TAKEN, SOLD_OUT, …).",
		}, []string{"outcome"}),
		reservationDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "waitroom", Name: "reservation_duration_seconds",
			Help:    "Time the reservation handler took, from the decoded request to the answer, whatever its outcome.",
			Buckets: latencyBuckets,
		}),
		keyRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "key_refusals_total",
			Help: "Requests refused at a bearer key, by key (admin, confirm) and reason: wrong_key (401: a key was compared and was wrong) or locked_out (429: the address had used up its attempts, no key compared).",
		}, []string{"key", "reason"}),
		qrDrawn: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "ticket_qr_drawn_total",
			Help: "Tickets' QR codes drawn (GET /t/{code}/qr.png); a confirmed order's is drawn once per instance and host, then answered from memory.",
		}),
		patterns: map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.reservations, m.reservationDuration, m.keyRefusals, m.qrDrawn)
	}
	return m
}

// know records the patterns of the routes served (not the catch-alls that only answer 404), so a request
// can be labelled by its pattern or as unmatched.
func (m *httpMetrics) know(routes []*echo.Route) {
	for _, r := range routes {
		if r.Method != echo.RouteNotFound {
			m.patterns[r.Path] = true
		}
	}
}

// observeRequests is the outermost middleware: it times every answer, a recovered panic's 500 included,
// and labels it by c.Path(), the route's pattern, never the URL (whose ids and tokens are unbounded).
func (s *Server) observeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if strings.HasPrefix(c.Response().Header().Get(echo.HeaderContentType), "text/event-stream") {
			return err // the control room's stream lasts as long as the page is open: not an answer's time
		}
		status, _ := answered(c, err)
		route := c.Path()
		if !s.metrics.patterns[route] {
			route = unmatchedRoute
		}
		s.metrics.requests.WithLabelValues(route, knownMethod(c.Request().Method), strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return err
	}
}

// countReservations is the reservation route's middleware: its outcome, by the code the answer carries, and
// its duration.
func (s *Server) countReservations(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		s.metrics.reservationDuration.Observe(time.Since(start).Seconds())
		status, code := answered(c, err)
		outcome := "ok"
		switch {
		case status >= 200 && status < 300:
		case code != "":
			outcome = code
		default:
			outcome = "HTTP_ERROR"
		}
		s.metrics.reservations.WithLabelValues(outcome).Inc()
		return err
	}
}

// answered returns the status a request is answered with and, for an error the error handler will answer,
// its code (classify); an answer already sent has its own status and no code.
func answered(c echo.Context, err error) (int, string) {
	if err != nil && !c.Response().Committed {
		status, body := classify(err)
		return status, body.Code
	}
	return c.Response().Status, ""
}

// knownMethod keeps a request's method as a label only if it is a standard one: a client may send any.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
