// A site-wide room (no seats, the gate's line in front of a site) in Chromium: a room, not a screening, on
// every page. The list shows it without seat counts; its waiting page, reached through the gate, names the
// site and links back to it, closed too; admitted without the gate's way back, it has no seat map and no Reserve, only
// the way on to the site; the control room counts no seats for it.

package browser

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// siteName is gate.site_name in these tests.
const siteName = "The Shop"

// startSiteWide starts a server with a gate in front of a new origin, /checkout=shop, and the site-wide room
// shop admitting one visitor at a time; it returns the server, the origin and the gate's URL.
func startSiteWide(t *testing.T, env *testenv.Env) (*apptest.Server, *shopOrigin, string) {
	t.Helper()
	origin := newShopOrigin(t)
	gatePort := freePort(t)
	srv := apptest.Start(t, env, map[string]string{
		"WAITROOM_ADMIN_KEY":      apptest.AdminKey,
		"WAITROOM_GATE_UPSTREAM":  origin.URL,
		"WAITROOM_GATE_ADDR":      "127.0.0.1:" + gatePort,
		"WAITROOM_GATE_PATHS":     "/checkout=shop",
		"WAITROOM_GATE_SITE_NAME": siteName,
	})
	now := time.Now().UTC()
	if code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
		"id": "shop", "name": "Checkout line", "starts_at": now.Add(2 * time.Hour), "sale_opens_at": now.Add(-time.Minute),
		"site_wide": true, "admission": map[string]any{"interval": "200ms", "batch_size": 10, "max_active": 1},
	}, nil); code != http.StatusCreated {
		t.Fatalf("create the site-wide room: %d, want 201", code)
	}
	return srv, origin, "http://127.0.0.1:" + gatePort
}

// noSeatMap fails the test when the room page shows anything of a screening: a seat, the seat map's view, or
// a Reserve button a visitor can see.
func noSeatMap(t *testing.T, tab context.Context, state string) {
	t.Helper()
	shown := value(t, tab, "what of a screening "+state+" shows", chromedp.Evaluate[[]string](`(() => {
		const seen = (e) => !!e && e.getClientRects().length > 0;
		const out = [];
		if (document.querySelector('[data-seat]')) out.push('a seat');
		if (seen(document.querySelector('#view-admitted'))) out.push('the seat map view');
		if (seen(document.querySelector('[data-testid="reserve"]'))) out.push('Reserve');
		if (seen(document.querySelector('#best'))) out.push('best available');
		if (document.querySelector('#screening-when').textContent !== '') out.push('a start time');
		return out;
	})()`))
	if len(shown) > 0 {
		t.Errorf("%s, the site-wide room shows %v, want nothing of a screening", state, shown)
	}
}

func TestBrowserListsASiteWideRoomWithoutSeatCounts(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv, _, _ := startSiteWide(t, env)
		tab := newTab(t, path)
		step(t, tab, "open the list",
			chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS(`[data-screening="shop"] [data-testid="site-wide"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-screening="demo"] .meta .muted`)),
		)
		card := func(id string) string {
			return value(t, tab, "the card of "+id, chromedp.Text(chromedp.CSS(fmt.Sprintf(`[data-screening=%q]`, id))))
		}
		shop, demo := card("shop"), card("demo")
		for _, no := range []string{"seats left", "seats free", "Starts"} {
			if strings.Contains(shop, no) {
				t.Errorf("the site-wide room's card says %q: %q", no, shop)
			}
		}
		if want := "A waiting line for a site: no seats to choose"; !strings.Contains(shop, want) {
			t.Errorf("the site-wide room's card = %q, want it to say %q", shop, want)
		}
		if !strings.Contains(demo, "seats left") || !strings.Contains(demo, "Starts") {
			t.Errorf("the screening demo's card = %q, want its seats left and start time", demo)
		}
		screenshot(t, tab, "site-wide-list.png")
		checkA11y(t, tab, "the list with a site-wide room")
	})
}

