// The end of a server's life as `make run` sees it: a signal drains it, the last log line says it stopped,
// and the exit status is 0, so that Ctrl-C is not reported as a failure.

package app_test

import (
	"os/exec"
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
