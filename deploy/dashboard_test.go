// Tests of the Grafana dashboard (grafana/waitroom-dashboard.json): its panels are laid out without
// overlapping, each queries the data source the operator picks, and every waitroom metric it plots is one
// docs/operations.md describes, so a renamed or misspelt metric shows here rather than as an empty panel;
// the admission log's are checked against the metrics package fairness registers.

package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/fairness"
)

type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) []dashboardPanel {
	t.Helper()
	raw, err := os.ReadFile("grafana/waitroom-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var all []dashboardPanel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all
}

// TestDashboardPanelsDoNotOverlap checks the layout: ids are unique, every panel fits the 24 columns, and
// no two panels share a cell of the grid.
func TestDashboardPanelsDoNotOverlap(t *testing.T) {
	panels := readDashboard(t)
	ids := map[int]string{}
	taken := map[[2]int]string{}
	for _, p := range panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share the id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q at %+v does not fit the 24 columns", p.Title, g)
			continue
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[[2]int{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at column %d, row %d", other, p.Title, x, y)
					break
				}
				taken[[2]int{x, y}] = p.Title
			}
		}
	}
}

// metricName finds the waitroom metrics an expression reads; a histogram's series are its name.
var metricName = regexp.MustCompile(`\bwaitroom_[a-z0-9_]+`)

// TestDashboardPlotsDocumentedMetrics checks that every panel queries ${DS_PROMETHEUS} and that each
// waitroom metric in its expressions is in docs/operations.md (as `name` or `name{labels}`).
func TestDashboardPlotsDocumentedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := string(raw)
	seen := 0
	for _, p := range readDashboard(t) {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q with %d queries, want ${DS_PROMETHEUS} and at least one", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, q := range p.Targets {
			if q.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q: a query on data source %q, want ${DS_PROMETHEUS}", p.Title, q.Datasource.UID)
			}
			for _, name := range metricName.FindAllString(q.Expr, -1) {
				seen++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					base = strings.TrimSuffix(base, suffix)
				}
				if !strings.Contains(docs, "`"+base+"`") && !strings.Contains(docs, "`"+base+"{") {
					t.Errorf("panel %q plots %s, which docs/operations.md does not describe", p.Title, name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no waitroom metric found in the dashboard's queries")
	}
}

// TestDashboardPlotsTheAdmissionLog checks the Admission log row: its panels plot the records appended, the
// checkpoints signed and the append latency, and every admission log metric the dashboard names is one
// package fairness registers, under that name.
func TestDashboardPlotsTheAdmissionLog(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := fairness.NewMetrics(reg)
	m.AppendSeconds.Observe(0.01) // a histogram is gathered once it has a sample
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, f := range families {
		registered[f.GetName()] = true
	}
	plotted := map[string]bool{}
	inRow := false
	for _, p := range readDashboard(t) {
		if p.Type == "row" {
			inRow = p.Title == "Admission log"
			continue
		}
		for _, q := range p.Targets {
			for _, name := range metricName.FindAllString(q.Expr, -1) {
				if !strings.HasPrefix(name, "waitroom_admission_log_") {
					continue
				}
				base := strings.TrimSuffix(name, "_bucket")
				if !registered[base] {
					t.Errorf("panel %q plots %s, which package fairness does not register", p.Title, name)
				}
				if inRow {
					plotted[base] = true
				}
			}
		}
	}
	for _, want := range []string{"waitroom_admission_log_records_total", "waitroom_admission_log_checkpoints_total",
		"waitroom_admission_log_append_seconds"} {
		if !plotted[want] {
			t.Errorf("the Admission log row plots no %s", want)
		}
	}
}
