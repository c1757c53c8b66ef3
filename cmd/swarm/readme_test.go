// The README's load test as a newcomer runs it: its swarm lines, against a server with the settings of
// `make run` on a fresh data/, print what the README says they print, and again on a second run.

package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// holdUsers and holdDuration scale the README's hold line (5,000 users for 60 s) down to what `go test`
// may hold on a shared machine: enough ticks (1 s apart under make run) for the demo's 100 admissions.
const (
	holdUsers    = 500
	holdDuration = "15s"
)

func TestTheREADMEsSwarmLinesPrintWhatTheREADMESays(t *testing.T) {
	readme := readFile(t, "../../README.md")
	flow, hold := readmeSwarmLines(t, readme)
	for _, claim := range []string{"100 tickets, 1,900 sold_out", "0 tickets, 2,000 sold_out", "100 admitted, 4,900 held", "5,000 sold_out once the demo is sold out"} {
		if !strings.Contains(strings.Join(strings.Fields(readme), " "), claim) {
			t.Errorf("README.md no longer says %q: this test checks it", claim)
		}
	}
	settings := makeRunSettings(t, readFile(t, "../../Makefile"))
	settings["WAITROOM_DEMO_ENABLED"] = "true"
	// Both built as make run and go run build them, without the race detector: under it the server is
	// several times slower than the one the README describes, and 2,000 users time out on a loaded machine.
	server, swarmBin := apptest.Build(t), buildSwarm(t)

	srv := apptest.StartProcess(t, http.DefaultClient, server, testenv.New(t, testenv.Embedded), 1, settings)
	if srv == nil {
		t.FailNow()
	}
	first := runLine(t, swarmBin, srv.URL, flow)
	if got, want := outcomes(first), map[string]int{"ticket": 100, "sold_out": 1900, "gave_up": 0, "error": 0}; !subset(want, got) {
		t.Errorf("the README's first line on a fresh server printed %v, want %v:\n%s", got, want, first)
	}
	second := runLine(t, swarmBin, srv.URL, flow)
	if got, want := outcomes(second), map[string]int{"ticket": 0, "sold_out": 2000, "gave_up": 0, "error": 0}; !subset(want, got) {
		t.Errorf("the README's first line, run again, printed %v, want %v:\n%s", got, want, second)
	}
	if !strings.Contains(second, "(100 sold before the run)") {
		t.Errorf("the second run does not say the demo was sold before it:\n%s", second)
	}

	// The hold line at a scale a test may hold: on the sold-out demo, every user is told so at once.
	scaled := withFlag(withFlag(hold, "-users", strconv.Itoa(holdUsers)), "-duration", holdDuration)
	soldOut := runLine(t, swarmBin, srv.URL, scaled)
	if got, want := outcomes(soldOut), map[string]int{"admitted": 0, "held": 0, "sold_out": holdUsers, "error": 0}; !subset(want, got) {
		t.Errorf("the README's hold line with %d users on the sold-out demo printed %v, want %v:\n%s", holdUsers, got, want, soldOut)
	}
	// On a server of its own, a fresh data/: the demo's 100 admitted, the others held in line.
	srv = apptest.StartProcess(t, http.DefaultClient, server, testenv.New(t, testenv.Embedded), 2, settings)
	if srv == nil {
		t.FailNow()
	}
	held := runLine(t, swarmBin, srv.URL, scaled)
	if got, want := outcomes(held), map[string]int{"admitted": 100, "held": holdUsers - 100, "sold_out": 0, "error": 0}; !subset(want, got) {
		t.Errorf("the README's hold line with %d users for %s printed %v, want %v:\n%s", holdUsers, holdDuration, got, want, held)
	}
}

// buildSwarm builds this command into the test's temp dir and returns its path.
func buildSwarm(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "swarm")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/waitroom/waitroom/cmd/swarm").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runLine runs the swarm binary with a README line's flags against url, and returns what it printed on
// stdout. A non-zero exit status (a user in error, a failed check) fails the test.
func runLine(t *testing.T, bin, url string, args []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, append(slices.Clone(args), "-url", url)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("swarm %q = %v; stdout:\n%s\nstderr's end:\n%s", args, err, stdout.String(), tail(stderr.String(), 2000))
	}
	return stdout.String()
}

// tail is the last n bytes of s.
func tail(s string, n int) string { return s[max(0, len(s)-n):] }

var outcomeRow = regexp.MustCompile(`(?m)^(ticket|sold_out|gave_up|held|admitted|error)\s+(\d+)$`)

// outcomes reads the OUTCOME table a run printed.
func outcomes(table string) map[string]int {
	got := map[string]int{}
	for _, m := range outcomeRow.FindAllStringSubmatch(table, -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	return got
}

// subset reports whether every count of want is in got.
func subset(want, got map[string]int) bool {
	for k, v := range want {
		if n, ok := got[k]; !ok || n != v {
			return false
		}
	}
	return true
}

// readmeSwarmLines finds the README's two swarm runs in its "Load test" section: the flow line and the
// hold line (-mode line), as the flags after `go run ./cmd/swarm`.
func readmeSwarmLines(t *testing.T, readme string) (flow, hold []string) {
	t.Helper()
	_, section, ok := strings.Cut(readme, "## Load test\n")
	if !ok {
		t.Fatal("README.md has no Load test section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for line := range strings.SplitSeq(section, "\n") {
		command, _, _ := strings.Cut(line, "#")
		fields := strings.Fields(command)
		if len(fields) < 3 || strings.Join(fields[:3], " ") != "go run ./cmd/swarm" || slices.Contains(fields, "-h") {
			continue
		}
		switch {
		case slices.Contains(fields, "-mode"):
			hold = fields[3:]
		case flow == nil:
			flow = fields[3:]
		}
	}
	if flow == nil || hold == nil {
		t.Fatalf("README.md's Load test section lacks a flow line or a hold line (-mode):\n%s", section)
	}
	if i := slices.Index(hold, "-mode"); i+1 >= len(hold) || hold[i+1] != "line" {
		t.Errorf("the README's hold line %q does not use -mode line", hold)
	}
	return flow, hold
}

// withFlag is args with flag's value replaced (the flag must be there).
func withFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, flag); i >= 0 && i+1 < len(out) {
		out[i+1] = value
	}
	return out
}

// makeRunSettings reads the WAITROOM_* settings the Makefile's run target gives the server by default
// (`WAITROOM_X=$${WAITROOM_X:-value}`), so the test's server is make run's.
func makeRunSettings(t *testing.T, makefile string) map[string]string {
	t.Helper()
	_, recipe, ok := strings.Cut(makefile, "\nrun:\n")
	if !ok {
		t.Fatal("the Makefile has no run target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	settings := map[string]string{}
	for _, m := range regexp.MustCompile(`(WAITROOM_\w+)=\$\$\{(WAITROOM_\w+):-([^}]*)\}`).FindAllStringSubmatch(recipe, -1) {
		if m[1] == m[2] {
			settings[m[1]] = m[3]
		}
	}
	for _, name := range []string{"WAITROOM_ADMISSION_INTERVAL", "WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND", "WAITROOM_LIMITS_SOCKETS_PER_ADDRESS"} {
		if _, ok := settings[name]; !ok {
			t.Fatalf("the Makefile's run target no longer sets %s (found %v): this test runs with its settings", name, settings)
		}
	}
	return settings
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
