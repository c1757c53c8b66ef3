// The ops listener's handler: the metrics and the profiler are served there, and never by the public
// handler.

package server_test

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/testenv"
)

func TestMetricsAndProfilerOnlyOnTheOpsHandler(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	a := newApp(t, env, func(c *config.Config) { c.Bench.Pprof = true })
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		if r := a.get(t, path); r.status != http.StatusNotFound {
			t.Errorf("public GET %s = %d, want 404", path, r.status)
		}
	}
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		res, err := a.client.Get(a.ops.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("ops GET %s = %d, want 200", path, res.StatusCode)
		}
	}
}

func TestOpsHandlerServesNoProfilerUnlessAskedFor(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	a := newApp(t, env, nil)
	for path, want := range map[string]int{"/metrics": http.StatusOK, "/debug/pprof/": http.StatusNotFound, "/healthz": http.StatusNotFound} {
		res, err := a.client.Get(a.ops.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("ops GET %s = %d, want %d", path, res.StatusCode, want)
		}
	}
}
