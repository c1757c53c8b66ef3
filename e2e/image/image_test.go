//go:build image

// The image end to end: a client's flow through the container on the real backends, the container's user,
// shell and health check, its drain on SIGTERM, and its start-to-ready time.

package image

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// unprivileged is the image's user and group (Containerfile: USER 65532:65532).
const unprivileged = "65532"

// TestImageFlowFromLineToReservation runs a client's whole path through the container: an operator creates
// a screening with the admin API, two clients wait in its line (one admitted at a time), each is admitted
// with a pass and reserves with it, a taken seat is refused, and the orders are the rows in PostgreSQL.
func TestImageFlowFromLineToReservation(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	c := start(t, env, nil)
	srv := c.srv

	var created struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
		"id": "img", "name": "Image", "starts_at": time.Now().Add(time.Hour).UTC(), "sale_opens_at": time.Now().Add(-time.Minute).UTC(),
		"rows": 2, "seats_per_row": 5, "admission": map[string]any{"interval": "300ms", "batch_size": 1, "max_active": 1},
	}, &created)
	if code != http.StatusCreated || created.ID != "img" {
		t.Fatalf("POST /api/admin/screenings = %d %+v, want 201 for img", code, created)
	}

	// B dials once A holds its place: two sockets dialled together register in either order.
	a := srv.Dial(t, "img", "")
	qa := a.Next(t, 10*time.Second)
	b := srv.Dial(t, "img", "")
	qb := b.Next(t, 10*time.Second)
	if qa.Token == "" || qb.Token == "" || qa.Token == qb.Token {
		t.Fatalf("first messages %+v and %+v, want two tokens", qa, qb)
	}
	admA := admitted(t, a, qa)
	if code, body := srv.Reserve(t, "img", admA.Pass, "A1"); code != http.StatusCreated {
		t.Fatalf("A reserves A1: %d %v, want 201", code, body)
	}
	// A's reservation freed the one slot: B is admitted next.
	admB := admitted(t, b, qb)
	if code, body := srv.Reserve(t, "img", admB.Pass, "A1"); code != http.StatusConflict || apptest.ErrorCode(body) != "SEAT_TAKEN" {
		t.Fatalf("B reserves the taken A1: %d %v, want 409 SEAT_TAKEN", code, body)
	}
	if code, body := srv.Reserve(t, "img", admB.Pass, "B2"); code != http.StatusCreated {
		t.Fatalf("B reserves B2: %d %v, want 201", code, body)
	}

	var seats []string
	if err := env.DB.Select(&seats, `SELECT seat_id FROM reservation_seats WHERE screening_id = 'img' ORDER BY seat_id`); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seats, ","); got != "A1,B2" {
		t.Errorf("seats reserved in PostgreSQL = %q, want A1,B2", got)
	}
}

// admitted waits for the admission of the socket whose first message was first.
func admitted(t *testing.T, s *testenv.Socket, first testenv.Message) testenv.Message {
	t.Helper()
	m := first
	if m.Type != "admitted" {
		m, _ = s.Until(t, "admitted", 15*time.Second)
	}
	if m.Pass == "" || m.Token != first.Token {
		t.Fatalf("admitted = %+v, want a pass for token %s", m, first.Token)
	}
	return m
}

