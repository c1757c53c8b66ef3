// The control room page in Chromium: the admin key, the live charts, and an operator's every control.

package browser

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// TestAdminBrowserWatchesAndControlsASale drives the control room in Chromium: a wrong key is refused, the
// right one opens live charts of the demo screening, and the operator creates a screening, pauses and
// resumes it, changes its batch size live and closes its sale, each seen on the page and in the API.
func TestAdminBrowserWatchesAndControlsASale(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":          apptest.AdminKey,
			"WAITROOM_ADMISSION_INTERVAL": "500ms",
		})
		// The page asks whether the admin API is on without a key (401), the wrong key is a 401 too, and a
		// duplicate screening a 409.
		tab := newTab(t, path, networkStatus(http.StatusUnauthorized), networkStatus(http.StatusConflict))

		step(t, tab, "open the control room",
			chromedp.Navigate(srv.URL+"/admin"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
		)

		// A wrong key: refused, said so, and not kept.
		step(t, tab, "a wrong key",
			chromedp.SendKeys(chromedp.ID("admin-key"), "not-the-operator-key"),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="login-error"]').textContent !== ''`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)
		if msg := value(t, tab, "login error", chromedp.Text(chromedp.CSS(`[data-testid="login-error"]`))); !strings.Contains(msg, "Wrong key") {
			t.Errorf("after a wrong key the page says %q, want the wrong-key message", msg)
		}
		if kept := value(t, tab, "stored key", chromedp.Evaluate[string](`sessionStorage.getItem('waitroom:admin-key') || ''`)); kept != "" {
			t.Errorf("stored key after a wrong one = %q, want none", kept)
		}
		screenshot(t, tab, "admin-wrong-key.png")

		// The right key: the console, with the demo screening's live charts once two frames have come.
		step(t, tab, "the right key",
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
		)
		if kept := value(t, tab, "stored key", chromedp.Evaluate[string](`sessionStorage.getItem('waitroom:admin-key') || ''`)); kept != apptest.AdminKey {
			t.Errorf("stored key = %q, want the admin key in sessionStorage", kept)
		}
		step(t, tab, "live charts of demo", chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('figure.chart')]
			.every((f) => f.dataset.screening === 'demo' && Number(f.dataset.points) >= 2)`,
			chromedp.WithPollingTimeout(stepTimeout)))
		type chart struct {
			Name, Value, Label string
			Painted            bool
		}
		charts := value(t, tab, "charts", chromedp.Evaluate[[]chart](`[...document.querySelectorAll('figure.chart')].map((f) => {
			const c = f.querySelector('canvas');
			const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let painted = false;
			for (let i = 3; i < px.length && !painted; i += 4) painted = px[i] !== 0;
			return {Name: f.dataset.chart, Value: f.querySelector('.chart-value').textContent, Label: c.getAttribute('aria-label'), Painted: painted};
		})`))
		if len(charts) != 6 {
			t.Fatalf("%d charts, want 6: %+v", len(charts), charts)
		}
		for _, c := range charts {
			if !c.Painted || c.Value == "" || c.Value == "–" || !strings.Contains(c.Label, "last 120 seconds") {
				t.Errorf("chart %s = %+v, want it drawn, with its current value beside it and a text alternative", c.Name, c)
			}
		}
		if sold := value(t, tab, "seats sold", chromedp.Text(chromedp.CSS(`[data-testid="value-sold"]`))); sold != "0 of 100" {
			t.Errorf("seats sold of demo = %q, want 0 of 100", sold)
		}

		// Create a screening through the form; its sale opens now (the form's suggestion), so it is on sale.
		step(t, tab, "create a screening",
			fill("#new-id", "s1"),
			fill("#new-name", "Made in the browser"),
			fill("#new-rows", "4"),
			fill("#new-per-row", "6"),
			chromedp.Click(chromedp.CSS(`[data-testid="create-submit"]`)),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="create-message"]').textContent.includes('Created s1')`,
				chromedp.WithPollingTimeout(stepTimeout)),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="screening-select"]').value === 's1'`,
				chromedp.WithPollingTimeout(stepTimeout)),
			selectedState("on_sale"),
		)
		var s1 struct {
			Name       string `json:"name"`
			SeatsTotal int    `json:"seats_total"`
			State      string `json:"state"`
			Admission  struct {
				BatchSize int `json:"batch_size"`
			} `json:"admission"`
			Line struct {
				Paused bool `json:"paused"`
			} `json:"line"`
		}
		if code := srv.Admin(t, http.MethodGet, "/screenings/s1", nil, &s1); code != http.StatusOK || s1.Name != "Made in the browser" || s1.SeatsTotal != 24 {
			t.Fatalf("GET s1 = %d %+v, want 200, named as typed, 4 × 6 seats", code, s1)
		}

		// A duplicate id: the server's message is shown.
		step(t, tab, "create it again",
			fill("#new-id", "s1"),
			fill("#new-name", "Again"),
			chromedp.Click(chromedp.CSS(`[data-testid="create-submit"]`)),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="create-message"]').textContent.includes('SCREENING_EXISTS')`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)

		// Pause, then resume.
		step(t, tab, "pause", chromedp.Click(chromedp.CSS(`[data-testid="pause"]`)), selectedState("paused"))
		if srv.Admin(t, http.MethodGet, "/screenings/s1", nil, &s1); !s1.Line.Paused || s1.State != "paused" {
			t.Errorf("s1 after pause = state %q, paused %v; want paused", s1.State, s1.Line.Paused)
		}
		step(t, tab, "paused frames keep the state", chromedp.Poll[chromedp.Void](
			`document.querySelector('#resume').disabled === false && document.querySelector('#pause').disabled === true`,
			chromedp.WithPollingTimeout(stepTimeout)))
		step(t, tab, "resume", chromedp.Click(chromedp.CSS(`[data-testid="resume"]`)), selectedState("on_sale"))
		if srv.Admin(t, http.MethodGet, "/screenings/s1", nil, &s1); s1.Line.Paused || s1.State != "on_sale" {
			t.Errorf("s1 after resume = state %q, paused %v; want on_sale", s1.State, s1.Line.Paused)
		}

		// Change the batch size live.
		step(t, tab, "batch size 7",
			fill("#adm-batch", "7"),
			chromedp.Click(chromedp.CSS(`[data-testid="admission-submit"]`)),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="current-batch_size"]').textContent === '7'`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)
		if srv.Admin(t, http.MethodGet, "/screenings/s1", nil, &s1); s1.Admission.BatchSize != 7 {
			t.Errorf("s1 batch_size after the change = %d, want 7", s1.Admission.BatchSize)
		}
		if msg := value(t, tab, "admission message", chromedp.Text(chromedp.CSS(`[data-testid="admission-message"]`))); !strings.Contains(msg, "7 per batch") {
			t.Errorf("after applying, the page says %q, want the effective settings", msg)
		}
		step(t, tab, "charts of s1", chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('figure.chart')]
			.every((f) => f.dataset.screening === 's1' && Number(f.dataset.points) >= 2)`,
			chromedp.WithPollingTimeout(stepTimeout)))
		screenshot(t, tab, "admin-control-room.png")

		// At 360 px wide nothing makes the page scroll sideways.
		step(t, tab, "phone width", chromedp.EmulateViewport(360, 800))
		if w := value(t, tab, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
			t.Errorf("page width at a 360-px viewport = %d px, want no sideways scroll", w)
		}
		screenshot(t, tab, "admin-control-room-360.png")
		step(t, tab, "desktop width", chromedp.EmulateViewport(1280, 1000))

		// Close the sale, after confirming.
		step(t, tab, "ask to close",
			chromedp.Click(chromedp.CSS(`[data-testid="close"]`)),
			chromedp.WaitVisible(chromedp.ID("close-dialog")),
		)
		if text := value(t, tab, "confirmation", chromedp.Text(chromedp.ID("close-text"))); !strings.Contains(text, "s1") || !strings.Contains(text, "cannot be reopened") {
			t.Errorf("confirmation = %q, want it to name s1 and say it is irreversible", text)
		}
		step(t, tab, "close", chromedp.Click(chromedp.CSS(`[data-testid="close-confirm"]`)), selectedState("closed"))
		if srv.Admin(t, http.MethodGet, "/screenings/s1", nil, &s1); s1.State != "closed" {
			t.Errorf("s1 after close = state %q, want closed", s1.State)
		}

		// A reload keeps the key (this tab's sessionStorage) and the selection (the URL).
		step(t, tab, "reload",
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.ID("view-console")),
			chromedp.Poll[chromedp.Void](`document.querySelector('figure.chart').dataset.screening === 's1'`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)

		// The control room speaks Korean too.
		step(t, tab, "switch to Korean", chromedp.Click(chromedp.ID("lang-switch")))
		type words struct{ Title, Chart, State string }
		ko := value(t, tab, "Korean words", chromedp.Evaluate[words](`({
			Title: document.querySelector('h1').textContent,
			Chart: document.querySelector('figure.chart .chart-title').textContent,
			State: document.querySelector('[data-testid="state"]').textContent,
		})`))
		if want := (words{"관제실", "대기 인원", "판매 종료"}); ko != want {
			t.Errorf("in Korean: %+v, want %+v", ko, want)
		}
	})
}

// TestAdminBrowserSaysWhenTheAdminAPIIsOff: without admin.key the page does not ask for a key; it says the
// admin API is off and how to turn it on.
func TestAdminBrowserSaysWhenTheAdminAPIIsOff(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, nil)
		tab := newTab(t, path, networkStatus(http.StatusNotFound))
		step(t, tab, "open the control room",
			chromedp.Navigate(srv.URL+"/admin"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="problem"][data-kind="off"]`)),
		)
		if text := value(t, tab, "message", chromedp.Text(chromedp.CSS(`[data-testid="problem"]`))); !strings.Contains(text, "admin API is off") || !strings.Contains(text, "WAITROOM_ADMIN_KEY") {
			t.Errorf("page says %q, want that the admin API is off and how to turn it on", text)
		}
		if shown := value(t, tab, "key field", chromedp.Evaluate[bool](`!document.querySelector('#view-login').hidden`)); shown {
			t.Error("the page asks for a key while the admin API is off")
		}
	})
}
