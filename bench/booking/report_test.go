// Tests of the figures: nearest-rank percentiles, outcome counts and the ratios of the report.

package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	sorted := make([]time.Duration, 100)
	for i := range sorted {
		sorted[i] = time.Duration(i+1) * time.Millisecond // 1ms … 100ms
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {95, 95 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(sorted, tc.p); got != tc.want {
			t.Errorf("percentile(1..100ms, %g) = %s, want %s", tc.p, got, tc.want)
		}
	}
	// Few samples: p99 of ten is the largest, not an interpolation past it.
	ten := sorted[:10]
	if got := percentile(ten, 99); got != 10*time.Millisecond {
		t.Errorf("percentile(1..10ms, 99) = %s, want 10ms", got)
	}
	if got := percentile(sorted[:1], 95); got != time.Millisecond {
		t.Errorf("percentile(one sample, 95) = %s, want 1ms", got)
	}
}

func TestSummarizeCountsEveryOutcome(t *testing.T) {
	samples := []sample{
		{status: http.StatusCreated, latency: 10 * time.Millisecond},
		{status: http.StatusConflict, latency: 20 * time.Millisecond},
		{status: http.StatusConflict, latency: 40 * time.Millisecond},
		{status: http.StatusInternalServerError, latency: 50 * time.Millisecond},
		{err: errors.New("boom"), latency: 80 * time.Millisecond},
	}
	r := summarize("ours", samples)
	if r.Created != 1 || r.Conflict != 2 || r.Other != 2 {
		t.Errorf("summarize: 201/409/other = %d/%d/%d, want 1/2/2", r.Created, r.Conflict, r.Other)
	}
	if r.OtherDetail["HTTP 500"] != 1 || r.OtherDetail["error"] != 1 {
		t.Errorf("summarize: other detail = %v, want HTTP 500 × 1 and error × 1", r.OtherDetail)
	}
	if want := ms(40 * time.Millisecond); r.Avg != want {
		t.Errorf("summarize: avg = %s, want %s (every outcome counts)", r.Avg, want)
	}
	if want := ms(80 * time.Millisecond); r.Max != want || r.P99 != want {
		t.Errorf("summarize: max, p99 = %s, %s, want %s", r.Max, r.P99, want)
	}
	if want := ms(30 * time.Millisecond); r.ConflictAvg != want {
		t.Errorf("summarize: 409 avg = %s, want %s", r.ConflictAvg, want)
	}
}

func TestMetricValueReadsTheLabelledSample(t *testing.T) {
	text := `# HELP go_sql_wait_count_total The total number of connections waited for.
# TYPE go_sql_wait_count_total counter
go_sql_wait_count_total{db_name="other"} 7
go_sql_wait_count_total{db_name="waitroom"} 42
go_sql_wait_duration_seconds_total{db_name="waitroom"} 1.5e-03
process_cpu_seconds_total 2.25
process_cpu_seconds_total_other 9
`
	if got, ok := metricValue(text, "go_sql_wait_count_total", `db_name="waitroom"`); !ok || got != 42 {
		t.Errorf("metricValue(wait count) = %g, %v, want 42, true", got, ok)
	}
	if got, ok := metricValue(text, "go_sql_wait_duration_seconds_total", `db_name="waitroom"`); !ok || got != 0.0015 {
		t.Errorf("metricValue(wait seconds) = %g, %v, want 0.0015, true", got, ok)
	}
	if got, ok := metricValue(text, "process_cpu_seconds_total", ""); !ok || got != 2.25 {
		t.Errorf("metricValue(process cpu, no labels) = %g, %v, want 2.25, true", got, ok)
	}
	if _, ok := metricValue(text, "go_sql_open_connections", `db_name="waitroom"`); ok {
		t.Error("metricValue(absent metric) found a value, want none")
	}
}

func TestRatiosAndTable(t *testing.T) {
	rep := report{Runs: []result{
		{Name: "floor", Conflict: 1000, Avg: ms(5 * time.Millisecond), P99: ms(10 * time.Millisecond)},
		{Name: "ours", Created: 10, Conflict: 990, Avg: ms(10 * time.Millisecond), P99: ms(14 * time.Millisecond), Xacts: 30, IdleXacts: 6},
		{Name: "baseline", Created: 10, Conflict: 990, Avg: ms(500 * time.Millisecond), PoolWaits: 970},
	}}
	rep.finish()
	if rep.BaselineOverOursAvg != 50 {
		t.Errorf("baseline avg ÷ ours avg = %g, want 50", rep.BaselineOverOursAvg)
	}
	if got := rep.OursOverFloorP99; got < 1.3999 || got > 1.4001 {
		t.Errorf("ours p99 ÷ floor p99 = %g, want 1.4", got)
	}
	var b strings.Builder
	writeTable(&b, rep.Runs)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want a header and 3 rows:\n%s", len(lines), b.String())
	}
	if f := strings.Fields(lines[2]); f[0] != "ours" || f[1] != "10" || f[2] != "990" || f[11] != "24" {
		t.Errorf("ours row = %q, want name ours, 10 × 201, 990 × 409, net transactions 24", lines[2])
	}
}
