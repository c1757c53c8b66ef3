// The gate in front of an existing site, in Chromium: a visitor of a protected path while the room is full
// is sent to the waiting page, waits, is admitted and taken back to the origin's page with the gate's
// cookie; its release (the origin's X-Waitroom-Release) admits the next visitor in line.

package browser

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// shopOrigin is the existing site: an HTML page per path, a release after checkout, and a record of the
// path and Cookie header of every request it saw.
type shopOrigin struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []originRequest
}

type originRequest struct{ path, cookie string }

func newShopOrigin(t *testing.T) *shopOrigin {
	t.Helper()
	o := &shopOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, originRequest{r.URL.Path, r.Header.Get("Cookie")})
		o.mu.Unlock()
		if r.URL.Path == "/checkout/done" {
			w.Header().Set("X-Waitroom-Release", "1")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `<!doctype html><title>Shop</title><h1 id="origin">The shop: %s</h1>`, r.URL.Path)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *shopOrigin) seen() []originRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]originRequest(nil), o.reqs...)
}

// carts counts the requests for /checkout/cart the origin saw.
func (o *shopOrigin) carts() int {
	n := 0
	for _, r := range o.seen() {
		if r.path == "/checkout/cart" {
			n++
		}
	}
	return n
}

// freePort returns a loopback port nothing listens on just now (for gate.addr, which the test must know).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// noRedirect is a client that reads the gate's redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}

// gateGet requests url with the cookie header given ("": none) and the Accept header given.
func gateGet(t *testing.T, u, cookie, accept string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// cookieOf is the gate's cookie of room shop in resp, as a Cookie header ("" when none).
func cookieOf(resp *http.Response) string {
	for _, c := range resp.Cookies() {
		if c.Name == "waitroom_gate_shop" && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	return ""
}

// across polls the JavaScript condition cond until it holds, within stepTimeout, through the page's own
// navigations (a poll that a navigation interrupts is tried again on the next page).
func across(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tab, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	where, _ := chromedp.Run(tab, chromedp.Evaluate[string](`location.href`))
	t.Fatalf("%s: %s did not hold within %v (at %s)", what, cond, stepTimeout, where)
}

func TestBrowserWaitsAtTheGateIsAdmittedToTheOriginAndItsReleaseAdmitsTheNext(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		origin := newShopOrigin(t)
		gatePort := freePort(t)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":     apptest.AdminKey,
			"WAITROOM_GATE_UPSTREAM": origin.URL,
			"WAITROOM_GATE_ADDR":     "127.0.0.1:" + gatePort,
			"WAITROOM_GATE_PATHS":    "/checkout=shop",
			"WAITROOM_DEMO_ENABLED":  "false",
		})
		now := time.Now().UTC()
		if code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
			"id": "shop", "name": "The shop", "starts_at": now.Add(2 * time.Hour), "sale_opens_at": now.Add(-time.Minute),
			"site_wide": true, "admission": map[string]any{"interval": "200ms", "batch_size": 10, "max_active": 1},
		}, nil); code != http.StatusCreated {
			t.Fatalf("create the site-wide room: %d, want 201", code)
		}
		gateURL := "http://127.0.0.1:" + gatePort

		// Visitor A takes the room's one slot straight away: nobody waits.
		resp, _ := gateGet(t, gateURL+"/checkout/cart", "", "")
		first := cookieOf(resp)
		if resp.StatusCode != http.StatusOK || first == "" {
			t.Fatalf("visitor A = %d, cookie %q, want 200 with the gate's cookie", resp.StatusCode, first)
		}

		// The browser arrives with the room full: the waiting page, its place in line.
		tab := newTab(t, path)
		step(t, tab, "visit the protected path with the room full", chromedp.Navigate(gateURL+"/checkout/cart?item=7"))
		across(t, tab, "the waiting page", `location.pathname === '/s/shop' && document.querySelector('main').dataset.phase === 'waiting'`)
		if got := value(t, tab, "the way back", chromedp.Evaluate[string](`new URLSearchParams(location.search).get('to')`)); got != "/checkout/cart?item=7" {
			t.Errorf("the waiting page's to = %q, want /checkout/cart?item=7", got)
		}
		screenshot(t, tab, "gate-waiting.png")
		if n := origin.carts(); n != 1 {
			t.Errorf("the origin saw %d requests for the cart, want only A's: the waiting browser's never reached it", n)
		}

		// A finishes its checkout: the origin releases the slot, the browser is admitted and taken back.
		if resp, _ := gateGet(t, gateURL+"/checkout/done", first, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("visitor A's checkout = %d, want 200", resp.StatusCode)
		}
		across(t, tab, "admitted and taken back to the origin's page",
			`location.port === '`+gatePort+`' && location.pathname === '/checkout/cart' && !!document.querySelector('#origin')`)
		if got := value(t, tab, "origin page", chromedp.Text(chromedp.ID("origin"))); got != "The shop: /checkout/cart" {
			t.Errorf("the origin's page says %q", got)
		}
		screenshot(t, tab, "gate-origin.png")
		for _, r := range origin.seen() {
			if strings.Contains(r.cookie, "waitroom_gate") {
				t.Errorf("the origin saw the gate's cookie on %s: %q", r.path, r.cookie)
			}
		}
		if n := origin.carts(); n != 2 {
			t.Errorf("the origin saw %d requests for the cart, want 2 (A's, then the admitted browser's)", n)
		}

		// Visitor C, a JSON client, queues behind the browser and follows its place on the socket.
		resp, body := gateGet(t, gateURL+"/checkout/cart", "", "application/json")
		var token string
		if _, rest, ok := strings.Cut(body, `"token":"`); ok {
			token, _, _ = strings.Cut(rest, `"`)
		}
		if resp.StatusCode != http.StatusTooManyRequests || token == "" {
			t.Fatalf("visitor C = %d %s, want 429 with a token", resp.StatusCode, body)
		}
		sock := srv.Dial(t, "shop", token)

		// The browser checks out: its release admits C.
		step(t, tab, "the browser's checkout releases its slot", chromedp.Navigate(gateURL+"/checkout/done"))
		across(t, tab, "the origin's checkout page", `location.pathname === '/checkout/done' && !!document.querySelector('#origin')`)
		m, _ := sock.Until(t, "admitted", aheadTimeout)
		form := url.Values{"pass": {m.Pass}, "room": {"shop"}, "to": {"/checkout/pay"}}
		enter, err := noRedirect.PostForm(gateURL+"/.waitroom/enter", form)
		if err != nil {
			t.Fatal(err)
		}
		enter.Body.Close()
		third := cookieOf(enter)
		if enter.StatusCode != http.StatusSeeOther || enter.Header.Get("Location") != "/checkout/pay" || third == "" {
			t.Fatalf("visitor C's enter = %d to %q, want 303 to /checkout/pay with the cookie", enter.StatusCode, enter.Header.Get("Location"))
		}
		if resp, body := gateGet(t, gateURL+"/checkout/pay", third, ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, "/checkout/pay") {
			t.Errorf("visitor C at the origin = %d %q", resp.StatusCode, body)
		}
		// The browser's released cookie no longer passes: back to the line.
		step(t, tab, "the released browser goes back to the line", chromedp.Navigate(gateURL+"/checkout/cart"))
		across(t, tab, "the waiting page again", `location.pathname === '/s/shop'`)
	})
}

