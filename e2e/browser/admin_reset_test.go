// The control room's reset and archive in Chromium: a reset asks first and is refused while the sale has
// orders unless the operator ticks the box; an archived screening leaves the public list and comes back.

package browser

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// TestAdminBrowserResetsAndArchivesASale: a screening with one seat sold; the operator asks to reset it,
// is refused without ticking the box (SALE_HAS_ORDERS), resets it with the box ticked (the seat is for sale
// again), archives it (gone from the public list, kept in the control room) and unarchives it.
func TestAdminBrowserResetsAndArchivesASale(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		saleScreening(t, srv, "r1", "Reset me", 2, 3, 10)
		pass, sock := admittedPass(t, srv, "r1")
		if code, body := srv.Reserve(t, "r1", pass, "A1"); code != http.StatusCreated {
			t.Fatalf("reserve A1 = %d %v, want 201", code, body)
		}
		sock.Close()
		// The page asks whether the admin API is on before it has the key (401); the unforced reset is a 409.
		tab := newTab(t, path, networkStatus(http.StatusUnauthorized), networkStatus(http.StatusConflict))

		step(t, tab, "sign in",
			chromedp.Navigate(srv.URL+"/admin#r1"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
			countIs("sold", 1),
		)

		// Asked first; the dialog names the screening and its seats sold, and the box starts unticked.
		step(t, tab, "ask to reset",
			chromedp.Click(chromedp.CSS(`[data-testid="reset"]`)),
			chromedp.WaitVisible(chromedp.ID("reset-dialog")),
		)
		if text := value(t, tab, "confirmation", chromedp.Text(chromedp.ID("reset-text"))); !strings.Contains(text, "r1") || !strings.Contains(text, "held or sold now: 1.") {
			t.Errorf("reset confirmation = %q, want it to name r1 and its 1 seat sold", text)
		}
		if ticked := value(t, tab, "force box", chromedp.Evaluate[bool](`document.querySelector('#reset-force').checked`)); ticked {
			t.Errorf("force box ticked when the dialog opens, want unticked")
		}
		checkA11y(t, tab, "the control room's reset dialog")
		step(t, tab, "cancel", chromedp.Click(chromedp.ID("reset-cancel")),
			until(`!document.querySelector('#reset-dialog').open && document.activeElement.id === 'reset'`, stepTimeout))
		var r1 struct {
			SeatsSold  int     `json:"seats_sold"`
			State      string  `json:"state"`
			ArchivedAt *string `json:"archived_at"`
		}
		if srv.Admin(t, http.MethodGet, "/screenings/r1", nil, &r1); r1.SeatsSold != 1 {
			t.Errorf("seats sold after a cancelled reset = %d, want 1", r1.SeatsSold)
		}

		// Confirmed without the box: refused, said so, nothing deleted.
		step(t, tab, "reset without the box",
			chromedp.Click(chromedp.CSS(`[data-testid="reset"]`)),
			chromedp.WaitVisible(chromedp.ID("reset-dialog")),
			chromedp.Click(chromedp.CSS(`[data-testid="reset-confirm"]`)),
			until(`document.querySelector('[data-testid="action-message"]').textContent.includes('SALE_HAS_ORDERS')`, stepTimeout),
		)
		if srv.Admin(t, http.MethodGet, "/screenings/r1", nil, &r1); r1.SeatsSold != 1 {
			t.Errorf("seats sold after a refused reset = %d, want 1", r1.SeatsSold)
		}

		// With the box ticked: the order goes, the seat is for sale again.
		step(t, tab, "reset with the box",
			chromedp.Click(chromedp.CSS(`[data-testid="reset"]`)),
			chromedp.WaitVisible(chromedp.ID("reset-dialog")),
			chromedp.Click(chromedp.CSS(`[data-testid="reset-force"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="reset-confirm"]`)),
			until(`document.querySelector('[data-testid="action-message"]').textContent.includes('orders deleted: 1')`, stepTimeout),
			countIs("sold", 0), countIs("available", 6), selectedState("on_sale"),
		)
		if srv.Admin(t, http.MethodGet, "/screenings/r1", nil, &r1); r1.SeatsSold != 0 || r1.State != "on_sale" {
			t.Errorf("r1 after the forced reset = %+v, want 0 sold, on_sale", r1)
		}
		screenshot(t, tab, "admin-reset.png")

		// Archive: off the public list, kept here and marked; the button pressed gives way to its opposite.
		step(t, tab, "archive",
			chromedp.Click(chromedp.CSS(`[data-testid="archive"]`)),
			selectedState("archived"),
			until(`document.querySelector('#archive').hidden && !document.querySelector('#unarchive').hidden && document.activeElement.id === 'unarchive'`, stepTimeout),
		)
		if ids := publicList(t, srv); slices.Contains(ids, "r1") {
			t.Errorf("public list after archive = %v, want r1 gone", ids)
		}
		if srv.Admin(t, http.MethodGet, "/screenings/r1", nil, &r1); r1.ArchivedAt == nil || r1.State != "closed" {
			t.Errorf("r1 after archive = %+v, want archived, its sale closed", r1)
		}
		if label := value(t, tab, "overview row", chromedp.Text(chromedp.CSS(`#overview-rows tr:has(button[data-pick="r1"]) .badge`))); label != "Archived" {
			t.Errorf("r1's badge in the overview = %q, want Archived", label)
		}
		checkA11y(t, tab, "the control room with an archived screening")

		step(t, tab, "unarchive",
			chromedp.Click(chromedp.CSS(`[data-testid="unarchive"]`)),
			selectedState("closed"),
			until(`!document.querySelector('#archive').hidden && document.querySelector('#unarchive').hidden`, stepTimeout),
		)
		if ids := publicList(t, srv); !slices.Contains(ids, "r1") {
			t.Errorf("public list after unarchive = %v, want r1 back", ids)
		}

		// In Korean too.
		step(t, tab, "switch to Korean", chromedp.Click(chromedp.ID("lang-switch")))
		type words struct{ Reset, Archive string }
		ko := value(t, tab, "Korean words", chromedp.Evaluate[words](`({
			Reset: document.querySelector('[data-testid="reset"]').textContent,
			Archive: document.querySelector('[data-testid="archive"]').textContent,
		})`))
		if want := (words{"판매 초기화…", "보관"}); ko != want {
			t.Errorf("in Korean: %+v, want %+v", ko, want)
		}
	})
}

// publicList is the ids of GET /api/screenings.
func publicList(t *testing.T, srv *apptest.Server) []string {
	t.Helper()
	var list []struct {
		ID string `json:"id"`
	}
	if code := srv.GetJSON(t, "/api/screenings", &list); code != http.StatusOK {
		t.Fatalf("GET /api/screenings = %d, want 200", code)
	}
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return ids
}
