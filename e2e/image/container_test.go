//go:build image

// The container a test runs: the engine's command line, free ports on the host's network, the settings of
// the real backends, the wait until /readyz answers, and the removal (its log kept when the test fails).

package image

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// readyWithin bounds a container's start until /readyz answers: it takes about a second here.
const readyWithin = 30 * time.Second

// container is one running container of the image: its name, and the server it serves at URL.
type container struct {
	name string
	srv  *apptest.Server
	// startToReady is the time from `run` to the first 200 of /readyz.
	startToReady time.Duration
	removed      bool
}

func imageName() string {
	if s := os.Getenv("WAITROOM_TEST_IMAGE"); s != "" {
		return s
	}
	return "waitroom:dev"
}

func engineName() string {
	if s := os.Getenv("WAITROOM_TEST_ENGINE"); s != "" {
		return s
	}
	return "podman"
}

// engine runs the container CLI with args and returns its trimmed output, failing the test on an error.
func engine(t testing.TB, args ...string) string {
	t.Helper()
	out, err := engineOutput(args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", engineName(), strings.Join(args, " "), err, out)
	}
	return out
}

func engineOutput(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, engineName(), args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// requireImage fails the test unless the image exists: `make test-image` builds it first.
func requireImage(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(engineName()); err != nil {
		t.Fatalf("%s is needed to run the image: %v", engineName(), err)
	}
	if out, err := engineOutput("image", "inspect", "--format", "{{.Id}}", imageName()); err != nil {
		t.Fatalf("image %s not found (build it with make image): %v\n%s", imageName(), err, out)
	}
}

// freePort returns a TCP port free on loopback at the time of the call.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// passKeys is a fresh pass.keys entry: kid "k1" and the base64 of a new Ed25519 seed.
func passKeys(t testing.TB) string {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	return "k1:" + base64.StdEncoding.EncodeToString(seed)
}

// start runs the image on the host's network against env's real backends, with an admin key, pass keys,
// the demo off, and settings on top (WAITROOM_* variables), and waits until /readyz answers 200. The
// container is removed when the test ends; its log is printed if the test failed.
func start(t testing.TB, env *testenv.Env, settings map[string]string) *container {
	t.Helper()
	requireImage(t)
	port := freePort(t)
	vars := map[string]string{
		"WAITROOM_HTTP_ADDR":     fmt.Sprintf("127.0.0.1:%d", port),
		"WAITROOM_HTTP_OPS_ADDR": fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"WAITROOM_GATE_ADDR":     fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"WAITROOM_REDIS_ADDR":    env.RedisAddr,
		"WAITROOM_REDIS_PREFIX":  env.Prefix,
		"WAITROOM_DATABASE_URL":  env.DatabaseURL,
		"WAITROOM_PASS_KEYS":     passKeys(t),
		"WAITROOM_ADMIN_KEY":     apptest.AdminKey,
		"WAITROOM_DEMO_ENABLED":  "false",
		"WAITROOM_LOG_LEVEL":     "info",
	}
	for k, v := range settings {
		vars[k] = v
	}
	c := &container{name: testenv.Unique("waitroom-e2e-")}
	args := []string{"run", "-d", "--name", c.name, "--network", "host"}
	for k, v := range vars {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, imageName())
	begun := time.Now()
	engine(t, args...)
	t.Cleanup(func() { c.remove(t) })
	c.srv = &apptest.Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Out: &testenv.SyncBuffer{}}
	client := &http.Client{Timeout: time.Second}
	for time.Since(begun) < readyWithin {
		if resp, err := client.Get(c.srv.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.startToReady = time.Since(begun)
				return c
			}
		}
		if st, _ := engineOutput("inspect", "--format", "{{.State.Status}}", c.name); st == "exited" {
			t.Fatalf("container %s exited before it was ready; log:\n%s", c.name, c.logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("container %s not ready within %v; log:\n%s", c.name, readyWithin, c.logs())
	return nil
}

func (c *container) logs() string {
	out, _ := engineOutput("logs", c.name)
	return out
}

// remove stops and deletes the container, printing its log first if the test failed.
func (c *container) remove(t testing.TB) {
	if c.removed {
		return
	}
	c.removed = true
	if t.Failed() {
		t.Logf("container %s log:\n%s", c.name, c.logs())
	}
	if out, err := engineOutput("rm", "-f", "-t", "0", c.name); err != nil {
		t.Errorf("%s rm %s: %v\n%s", engineName(), c.name, err, out)
	}
}

// pid is the container's main process as the host sees it.
func (c *container) pid(t testing.TB) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscan(engine(t, "inspect", "--format", "{{.State.Pid}}", c.name), &pid); err != nil || pid <= 0 {
		t.Fatalf("the container's pid: %v (%d)", err, pid)
	}
	return pid
}
