// The HTTP calls of the end-to-end tests: a reservation, a JSON read, the admin API, and a metric.

package apptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// AdminKey is the admin key of the tests that start a server with WAITROOM_ADMIN_KEY set to it.
const AdminKey = "operator-key-0123456789"

// Reserve posts a reservation of seats with pass as its bearer token ("" sends none) and returns the
// status and the decoded body.
func (s *Server) Reserve(t testing.TB, screening, pass string, seats ...string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"seats": seats})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/screenings/"+screening+"/reservations", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if pass != "" {
		req.Header.Set("Authorization", "Bearer "+pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// ReserveCount reserves count seats, best available, with pass (the reservation's body {"count": N}).
func (s *Server) ReserveCount(t testing.TB, screening, pass string, count int) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	return s.call(t, http.MethodPost, "/api/screenings/"+screening+"/reservations", pass, map[string]int{"count": count}, &out), out
}

// PostJSON posts body as JSON to path (under the server's root), decodes the answer into out when not nil,
// and returns the status.
func (s *Server) PostJSON(t testing.TB, path string, body, out any) int {
	t.Helper()
	return s.call(t, http.MethodPost, path, "", body, out)
}

// Put sends body as JSON to path (under the server's root) with PUT, decodes the answer into out when not
// nil, and returns the status.
func (s *Server) Put(t testing.TB, path string, body, out any) int {
	t.Helper()
	return s.call(t, http.MethodPut, path, "", body, out)
}

// GetJSON gets path and decodes the body into v, failing the test if it is not JSON; it returns the status.
func (s *Server) GetJSON(t testing.TB, path string, v any) int {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	return resp.StatusCode
}

// Admin calls the admin API (path under /api/admin) with AdminKey, sends body as JSON when not nil, and
// decodes the answer into out when not nil; it returns the status.
func (s *Server) Admin(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	return s.call(t, method, "/api/admin"+path, AdminKey, body, out)
}

// ErrorCode is the code of an error body {"error":{"code":…}}, or "".
func ErrorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// MetricValue reads the counter name{screening} from a server's /metrics at opsURL (Server.OpsURL,
// Process.OpsURL; 0 when absent: never counted there).
func MetricValue(t testing.TB, client *http.Client, opsURL, name, screening string) int {
	t.Helper()
	n, _ := MetricSeries(t, client, opsURL, fmt.Sprintf("%s{screening=%q}", name, screening))
	return n
}

// MetricSeries reads one series (its name and labels as /metrics spells them) from a server's /metrics at
// opsURL (its ops listener), and whether it is there.
func MetricSeries(t testing.TB, client *http.Client, opsURL, series string) (int, bool) {
	t.Helper()
	if opsURL == "" {
		t.Fatal("apptest: no ops URL to read /metrics from (the server was started with http.ops_addr empty)")
	}
	resp, err := client.Get(opsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics = %s, want 200", opsURL, resp.Status)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	prefix := series + " "
	for line := range strings.Lines(buf.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			return int(n), true
		}
	}
	return 0, false
}

// Post sends an empty POST to path (under the server's root) with bearer as its bearer key ("" sends none),
// decodes the answer into out when not nil, and returns the status.
func (s *Server) Post(t testing.TB, path, bearer string, out any) int {
	t.Helper()
	return s.call(t, http.MethodPost, path, bearer, nil, out)
}

// call sends method to path with bearer as its bearer key ("" sends none) and body as JSON when not nil,
// decodes the answer into out when not nil, and returns the status.
func (s *Server) call(t testing.TB, method, path, bearer string, body, out any) int {
	t.Helper()
	rd := bytes.NewReader(nil)
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}
