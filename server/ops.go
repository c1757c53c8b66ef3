// The operators' listener (http.ops_addr): the metrics, and Go's profiler when bench.pprof is on, kept off
// the public handler so that neither is reachable from the internet by default.

package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OpsHandler serves the operators' listener: GET /metrics (Prometheus text format), and with Pprof Go's
// profiler under /debug/pprof/. Everything else is 404. It has none of the public handler's middleware:
// what it serves is read by Prometheus and by operators, not by the public.
func (s *Server) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{}))
	if s.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}
