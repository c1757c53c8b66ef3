// Tests of `waitroom healthcheck`: a running server passes it, a closed port, a failing answer and a port it
// cannot know fail it with the reason.

package app_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// healthcheck runs the subcommand with the flags given and http.addr set to addr, as the container does.
func healthcheck(addr string, flags ...string) error {
	var stderr strings.Builder
	env := map[string]string{"WAITROOM_HTTP_ADDR": addr}
	args := append([]string{"healthcheck", "-config", ""}, flags...)
	return app.Healthcheck(context.Background(), args, func(k string) string { return env[k] }, &stderr)
}

func TestHealthcheckPassesAgainstARunningServer(t *testing.T) {
	srv := apptest.Start(t, testenv.New(t, testenv.Embedded), nil)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The server listens on 127.0.0.1; the probe of ":port" (every address, as in the image) reaches it too.
	for _, addr := range []string{u.Host, ":" + u.Port(), "0.0.0.0:" + u.Port()} {
		if err := healthcheck(addr); err != nil {
			t.Errorf("healthcheck of %s = %v, want nil", addr, err)
		}
		if err := healthcheck(addr, "-ready"); err != nil {
			t.Errorf("healthcheck -ready of %s = %v, want nil", addr, err)
		}
	}
}

func TestHealthcheckFailsOnARefusedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = healthcheck(addr)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), addr+"/healthz") {
		t.Fatalf("healthcheck of a closed port = %v, want an error naming the URL and the refusal", err)
	}
}

func TestHealthcheckFailsOnAnAnswerOtherThan200(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, `{"redis":"down"}`, http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound) // a redirect is not health either
	}))
	defer origin.Close()
	addr := strings.TrimPrefix(origin.URL, "http://")
	if err := healthcheck(addr, "-ready"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("healthcheck -ready of a 503 = %v, want an error naming 503", err)
	}
	if err := healthcheck(addr); err == nil || !strings.Contains(err.Error(), "302") {
		t.Errorf("healthcheck of a redirect = %v, want an error naming 302", err)
	}
}

func TestHealthcheckGivesUpOnAServerThatDoesNotAnswer(t *testing.T) {
	hung := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer origin.Close()
	defer close(hung)
	start := time.Now()
	err := healthcheck(strings.TrimPrefix(origin.URL, "http://"), "-timeout", "200ms")
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("healthcheck of a hung server = %v, want no answer within 200ms", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("healthcheck of a hung server took %v, want about 200ms", took)
	}
}

func TestHealthcheckRefusesWhatItCannotProbe(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		flags []string
		want  string
	}{
		{"127.0.0.1:0", nil, "no fixed port"},
		{"127.0.0.1:http", nil, "no fixed port"},
		{"127.0.0.1:8080", []string{"-nope"}, "flag provided but not defined"},
		{"127.0.0.1:8080", []string{"extra"}, "unexpected arguments"},
	} {
		err := healthcheck(tc.addr, tc.flags...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("healthcheck(%s %v) = %v, want an error with %q", tc.addr, tc.flags, err, tc.want)
		}
	}
	// Bad settings are the server's own refusal, named as it names them.
	var stderr strings.Builder
	env := map[string]string{"WAITROOM_LOG_LEVEL": "loud"}
	err := app.Healthcheck(context.Background(), []string{"healthcheck", "-config", ""}, func(k string) string { return env[k] }, &stderr)
	if err == nil || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("healthcheck with log.level loud = %v, want the config's error", err)
	}
}
