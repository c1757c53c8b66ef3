// Tests of the source addresses: which addresses, taken in turn, and only for a loopback server.

package swarm

import (
	"slices"
	"strings"
	"testing"
)

func TestSourcesAreLoopbackAddressesTakenInTurn(t *testing.T) {
	if got := sourceAddrs(1); got != nil {
		t.Errorf("sourceAddrs(1) = %v, want none: one source is the system's choice", got)
	}
	got := sourceAddrs(3)
	want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	if len(got) != len(want) {
		t.Fatalf("sourceAddrs(3) = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("sourceAddrs(3)[%d] = %v, want %s", i, got[i], want[i])
		}
	}
	if last := sourceAddrs(maxSources)[maxSources-1].String(); last != "127.0.0.255" {
		t.Errorf("last of %d sources = %s, want 127.0.0.255", maxSources, last)
	}

	// 10 users over 2 processes and 3 sources: every process uses every source, and no source takes more
	// than its share.
	cfg := Config{Users: 10, Concurrency: 10, Procs: 2}
	perSource := make([]int, 3)
	for _, j := range split(cfg, base) {
		var used []int
		for u := j.First; u < j.First+j.Config.Users; u++ {
			src := sourceOf(u, 3)
			perSource[src]++
			if !slices.Contains(used, src) {
				used = append(used, src)
			}
		}
		if len(used) != 3 {
			t.Errorf("process with users %d… uses sources %v, want all 3", j.First, used)
		}
	}
	if !slices.Equal(perSource, []int{4, 3, 3}) {
		t.Errorf("users per source = %v, want [4 3 3]", perSource)
	}
	if got := sourceOf(7, 1); got != 0 {
		t.Errorf("sourceOf(7, 1) = %d, want 0", got)
	}
}

func TestSourcesOnlyForALoopbackServer(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "localhost": true, "LocalHost": true,
		"::1": false, "10.0.0.1": false, "example.com": false, "128.0.0.1": false, "": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
	for _, tc := range []struct {
		url      string
		sources  int
		users    int
		wantErr  string
		wantNone bool
	}{
		{url: "http://127.0.0.1:8080", sources: 4, users: 100, wantNone: true},
		{url: "http://localhost:8080", sources: 4, users: 100, wantNone: true},
		{url: "http://10.1.2.3:8080", sources: 1, users: 100, wantNone: true},
		{url: "http://10.1.2.3:8080", sources: 2, users: 100, wantErr: "reaches only a loopback server"},
		{url: "http://[::1]:8080", sources: 2, users: 100, wantErr: "reaches only a loopback server"},
		{url: "http://127.0.0.1:8080", sources: 1, users: 25001, wantErr: "raise -sources to at least 2"},
		{url: "http://127.0.0.1:8080", sources: 2, users: 50000, wantNone: true},
		{url: "http://127.0.0.1:8080", sources: 2, users: 50002, wantErr: "raise -sources to at least 3"},
		{url: "http://127.0.0.1:8080", sources: 255, users: 100, wantErr: "at most 254"},
	} {
		_, err := Config{URL: tc.url, Screening: "x", Users: tc.users, Sources: tc.sources}.normalized()
		switch {
		case tc.wantNone && err != nil:
			t.Errorf("%s with %d sources, %d users: %v", tc.url, tc.sources, tc.users, err)
		case !tc.wantNone && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s with %d sources, %d users: %v, want an error containing %q", tc.url, tc.sources, tc.users, err, tc.wantErr)
		}
	}
}