func TestBrowserTheGatesWaitingPageNamesTheSiteAndLinksBackToIt(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv, _, gateURL := startSiteWide(t, env)
		// Visitor A takes the room's one slot: the browser waits.
		if resp, _ := gateGet(t, gateURL+"/checkout/cart", "", ""); resp.StatusCode != http.StatusOK || cookieOf(resp) == "" {
			t.Fatalf("visitor A = %d, want 200 with the gate's cookie", resp.StatusCode)
		}
		tab := newTab(t, path)
		step(t, tab, "visit the protected path with the room full", chromedp.Navigate(gateURL+"/checkout/cart"))
		across(t, tab, "the waiting page", `location.pathname === '/s/shop' && document.querySelector('main').dataset.phase === 'waiting'`)
		if got, want := value(t, tab, "the waiting heading", chromedp.Text(chromedp.ID("waiting-heading"))), "You are in line for "+siteName; got != want {
			t.Errorf("the waiting heading = %q, want %q", got, want)
		}
		back := value(t, tab, "the link back", chromedp.Evaluate[[2]string](`(() => {
			const a = document.querySelector('[data-testid="back"]');
			return [a.textContent, a.href];
		})()`))
		if want := [2]string{"← Back to " + siteName, gateURL + "/"}; back != want {
			t.Errorf("the link back = %q, want %q", back, want)
		}
		noSeatMap(t, tab, "waiting")
		screenshot(t, tab, "site-wide-waiting.png")
		checkA11y(t, tab, "the gate's waiting page")

		step(t, tab, "in Korean", chromedp.Click(chromedp.ID("lang-switch")))
		if got, want := value(t, tab, "the Korean heading", chromedp.Text(chromedp.ID("waiting-heading"))), siteName+" 입장 대기 중입니다"; got != want {
			t.Errorf("the Korean waiting heading = %q, want %q", got, want)
		}
		if got, want := value(t, tab, "the Korean link", chromedp.Text(chromedp.CSS(`[data-testid="back"]`))), "← "+siteName+"(으)로 돌아가기"; got != want {
			t.Errorf("the Korean link back = %q, want %q", got, want)
		}
		checkA11y(t, tab, "the gate's waiting page in Korean")

		// The operator closes the line: the room says so in a line's words, and still leads back to the site.
		step(t, tab, "back to English", chromedp.Click(chromedp.ID("lang-switch")))
		if code := srv.Admin(t, http.MethodPost, "/screenings/shop/close", nil, nil); code != http.StatusOK {
			t.Fatalf("close: %d, want 200", code)
		}
		step(t, tab, "the room says the line is closed", until(`document.querySelector('[data-testid="final"]').dataset.kind !== ''`, stepTimeout))
		final := value(t, tab, "the closed line", chromedp.Evaluate[[4]string](`(() => {
			const a = document.querySelector('#final-list');
			return [document.querySelector('[data-testid="final"]').dataset.kind + ': ' + document.querySelector('#final-title').textContent, document.querySelector('#final-text').textContent, a.textContent, a.href];
		})()`))
		// The socket may say the line was closed or, when the scheduler closes it first, that it sold out;
		// either way a line without seats speaks of the line.
		if (final[0] != "closed: The line is closed" && final[0] != "sold_out: The line has ended") || strings.Contains(final[1], "seat") {
			t.Errorf("the closed line says %q, %q, want the line closed or ended and no word of seats", final[0], final[1])
		}
		if want := [2]string{"← Back to " + siteName, gateURL + "/"}; [2]string{final[2], final[3]} != want {
			t.Errorf("the closed line's link = %q, %q, want %q", final[2], final[3], want)
		}
		checkA11y(t, tab, "the gate's room, closed")

		step(t, tab, "follow the link back", chromedp.Click(chromedp.CSS(`#final-list`)))
		across(t, tab, "the site's home page", `location.href === '`+gateURL+`/' && !!document.querySelector('#origin')`)
		if got := value(t, tab, "the origin's page", chromedp.Text(chromedp.ID("origin"))); got != "The shop: /" {
			t.Errorf("the link back led to %q, want the site's home page", got)
		}
	})
}

