// The browser harness: a headless Chromium with a fresh profile, steps with a timeout of their own,
// screenshots kept as test artifacts, and the leak check of the package.

package browser

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// stepTimeout bounds each wait of a browser scenario.
const stepTimeout = 30 * time.Second

// chromium returns the path of the browser, skipping the test when there is none (failing it under CI).
func chromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set and chromium is not installed (apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium); skipping the browser test")
	return ""
}

// newTab starts a headless Chromium with a fresh profile and returns the context of its first tab. The
// browser and its goroutines stop when the test ends. JavaScript exceptions and console errors on the page
// fail the test, except errors that one of expected matches (a status the test provokes on purpose).
func newTab(t *testing.T, path string, expected ...func(chromedp.ConsoleMessage) bool) context.Context {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("accept-lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first Run starts the browser and binds it to ctx, which has no deadline.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium %s: %v", path, err)
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	messages := chromedp.Console(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				if !m.IsException() && slices.ContainsFunc(expected, func(ok func(chromedp.ConsoleMessage) bool) bool { return ok(m) }) {
					continue
				}
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel() // closes the tab and the browser
		cancelAlloc()
		<-watched
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("browser console: %s", p)
		}
	})
	return ctx
}

// networkStatus matches the browser's own log line for a response with the HTTP status code ("Failed to load
// resource: the server responded with a status of 401"), which a page cannot silence.
func networkStatus(code int) func(chromedp.ConsoleMessage) bool {
	return func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && strings.Contains(m.Text, fmt.Sprintf("status of %d", code))
	}
}

// step runs actions with a timeout of their own; the browser outlives it.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action that returns a value, with a timeout of its own.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshot saves a full-page PNG in the test's artifact directory (kept with go test -artifacts).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// fill sets a form field as typing would, with the input event the page listens to.
func fill(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		e.value = %q;
		e.dispatchEvent(new Event('input', {bubbles: true}));
	})()`, sel, v))
}

// selectedState polls until the control room shows the selected screening in state.
func selectedState(state string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('[data-testid="state"]').dataset.state === %q`, state),
		chromedp.WithPollingTimeout(stepTimeout))
}

// until polls the JavaScript condition cond on the page within timeout.
func until(cond string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(timeout))
}

// saleScreening creates a screening on sale now, rows × perRow seats, whose line admits up to maxActive
// every 200 ms, through the admin API (the server needs apptest.AdminKey).
func saleScreening(t *testing.T, srv *apptest.Server, id, name string, rows, perRow, maxActive int) {
	t.Helper()
	now := time.Now().UTC()
	if code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
		"id": id, "name": name, "starts_at": now.Add(2 * time.Hour), "sale_opens_at": now.Add(-time.Minute),
		"rows": rows, "seats_per_row": perRow,
		"admission": map[string]any{"interval": "200ms", "batch_size": 10, "max_active": maxActive},
	}, nil); code != http.StatusCreated {
		t.Fatalf("create screening %s: %d, want 201", id, code)
	}
}

// admittedPass joins the screening's line on a socket of its own and returns the pass it is admitted with
// (and the socket, still open: the admission holds its slot until its pass reserves).
func admittedPass(t *testing.T, srv *apptest.Server, screening string) (string, *testenv.Socket) {
	t.Helper()
	c := srv.Dial(t, screening, "")
	m, _ := c.Until(t, "admitted", aheadTimeout)
	return m.Pass, c
}

// openAdmitted opens the room of screening in tab and waits for its seat map.
func openAdmitted(t *testing.T, tab context.Context, srv *apptest.Server, screening string) {
	t.Helper()
	step(t, tab, "open the room of "+screening+" and be admitted",
		chromedp.Navigate(srv.URL+"/s/"+screening),
		chromedp.WaitVisible(chromedp.CSS(`#view-admitted [data-seat]`)),
	)
}