// TestImageRunsUnprivilegedWithNoShell checks what the image promises a cluster's security policy: the
// server runs as user and group 65532, not root; there is no shell to exec into; and its health check (the
// image's HEALTHCHECK, `waitroom healthcheck`) passes, and fails with the reason when it cannot reach it.
func TestImageRunsUnprivilegedWithNoShell(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	c := start(t, env, nil)

	if user := engine(t, "image", "inspect", "--format", "{{.Config.User}}", imageName()); user != unprivileged+":"+unprivileged {
		t.Errorf("the image's user = %q, want %s:%s", user, unprivileged, unprivileged)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid(t)))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		key, ids, _ := strings.Cut(strings.TrimSpace(line), ":")
		if key != "Uid" && key != "Gid" {
			continue
		}
		// Real, effective, saved and file-system ids, all the unprivileged one.
		if f := strings.Fields(ids); len(f) != 4 || strings.Count(strings.Join(f, " "), unprivileged) != 4 {
			t.Errorf("the server process's %s = %q, want %s four times", key, ids, unprivileged)
		}
	}

	if out, err := engineOutput("exec", c.name, "/bin/sh", "-c", "true"); err == nil {
		t.Errorf("exec /bin/sh in the container succeeded (%q), want no shell in the image", out)
	}
	if out, err := engineOutput("exec", "-e", "WAITROOM_HTTP_ADDR=127.0.0.1:1", c.name, "/waitroom", "healthcheck"); err == nil || !strings.Contains(out, "refused") {
		t.Errorf("healthcheck of a closed port in the container = %v %q, want exit status 1 and the refusal", err, out)
	}
	if out, err := engineOutput("exec", c.name, "/waitroom", "healthcheck", "-ready"); err != nil {
		t.Errorf("healthcheck -ready in the container: %v %q, want exit status 0", err, out)
	}
	healthy(t, c)
}

// healthy checks the engine itself sees the container healthy by the image's HEALTHCHECK.
func healthy(t *testing.T, c *container) {
	t.Helper()
	if engineName() == "podman" {
		if out, err := engineOutput("healthcheck", "run", c.name); err != nil {
			t.Errorf("podman healthcheck run: %v %q, want healthy (exit status 0)", err, out)
		}
		return
	}
	// docker runs the check on its own schedule (the image's interval, 10 s).
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		if engine(t, "inspect", "--format", "{{.State.Health.Status}}", c.name) == "healthy" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("container %s not healthy by its HEALTHCHECK within 40s", c.name)
}

// TestImageDrainsSocketsWith1012OnSIGTERM sends the container SIGTERM, as a cluster does to a pod it
// stops: the waiting socket is closed with 1012 (reconnect elsewhere, keeping the place) and the server
// exits 0 within its drain.
func TestImageDrainsSocketsWith1012OnSIGTERM(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	env.Demo(t, "drain", 2, 5)
	c := start(t, env, map[string]string{"WAITROOM_ADMISSION_MAX_ACTIVE": "1", "WAITROOM_ADMISSION_BATCH_SIZE": "1"})
	first := c.srv.Dial(t, "drain", "")
	second := c.srv.Dial(t, "drain", "")
	for _, s := range []*testenv.Socket{first, second} {
		if m := s.Next(t, 15*time.Second); m.Token == "" {
			t.Fatalf("first message %+v, want one with a token", m)
		}
	}

	signalled := time.Now()
	engine(t, "kill", "--signal", "TERM", c.name)
	for i, s := range []*testenv.Socket{first, second} {
		if code := s.CloseCode(t, app.ShutdownGrace); code != 1012 {
			t.Errorf("socket %d closed with %d after SIGTERM, want 1012 (service restart)", i, code)
		}
	}
	if exit := engine(t, "wait", c.name); exit != "0" {
		t.Errorf("the container exited with %s after SIGTERM, want 0", exit)
	}
	took := time.Since(signalled)
	if took > app.ShutdownGrace {
		t.Errorf("the drain took %v, want at most the grace of %v", took, app.ShutdownGrace)
	}
	t.Logf("SIGTERM to exit: %v", took.Round(time.Millisecond))
	if logs := c.logs(); !strings.Contains(logs, `"draining"`) {
		t.Errorf("the container's log has no draining line:\n%s", logs)
	}
}

// TestImageStartToReady starts the container a few times and logs how long each took from `run` to the
// first 200 of /readyz (docs/benchmarks.md), and the image's size. It asserts only that each became ready.
func TestImageStartToReady(t *testing.T) {
	env := testenv.New(t, testenv.Real)
	requireImage(t)
	t.Logf("image %s: %s bytes", imageName(), engine(t, "image", "inspect", "--format", "{{.Size}}", imageName()))
	for i := range 3 {
		c := start(t, env, nil)
		t.Logf("run %d: start to ready %v", i+1, c.startToReady.Round(time.Millisecond))
		c.remove(t)
	}
}
