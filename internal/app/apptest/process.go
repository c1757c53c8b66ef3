// Processes: the built server binary run as processes of their own, for the tests that kill, drain or
// pause an instance.

package apptest

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/testenv"
)

// buildWithin bounds building the binary (a cold build cache compiles every dependency).
const buildWithin = 5 * time.Minute

// Build builds the server binary (./cmd/waitroom) into the test's temp dir and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the server: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "waitroom")
	ctx, cancel := context.WithTimeout(context.Background(), buildWithin)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", bin, "github.com/waitroom/waitroom/cmd/waitroom")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Process is one server process (StartProcess): instance N, serving at URL, its metrics at OpsURL.
type Process struct {
	N      int
	URL    string
	OpsURL string
	Out    *testenv.SyncBuffer // its stdout and stderr
	Cmd    *exec.Cmd           // to signal it: Cmd.Process.Kill, Cmd.Process.Signal
	// WaitErr is Wait's result and ExitedAt when it returned, both set once Done is closed.
	WaitErr  error
	ExitedAt time.Time

	done chan struct{}
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// StartProcess runs bin as instance n on 127.0.0.1:0 (its ops listener too) with env's real backends, a shared pass secret, the
// demo off and the settings given (WAITROOM_* variables, which win; nil: none), and waits until it is
// healthy. It is drained (SIGTERM), or killed after app.ShutdownGrace, if still running when the test ends.
// It reports through t.Errorf, since it may run off the test's goroutine, and returns nil on failure.
func StartProcess(t testing.TB, client *http.Client, bin string, env *testenv.Env, n int, settings map[string]string) *Process {
	vars := map[string]string{
		"WAITROOM_HTTP_ADDR":     "127.0.0.1:0",
		"WAITROOM_HTTP_OPS_ADDR": "127.0.0.1:0",
		"WAITROOM_REDIS_ADDR":    env.RedisAddr,
		"WAITROOM_REDIS_PREFIX":  env.Prefix,
		"WAITROOM_DATABASE_URL":  env.DatabaseURL,
		"WAITROOM_PASS_SECRET":   Secret,
		"WAITROOM_DEMO_ENABLED":  "false",
		"WAITROOM_LOG_LEVEL":     "warn",
	}
	for k, v := range settings {
		vars[k] = v
	}
	p := &Process{N: n, Out: &testenv.SyncBuffer{}, done: make(chan struct{})}
	p.Cmd = exec.Command(bin, "-config", "")
	p.Cmd.Dir = t.TempDir()
	p.Cmd.Env = environ(vars)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	if err := p.Cmd.Start(); err != nil {
		t.Errorf("start instance %d: %v", n, err)
		return nil
	}
	go func() {
		p.WaitErr = p.Cmd.Wait()
		p.ExitedAt = time.Now()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	deadline := time.Now().Add(startWithin)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Errorf("instance %d exited before serving: %v; output:\n%s", n, p.WaitErr, p.Out.String())
			return nil
		default:
		}
		if url, ok := healthy(client, p.Out); ok {
			p.URL, p.OpsURL = url, printedURL(p.Out, "waitroom: ops ")
			return p
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("instance %d did not become healthy; output:\n%s", n, p.Out.String())
	return nil
}

// environ is this process's environment without its WAITROOM_* variables, plus vars.
func environ(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// stop drains the process if it still runs, and kills it if the drain outlasts the grace.
func (p *Process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(app.ShutdownGrace + 2*time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}
