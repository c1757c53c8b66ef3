// The end of a server's life as `make run` sees it: a signal drains it, the last log line says it stopped,
// and the exit status is 0, so that Ctrl-C is not reported as a failure.

package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestASignalDrainsTheServerWhichSaysItStoppedAndExitsZero(t *testing.T) {
	bin := apptest.Build(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			env := testenv.New(t, testenv.Embedded)
			out := &testenv.SyncBuffer{}
			cmd := exec.Command(bin, "-config", "")
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"WAITROOM_HTTP_ADDR=127.0.0.1:0", "WAITROOM_HTTP_OPS_ADDR=127.0.0.1:0",
				"WAITROOM_DATABASE_URL=" + env.DatabaseURL, "WAITROOM_ADMIN_KEY=stop-test-admin-key-0123456789"}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var waitErr error
			exited := make(chan struct{})
			go func() {
				waitErr = cmd.Wait()
				close(exited)
			}()
			t.Cleanup(func() {
				select {
				case <-exited:
				default:
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			waitHealthy(t, out, exited)

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("the server after %v = %v, want exit status 0; output:\n%s", sig, waitErr, out)
				}
			case <-time.After(app.ShutdownGrace + 10*time.Second):
				t.Fatalf("the server did not exit after %v; output:\n%s", sig, out)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, `"msg":"server stopped"`) {
				t.Errorf("last line after %v = %s, want the log's \"server stopped\"; output:\n%s", sig, last, out)
			}
		})
	}
}

// Ctrl-C on `make run` (the terminal signals make and the server, all of one process group) drains the
// server, which exits 0, so make reports no error, after the lines that say where the control room is,
// with which key, and that the server stopped.
func TestCtrlCOnMakeRunDrainsTheServerAndMakeReportsNoError(t *testing.T) {
	makeTool, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := &testenv.SyncBuffer{}
	cmd := exec.Command(makeTool, "--no-print-directory", "-C", root, "run", "RUN_BIN="+filepath.Join(t.TempDir(), "waitroom"))
	cmd.Env = append(os.Environ(), "WAITROOM_HTTP_ADDR=127.0.0.1:0", "WAITROOM_HTTP_OPS_ADDR=127.0.0.1:0",
		"WAITROOM_DATA_DIR="+t.TempDir(), "WAITROOM_ADMIN_KEY=", "WAITROOM_DATABASE_URL=", "WAITROOM_REDIS_ADDR=")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a terminal's job is
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	// The first make run builds the server, from a cold cache every dependency.
	for deadline := time.Now().Add(5 * time.Minute); !answers(out); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("make run exited before serving: %v; output:\n%s", waitErr, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not serve; output:\n%s", out)
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(app.ShutdownGrace + 10*time.Second):
		t.Fatalf("make run did not exit after Ctrl-C; output:\n%s", out)
	}
	// make itself was interrupted too: once its child has exited it ends by the same signal, as any
	// command a Ctrl-C stops (the shell's status 130). What it must not do is report the child as failed.
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); waitErr != nil && !(ok && ws.Signaled() && ws.Signal() == syscall.SIGINT) {
		t.Errorf("make run after Ctrl-C = %v, want status 0 or the interrupt itself; output:\n%s", waitErr, out)
	}
	if strings.Contains(out.String(), "make: ***") {
		t.Errorf("make run reported an error after a clean drain:\n%s", out)
	}
	for _, want := range []string{"make run: the control room's admin key for this run is local-", "waitroom: control room http://localhost:",
		`"msg":"server stopped"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("make run's output lacks %q:\n%s", want, out)
		}
	}
}

// With admin.key set the server prints where the control room is, beside the URL to open.
func TestTheServerPrintsTheControlRoomsURLWhenTheAdminKeyIsSet(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	on := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": "control-room-key-0123456789", "WAITROOM_DEMO_ENABLED": "false"})
	want := "waitroom: control room " + on.URL + "/admin\n"
	if !strings.Contains(on.Out.String(), want) {
		t.Errorf("output with admin.key set:\n%s\nwant a line %q", on.Out, want)
	}
	off := apptest.Start(t, testenv.New(t, testenv.Embedded), map[string]string{"WAITROOM_DEMO_ENABLED": "false"})
	if strings.Contains(off.Out.String(), "control room http") {
		t.Errorf("output without admin.key:\n%s\nwant no control room URL", off.Out)
	}
}

// waitHealthy waits until the process that writes out has printed its URL and answers /healthz there.
func waitHealthy(t *testing.T, out *testenv.SyncBuffer, exited <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !answers(out); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("the server exited before serving; output:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not become healthy; output:\n%s", out)
		}
	}
}
