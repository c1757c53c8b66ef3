// Tests of the command: bad flags refused before any dial, and hold runs against a small ticking server split
// over child processes (this test binary is the child), interrupted or not.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/swarm"
)

// TestMain is also the child process of a run split over processes: the test binary is what
// os.Executable finds, and it is started with swarm.ChildFlag, which main hands to swarm.RunChild.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == swarm.ChildFlag {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestRunRefusesBadFlagsBeforeDialing(t *testing.T) {
	noenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"swarm", "-users", "0"}, "users = 0"},
		{[]string{"swarm", "-url", "localhost:8080"}, "want http://host"},
		{[]string{"swarm", "-retries", "-1"}, "retries = -1"},
		{[]string{"swarm", "-nope"}, "flag provided but not defined"},
		{[]string{"swarm", "extra"}, "unexpected arguments"},
		{[]string{"swarm", "-mode", "line"}, "duration = 0s"},
		{[]string{"swarm", "-mode", "line", "-duration", "1m", "-timeout", "30s"}, "the hold would be cut short"},
		{[]string{"swarm", "-mode", "hold", "-duration", "1m", "-concurrency", "10"}, "line mode keeps all"},
		{[]string{"swarm", "-mode", "sit"}, `mode "sit"`},
		{[]string{"swarm", "-duration", "1m"}, "for line mode"},
		{[]string{"swarm", "-checkout", "cash"}, `checkout "cash"`},
		{[]string{"swarm", "-checkout", "hold"}, "needs the confirm key"},
		{[]string{"swarm", "-checkout", "hold", "-confirm-key", "k", "-cancel-share", "0.1"}, "needs the admin key"},
		{[]string{"swarm", "-checkout", "hold", "-pay-share", "1.5"}, "pay-share = 1.5"},
		{[]string{"swarm", "-checkout", "hold", "-pay-share", "0", "-pay-delay", "3s-1s"}, "want 0 <= min <= max"},
		{[]string{"swarm", "-pay-delay", "soon"}, "-pay-delay"},
		{[]string{"swarm", "-url", "http://10.0.0.1:8080", "-sources", "2"}, "reaches only a loopback server"},
		{[]string{"swarm", "-url", "http://127.0.0.1:8080", "-users", "30000", "-procs", "2"}, "raise -sources"},
		{[]string{"swarm", "-url", "http://127.0.0.1:8080", "-users", "30000", "-sources", "2", "-procs", "1"}, "raise -procs"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, noenv, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// -h names each flag's default once: -url's is http://localhost:8080, or $WAITROOM_SWARM_URL when set.
func TestHelpShowsTheURLsDefaultOnce(t *testing.T) {
	for _, env := range []string{"", "http://127.0.0.1:9999"} {
		var stdout, stderr bytes.Buffer
		getenv := func(k string) string {
			if k == "WAITROOM_SWARM_URL" {
				return env
			}
			return ""
		}
		if err := run(context.Background(), []string{"swarm", "-h"}, getenv, &stdout, &stderr); err != nil {
			t.Fatalf("run(-h) = %v", err)
		}
		want := "http://localhost:8080"
		if env != "" {
			want = env
		}
		_, help, _ := strings.Cut(stderr.String(), "  -url string\n")
		help, _, _ = strings.Cut(help, "\n  -")
		if n := strings.Count(help, "default"); n != 1 || !strings.Contains(help, `(default "`+want+`")`) {
			t.Errorf("-url's help with $WAITROOM_SWARM_URL=%q:\n%s\nwant one default, %q", env, help, want)
		}
	}
}

// tickingServer is a small waiting room: every socket gets queued, then a position at every tick (every
// 100 ms, the same tick_at for all) until the client closes.
type tickingServer struct {
	mu     sync.Mutex
	tokens int
	from   map[string]bool // client addresses of the sockets
	closes int             // clean closes (1000) from clients
}

func (s *tickingServer) handler() http.Handler {
	var upgrader websocket.Upgrader
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/screenings/x", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"x","pow_cost":0}`)
	})
	mux.HandleFunc("GET /api/screenings/x/seats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"id":"A1","status":"available"}]`)
	})
	mux.HandleFunc("GET /ws/screenings/x", func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.mu.Lock()
		s.tokens++
		token := fmt.Sprintf("%032x", s.tokens)
		s.from[host] = true
		s.mu.Unlock()
		if err := conn.WriteJSON(map[string]any{"type": "queued", "token": token, "rank": 1, "total": 1, "inserted": true}); err != nil {
			return
		}
		closed := make(chan struct{})
		go func() { // the client's close ends the socket
			defer close(closed)
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
						s.mu.Lock()
						s.closes++
						s.mu.Unlock()
					}
					return
				}
			}
		}()
		const every = 100 * time.Millisecond
		// Every tick from the first after queued, even if this socket falls behind: no tick is skipped.
		for next := time.Now().Truncate(every).Add(every); ; next = next.Add(every) {
			select {
			case <-closed:
				return
			case <-r.Context().Done():
				return
			case <-time.After(time.Until(next)):
			}
			if err := conn.WriteJSON(map[string]any{"type": "position", "rank": 1, "total": 1, "tick_at": next.UnixMilli()}); err != nil {
				return
			}
		}
	})
	return mux
}

