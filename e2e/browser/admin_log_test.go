// The admission log in the control room, in Chromium: its size, latest checkpoint and backlog once places
// are taken, verify-log's command line, and its export, which verify-log passes.

package browser

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// TestAdminBrowserShowsTheAdmissionLog: a few places taken in the demo screening's line, the control room
// shows its log with records stored and signed, nothing left waiting in Redis, a link to the public
// checkpoint and the verify-log command line, which passes as shown; the export saves a .tar.gz that
// verify-log passes too. The page stays clean to axe-core.
func TestAdminBrowserShowsTheAdmissionLog(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		key, err := fairlog.GenerateKey("browser-log")
		if err != nil {
			t.Fatal(err)
		}
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":          apptest.AdminKey,
			"WAITROOM_ADMISSION_INTERVAL": "500ms",
			"WAITROOM_FAIRNESS_KEY":       key,
		})
		for range 3 {
			s := srv.Dial(t, "demo", "")
			if m := s.Next(t, 10*time.Second); m.Receipt == "" {
				t.Fatalf("a place's first message %+v, want its receipt", m)
			}
		}
		// The page asks whether the admin API is on before it has the key (401).
		tab := newTab(t, path, networkStatus(http.StatusUnauthorized))
		step(t, tab, "sign in",
			chromedp.Navigate(srv.URL+"/admin#demo"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
		)
		// The places and their admissions stored, signed, none waiting: the writer appends every 100 ms,
		// signs every second, and follows a screening within 2 s; the panel reads every 2 s.
		step(t, tab, "the log's panel", until(`(() => {
			const v = (id) => document.querySelector('[data-testid="' + id + '"]').dataset.value;
			return document.querySelector('#log').dataset.kept === 'true' && Number(v('log-size')) >= 3 &&
				Number(v('log-checkpoint')) === Number(v('log-size')) && v('log-backlog') === '0' && v('log-signed') !== '';
		})()`, stepTimeout))
		type panel struct{ Size, Checkpoint, Signed, Backlog, Link, Command string }
		p := value(t, tab, "the log's panel", chromedp.Evaluate[panel](`({
			Size: document.querySelector('[data-testid="log-size"]').textContent,
			Checkpoint: document.querySelector('[data-testid="log-checkpoint"]').textContent,
			Signed: document.querySelector('[data-testid="log-signed"]').textContent,
			Backlog: document.querySelector('[data-testid="log-backlog"]').textContent,
			Link: document.querySelector('[data-testid="log-checkpoint-link"]').href,
			Command: document.querySelector('[data-testid="log-command"]').value,
		})`))
		logURL := srv.URL + "/api/screenings/demo/log/"
		if !strings.HasSuffix(p.Checkpoint, "records") || !strings.Contains(p.Signed, "s ago") || p.Backlog != "0" ||
			p.Link != logURL+"checkpoint" || p.Command != "waitroom verify-log "+logURL {
			t.Errorf("the log's panel shows %+v, want its records, a checkpoint signed seconds ago, none waiting, the link to %scheckpoint and the command for %s",
				p, logURL, logURL)
		}
		checkA11y(t, tab, "the control room with the admission log")
		screenshot(t, tab, "admin-log.png")

		// The command line, as shown, checks the log.
		var out bytes.Buffer
		args := strings.Fields(p.Command)[2:]
		if code := fairlog.Main(context.Background(), append(args, "--state", ""), &out, &out); code != 0 {
			t.Errorf("%s: exit %d, want 0\n%s", p.Command, code, out.String())
		}

		// The export: fetched with the key and handed to the browser as a file, which verify-log passes.
		step(t, tab, "export the log",
			chromedp.Evaluate[chromedp.Void](`(() => {
				window.exported = null;
				const make = URL.createObjectURL;
				URL.createObjectURL = (b) => {
					b.arrayBuffer().then((a) => {
						let s = '';
						for (const c of new Uint8Array(a)) s += String.fromCharCode(c);
						window.exported = btoa(s);
					});
					return make.call(URL, b);
				};
			})()`),
			chromedp.Click(chromedp.CSS(`[data-testid="log-export"]`)),
			until(`window.exported !== null`, stepTimeout),
		)
		raw, err := base64.StdEncoding.DecodeString(value(t, tab, "the exported log", chromedp.Evaluate[string](`window.exported`)))
		if err != nil {
			t.Fatal(err)
		}
		msg := value(t, tab, "export message", chromedp.Text(chromedp.CSS(`[data-testid="log-message"]`)))
		if !strings.Contains(msg, "waitroom-log-demo-") || !strings.Contains(msg, ".tar.gz") {
			t.Errorf("after the export the page says %q, want the file's name", msg)
		}
		archive := filepath.Join(t.TempDir(), "log.tar.gz")
		if err := os.WriteFile(archive, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if code := fairlog.Main(context.Background(), []string{archive, "--state", ""}, &out, &out); code != 0 {
			t.Errorf("verify-log of the exported archive: exit %d, want 0\n%s", code, out.String())
		}
	})
}
