// The drain with a gate in front of an origin: a proxied answer that never ends by itself does not hold
// the drain past half its grace, so the waiting sockets are still told to reconnect.

package app_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/testenv"
)

func TestADrainCutsAnOriginsEndlessStreamAndStillTellsTheSocketsToReconnect(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: first\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // an origin's stream that only its client ends
	}))
	t.Cleanup(origin.Close)
	vars := map[string]string{
		"WAITROOM_HTTP_ADDR": "127.0.0.1:0", "WAITROOM_HTTP_OPS_ADDR": "127.0.0.1:0", "WAITROOM_GATE_ADDR": "127.0.0.1:0",
		"WAITROOM_GATE_UPSTREAM": origin.URL, "WAITROOM_GATE_PATHS": "/checkout=demo",
		"WAITROOM_DATABASE_URL": env.DatabaseURL, "WAITROOM_LOG_LEVEL": "warn",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.Main(ctx, []string{"waitroom", "-config", ""}, func(k string) string { return vars[k] }, out)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !answers(out) || printed(out, "waitroom: gate ") == "" {
		select {
		case err := <-done:
			t.Fatalf("app.Main = %v before serving; output:\n%s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not answer; output:\n%s", out)
		}
	}
	resp, err := http.Get(printed(out, "waitroom: gate ") + "/events") // unprotected: straight to the origin
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: first\n" {
		t.Fatalf("the origin's stream through the gate began %q (%v), want its first event", line, err)
	}
	sock := testenv.Dial(t, strings.Replace(printed(out, "waitroom: open "), "http://", "ws://", 1)+"/ws/screenings/demo", "")
	if m := sock.Next(t, 5*time.Second); m.Type != "queued" {
		t.Fatalf("first message = %+v, want queued", m)
	}

	stopped := time.Now()
	cancel()
	if code := sock.CloseCode(t, app.ShutdownGrace); code != websocket.CloseServiceRestart {
		t.Errorf("the waiting socket closed with %d, want %d (reconnect) although a proxied stream was still open", code, websocket.CloseServiceRestart)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("app.Main after the drain = %v, want nil", err)
		}
	case <-time.After(app.ShutdownGrace + 5*time.Second):
		t.Fatalf("app.Main did not return within the grace")
	}
	if took := time.Since(stopped); took > app.ShutdownGrace {
		t.Errorf("the drain took %v, want within the grace of %v", took, app.ShutdownGrace)
	}
}

// printed is the URL a server printed after prefix ("waitroom: gate "), without its trailing slash; "" when
// none yet.
func printed(out *testenv.SyncBuffer, prefix string) string {
	_, rest, ok := strings.Cut(out.String(), prefix)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(strings.SplitN(rest, "\n", 2)[0], "/")
}