// TestHoldSplitOverTwoProcessesReportsAllUsers runs the binary's own child path (TestMain) twice over.
func TestHoldSplitOverTwoProcessesReportsAllUsers(t *testing.T) {
	s := &tickingServer{from: map[string]bool{}}
	srv := httptest.NewServer(s.handler())
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	args := []string{"swarm", "-url", srv.URL, "-screening", "x", "-users", "6", "-procs", "2", "-sources", "2",
		"-mode", "line", "-duration", "1500ms", "-timeout", "20s", "-json", "-"}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("run = %v; stderr:\n%s", err, stderr.String())
	}
	var rep swarm.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the JSON report: %v\n%s", err, stdout.String())
	}
	if rep.Mode != swarm.Line || rep.Procs != 2 || rep.Users != 6 || rep.Outcomes != (swarm.Outcomes{Held: 6}) {
		t.Errorf("mode %q, procs %d, users %d, outcomes %+v; want line, 2 processes, 6 users all held (errors %v)", rep.Mode, rep.Procs, rep.Users, rep.Outcomes, rep.Errors)
	}
	if rep.Registration.Registered != 6 || rep.Push.UsersWithPosition != 6 {
		t.Errorf("registered %d, with a position %d; want 6 and 6", rep.Registration.Registered, rep.Push.UsersWithPosition)
	}
	// 1.5 s of ticks every 100 ms, less the time to start the children: at least a few ticks for everyone.
	if rep.Push.Ticks < 3 || rep.Push.Positions.Count < 6*3 || rep.Push.MissedTicks != 0 {
		t.Errorf("ticks %d, positions %d, missed %d; want ≥3, ≥18, 0", rep.Push.Ticks, rep.Push.Positions.Count, rep.Push.MissedTicks)
	}
	if !strings.Contains(stderr.String(), "registered") || !strings.Contains(stderr.String(), "TICK") {
		t.Errorf("stderr lacks the progress line or the table:\n%s", stderr.String())
	}
	// The server reads the clients' close frames after they sent them: wait for them.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		closes := s.closes
		s.mu.Unlock()
		if closes == 6 {
			break
		}
	}
	t.Logf("report:\n%s", stderr.String())
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.from["127.0.0.2"] || !s.from["127.0.0.3"] || len(s.from) != 2 {
		t.Errorf("sockets came from %v, want 127.0.0.2 and 127.0.0.3", s.from)
	}
	if s.closes != 6 {
		t.Errorf("clean closes = %d, want 6", s.closes)
	}
}

// TestInterruptedChildrenStillReport: a run split over processes and stopped (a signal, here its context)
// interrupts the children, which report the users they had.
func TestInterruptedChildrenStillReport(t *testing.T) {
	s := &tickingServer{from: map[string]bool{}}
	srv := httptest.NewServer(s.handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(time.Second, cancel)
	var stdout, stderr bytes.Buffer
	args := []string{"swarm", "-url", srv.URL, "-screening", "x", "-users", "4", "-procs", "2",
		"-mode", "hold", "-duration", "1m", "-json", "-"}
	started := time.Now()
	err := run(ctx, args, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "stopped early (interrupted)") {
		t.Errorf("run = %v, want stopped early (interrupted)", err)
	}
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("an interrupted run took %v", took)
	}
	var rep swarm.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the JSON report: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// -mode hold is line mode's old name: the run says so and goes on as line mode.
	if rep.Mode != swarm.Line || !strings.Contains(stderr.String(), "-mode hold is now -mode line") {
		t.Errorf("-mode hold ran as mode %q, stderr:\n%s\nwant line mode and a note", rep.Mode, stderr.String())
	}
	// Registered users show the results came from the children, not from a child that failed.
	if rep.Stopped != "interrupted" || rep.Errors["interrupted"].Count != 4 || rep.Registration.Registered != 4 {
		t.Errorf("stopped %q, errors %v, registered %d; want 4 users interrupted after registering", rep.Stopped, rep.Errors, rep.Registration.Registered)
	}
}

// TestChildRefusesABadJob: the child path reports a job it cannot read rather than running anything.
func TestChildRefusesABadJob(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"swarm", swarm.ChildFlag, "{"}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "job") || stdout.Len() != 0 {
		t.Errorf("run(-child {) = %v, stdout %q; want a job error and nothing on stdout", err, stdout.String())
	}
}