func TestBrowserAdmittedToASiteWideRoomContinuesToTheSite(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv, origin, gateURL := startSiteWide(t, env)
		tab := newTab(t, path)
		// Opened from the list, not sent by the gate: admitted, with nothing to choose. The gate takes the
		// enter form from the room's origin as the gate names it (the host its request reached, 127.0.0.1),
		// not from the server's printed localhost.
		room := strings.Replace(srv.URL, "//localhost:", "//127.0.0.1:", 1)
		step(t, tab, "open the room and be admitted",
			chromedp.Navigate(room+"/s/shop"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="site-continue"]`)),
		)
		if got := value(t, tab, "the phase", chromedp.Evaluate[string](`document.querySelector('main').dataset.phase`)); got != "admitted" {
			t.Fatalf("phase = %q, want admitted", got)
		}
		for sel, want := range map[string]string{
			"#site-in-heading":              "You are in",
			"#site-in-text":                 "Your turn has come: continue to " + siteName + ".",
			`[data-testid="site-continue"]`: "Continue to " + siteName,
		} {
			if got := value(t, tab, sel, chromedp.Text(chromedp.CSS(sel))); got != want {
				t.Errorf("the admitted view's %s = %q, want %q", sel, got, want)
			}
		}
		noSeatMap(t, tab, "admitted")
		screenshot(t, tab, "site-wide-admitted.png")
		checkA11y(t, tab, "a site-wide room's admitted view")

		step(t, tab, "continue to the site", chromedp.Click(chromedp.CSS(`[data-testid="site-continue"]`)))
		across(t, tab, "the site's home page, entered", `location.href === '`+gateURL+`/' && !!document.querySelector('#origin')`)
		step(t, tab, "on to the protected path with the gate's cookie", chromedp.Navigate(gateURL+"/checkout/cart"))
		across(t, tab, "the origin's cart", `location.pathname === '/checkout/cart' && !!document.querySelector('#origin')`)
		if n := origin.carts(); n != 1 {
			t.Errorf("the origin saw %d requests for the cart, want the admitted browser's", n)
		}
	})
}

func TestAdminBrowserCountsNoSeatsForASiteWideRoom(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv, _, _ := startSiteWide(t, env)
		tab := newTab(t, path, networkStatus(http.StatusUnauthorized))
		step(t, tab, "open the control room and pick the site-wide room",
			chromedp.Navigate(srv.URL+"/admin"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.CSS(`button[data-pick="shop"]`)),
			chromedp.Click(chromedp.CSS(`button[data-pick="shop"]`)),
			until(`document.querySelector('#sel-seats').textContent !== '' && document.querySelector('#screening-select').value === 'shop'`, stepTimeout),
		)
		cells := func(id string) []string {
			return value(t, tab, "the overview row of "+id, chromedp.Evaluate[[]string](fmt.Sprintf(
				`[...document.querySelector('button[data-pick=%q]').closest('tr').children].slice(4).map((c) => c.textContent)`, id)))
		}
		if got := cells("shop"); strings.Join(got, " ") != "– – –" {
			t.Errorf("the site-wide room's available, held and sold = %q, want – – –", got)
		}
		if got := cells("demo"); strings.Join(got, " ") != "100 0 0 / 100" {
			t.Errorf("the screening demo's available, held and sold = %q, want its seats counted", got)
		}
		if got, want := value(t, tab, "the selected room's seats", chromedp.Text(chromedp.ID("sel-seats"))), "A site-wide room: no seats"; got != want {
			t.Errorf("the selected room's seats = %q, want %q", got, want)
		}
		checkA11y(t, tab, "the control room with a site-wide room selected")
	})
}
