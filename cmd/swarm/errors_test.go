// The exit status of a run in which users ended in error: non-zero, and when the server's per-address
// limits refused them, the error names the setting and how to lift it.

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestARunWithAUserInErrorExitsNonZero(t *testing.T) {
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
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "no"), time.Now().Add(time.Second))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"swarm", "-url", srv.URL, "-screening", "x", "-users", "1"}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 users ended in error") || strings.Contains(err.Error(), "limits.") {
		t.Errorf("run with a user closed 1008 = %v, want an error for 1 user in error, naming no limit; stdout:\n%s", err, stdout.String())
	}
}

// A server whose registration pace lets two sockets from an address in and refuses the rest (1013,
// RATE_LIMITED) fails the run, and the error says which setting refused them and how to lift it.
func TestARunTheServersLimitsRefusedNamesTheSetting(t *testing.T) {
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), map[string]string{
		"WAITROOM_ADMISSION_INTERVAL": "200ms", "WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND": "0.001", "WAITROOM_LIMITS_REGISTRATION_BURST": "2"})
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"swarm", "-url", srv.URL, "-users", "4"}, func(string) string { return "" }, &stdout, &stderr)
	want := []string{"2 of 4 users ended in error", "2 of them refused by the server's limits.registrations_per_second, limits.registration_burst",
		"WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=0"}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("run against a server refusing all but 2 sockets = %v, want an error containing %q", err, w)
		}
	}
	if !strings.Contains(stdout.String(), "LIMITS  2 users refused by the server's limits.registrations_per_second") {
		t.Errorf("the report lacks the LIMITS line:\n%s", stdout.String())
	}
}
