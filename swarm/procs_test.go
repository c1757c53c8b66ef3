// Tests of the split over child processes: shares, progress mirroring, merged results.

package swarm

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sampleResults are users of every outcome, with pushes, as a hold or flow run leaves them.
func sampleResults() []result {
	return []result{
		{Outcome: Ticket, Connected: true, Connect: time.Millisecond, WasAdmitted: true, InQueue: time.Second,
			Reservations: []time.Duration{time.Millisecond, 2 * time.Millisecond}, Seats: []string{"A1"},
			FirstDialAt: at(0), RegisteredAt: at(5),
			Positions: []position{first(pos(1000, 12)), pos(2000, 30)}, Windows: []window{{From: at(5), To: at(3010), Admitted: true}}},
		{Outcome: SoldOut, Connected: true, Connect: 2 * time.Millisecond, FirstDialAt: at(1), RegisteredAt: at(8),
			Positions: []position{first(pos(1000, 14)), pos(2000, 31), pos(3000, 7)}, Windows: []window{waited(8, 3500)}},
		{Outcome: Held, Connected: true, Connect: 3 * time.Millisecond, Reconnects: 1, FirstDialAt: at(2), RegisteredAt: at(9),
			Positions: []position{first(pos(1000, 15)), pos(3000, 9)}, Windows: []window{waited(9, 1500), waited(1800, 4000)}}, // missed 2000
		{Outcome: Admitted, Connected: true, WasAdmitted: true, InQueue: 2 * time.Second, FirstDialAt: at(3), RegisteredAt: at(12),
			Positions: []position{first(pos(1000, 20))}, Windows: []window{{From: at(12), To: at(2020), Admitted: true}}},
		{Outcome: Error, ErrKind: "read", ErrText: "read: reset", FirstDialAt: at(4)},
		{Outcome: Error, ErrKind: kindTimeout, ErrText: "never started: the run was stopped"},
	}
}

func TestResultsMergedFromChildrenReportAsInOneProcess(t *testing.T) {
	results := sampleResults()
	cfg, err := Config{URL: "http://127.0.0.1:1", Screening: "x", Users: len(results), Procs: 2}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	want := summarize(cfg, results, 5*time.Second)

	var merged []result
	for _, j := range split(cfg, base) {
		var out bytes.Buffer // a child's stdout
		if err := encodeResults(&out, results[j.First:j.First+j.Config.Users]); err != nil {
			t.Fatal(err)
		}
		part, err := decodeResults(&out)
		if err != nil {
			t.Fatal(err)
		}
		merged = append(merged, part...)
	}
	got := summarize(cfg, merged, 5*time.Second)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report from merged child results =\n  %+v\nwant, as in one process,\n  %+v", got, want)
	}
	if want.Push.Ticks != 3 || want.Push.MissedTicks != 1 || want.Outcomes != (Outcomes{Ticket: 1, SoldOut: 1, Held: 1, Admitted: 1, Error: 2}) {
		t.Errorf("the sample is not what this test means to merge: %+v, ticks %d, missed %d", want.Outcomes, want.Push.Ticks, want.Push.MissedTicks)
	}
}

func TestSplitSharesConsecutiveUsersAndConcurrency(t *testing.T) {
	cfg := Config{Users: 10, Concurrency: 7, Procs: 3, Timeout: time.Minute}
	jobs := split(cfg, base)
	wantUsers, wantConc, wantFirst := []int{4, 3, 3}, []int{3, 2, 2}, []int{0, 4, 7}
	for i, j := range jobs {
		if j.Config.Users != wantUsers[i] || j.Config.Concurrency != wantConc[i] || j.First != wantFirst[i] || j.Config.Procs != 1 || !j.Start.Equal(base) {
			t.Errorf("job %d = users %d, concurrency %d, first %d, procs %d, start %v; want %d, %d, %d, 1, %v",
				i, j.Config.Users, j.Config.Concurrency, j.First, j.Config.Procs, j.Start, wantUsers[i], wantConc[i], wantFirst[i], base)
		}
	}
}

func TestSplitSharesTheArrivalRateAndNeverMakesItUnlimited(t *testing.T) {
	for _, tc := range []struct {
		rate int
		want []int
	}{{10, []int{4, 3, 3}}, {1, []int{1, 1, 1}}, {0, []int{0, 0, 0}}} {
		jobs := split(Config{Users: 10, Concurrency: 10, Procs: 3, Rate: tc.rate, Timeout: time.Minute}, base)
		for i, j := range jobs {
			if j.Config.Rate != tc.want[i] {
				t.Errorf("rate %d: job %d rate = %d, want %d (0 would be unlimited)", tc.rate, i, j.Config.Rate, tc.want[i])
			}
		}
	}
}

func TestChildLogMirrorsProgressAndKeepsTheRest(t *testing.T) {
	var tl tally
	l := &childLog{tally: &tl}
	var out bytes.Buffer
	reportProgress(&out, counts{5, 4, 0, 1, 0, 2, 1, 1, 3, 2, 1})
	text := "panic: boom\n" + out.String()
	// Written in pieces, as a pipe delivers it.
	for _, piece := range []string{text[:7], text[7:20], text[20:]} {
		if _, err := l.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tl.load(); got != (counts{5, 4, 0, 1, 0, 2, 1, 1, 3, 2, 1}) {
		t.Errorf("tally = %v, want the reported counts", got)
	}
	if got := l.tail(); !strings.Contains(got, "panic: boom") || strings.Contains(got, progressPrefix) {
		t.Errorf("tail = %q, want the panic and no progress line", got)
	}
	if _, ok := parseProgress(progressPrefix + "1 2 x 4 5 6 7 8"); ok {
		t.Error("parseProgress accepted a line with a word among the numbers")
	}
}

func TestConfigChecksProcs(t *testing.T) {
	for _, tc := range []struct {
		cfg       Config
		wantProcs int
		wantErr   string
	}{
		{Config{Users: 100}, 1, ""},
		{Config{Users: 15000}, 1, ""},
		{Config{Users: 15001}, 2, ""},
		{Config{Users: 40000, Concurrency: 1000}, 1, ""}, // sockets open at once decide
		{Config{Users: 20000, Procs: 1}, 0, "raise -procs to at least 2"},
		{Config{Users: 3, Procs: 4}, 0, "at most one process per user"},
	} {
		c := tc.cfg
		c.URL, c.Screening, c.Sources = "http://127.0.0.1:8080", "x", 2
		got, err := c.normalized()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("normalized(%+v) = %v", tc.cfg, err)
		case tc.wantErr == "" && got.Procs != tc.wantProcs:
			t.Errorf("normalized(%+v).Procs = %d, want %d", tc.cfg, got.Procs, tc.wantProcs)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("normalized(%+v) = %v, want an error containing %q", tc.cfg, err, tc.wantErr)
		}
	}
}