// TestAdminBrowserSetsARoomsModeAtTheGate changes a room's gate mode in the control room: the page shows the
// new mode, the API has it, and the gate applies it (queue_all: a visitor of an empty room waits).
func TestAdminBrowserSetsARoomsModeAtTheGate(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		origin := newShopOrigin(t)
		gatePort := freePort(t)
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":     apptest.AdminKey,
			"WAITROOM_GATE_UPSTREAM": origin.URL,
			"WAITROOM_GATE_ADDR":     "127.0.0.1:" + gatePort,
			"WAITROOM_GATE_PATHS":    "/checkout=demo",
		})
		tab := newTab(t, path, networkStatus(http.StatusUnauthorized))
		step(t, tab, "open the control room with the key",
			chromedp.Navigate(srv.URL+"/admin"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
			until(`document.querySelector('[data-testid="current-gate_mode"]').dataset.value === 'auto'`, stepTimeout),
		)
		step(t, tab, "queue everyone at the gate",
			chromedp.Evaluate[chromedp.Void](`(() => {
				const s = document.querySelector('#adm-gate-mode');
				s.value = 'queue_all';
				s.dispatchEvent(new Event('input', {bubbles: true}));
				s.dispatchEvent(new Event('change', {bubbles: true}));
			})()`),
			chromedp.Click(chromedp.CSS(`[data-testid="admission-submit"]`)),
			until(`document.querySelector('[data-testid="current-gate_mode"]').dataset.value === 'queue_all'`, stepTimeout),
			until(`document.querySelector('[data-testid="admission-message"]').textContent.includes('at the gate queue all')`, stepTimeout),
		)
		screenshot(t, tab, "admin-gate-mode.png")
		var demo struct {
			Admission struct {
				GateMode string `json:"gate_mode"`
			} `json:"admission"`
		}
		if code := srv.Admin(t, http.MethodGet, "/screenings/demo", nil, &demo); code != http.StatusOK || demo.Admission.GateMode != "queue_all" {
			t.Fatalf("GET demo = %d, gate_mode %q, want queue_all", code, demo.Admission.GateMode)
		}
		// Every gate reads a room's mode again within a second. The gate runs as its own process here,
		// and nothing it serves shows which mode it read; probing it until it answers 303 would send
		// the probes that came first to the origin and spoil the count of origin requests below.
		time.Sleep(1100 * time.Millisecond)
		if resp, _ := gateGet(t, "http://127.0.0.1:"+gatePort+"/checkout", "", ""); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a visitor of the empty room under queue_all = %d, want 303 to the line", resp.StatusCode)
		}
		if n := len(origin.seen()); n != 0 {
			t.Errorf("the origin saw %d requests, want none", n)
		}
		step(t, tab, "hand the room back to the server's default",
			chromedp.Evaluate[chromedp.Void](`(() => {
				const s = document.querySelector('#adm-gate-mode');
				s.value = 'default';
				s.dispatchEvent(new Event('input', {bubbles: true}));
				s.dispatchEvent(new Event('change', {bubbles: true}));
			})()`),
			chromedp.Click(chromedp.CSS(`[data-testid="admission-submit"]`)),
			until(`document.querySelector('[data-testid="current-gate_mode"]').dataset.value === 'auto'`, stepTimeout),
		)
		if code := srv.Admin(t, http.MethodGet, "/screenings/demo", nil, &demo); code != http.StatusOK || demo.Admission.GateMode != "auto" {
			t.Fatalf("GET demo after default = %d, gate_mode %q, want auto (gate.mode)", code, demo.Admission.GateMode)
		}
	})
}
