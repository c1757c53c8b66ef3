// Seats as a buyer and an operator read them: in seat order on every page (D9 before D10), and a seat map
// that a 320-px phone can tap and scroll.

package browser

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// seatsIn is the text of the elements sel matches, joined by spaces: the seats a page lists, in its order.
func seatsIn(sel string) chromedp.Action[string] {
	return chromedp.Evaluate[string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map((e) => e.textContent.trim()).join(' ')`, sel))
}

// TestBrowserSeatsReadInSeatOrder: a buyer who picks A10, then A9, then A2 sees them as A2 A9 A10 on the
// room's confirmation, the checkout and the ticket, and so does the operator in the control room's orders
// table: seats sort by row, then by number, not as text ("A10 A2 A9").
func TestBrowserSeatsReadInSeatOrder(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, holdSettings())
		tab := newTab(t, path)
		openAdmitted(t, tab, srv, "demo")
		step(t, tab, "hold A10, A9 and A2",
			chromedp.Click(chromedp.CSS(`[data-seat="A10"]`)),
			chromedp.Click(chromedp.CSS(`[data-seat="A9"]`)),
			chromedp.Click(chromedp.CSS(`[data-seat="A2"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"]`)),
		)
		const want = "A2 A9 A10"
		if got := value(t, tab, "the confirmation's seats", seatsIn(`#confirmed-seats li`)); got != want {
			t.Errorf("the room's confirmation lists %q, want %q", got, want)
		}
		checkA11y(t, tab, "the confirmation of three seats")
		code := value(t, tab, "the order's code", chromedp.Evaluate[string](
			`(JSON.parse(localStorage.getItem('waitroom:room:demo') || '{}').reservation || {}).code || ''`))
		if code == "" {
			t.Fatal("no order code in the room's memory after the hold")
		}

		step(t, tab, "the checkout", chromedp.Navigate(srv.URL+"/checkout/"+code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)))
		if got := value(t, tab, "the checkout's seats", seatsIn(`#seats li`)); got != want {
			t.Errorf("the checkout lists %q, want %q", got, want)
		}
		step(t, tab, "the ticket page", chromedp.Navigate(srv.URL+"/t/"+code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="held"]`)))
		if got := value(t, tab, "the ticket's seats", seatsIn(`#seats li`)); got != want {
			t.Errorf("the ticket page lists %q, want %q", got, want)
		}

		// The page asks whether the admin API is on before it has the key (401).
		admin := newTab(t, path, networkStatus(http.StatusUnauthorized))
		step(t, admin, "the control room's orders",
			chromedp.Navigate(srv.URL+"/admin#demo"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
			orderRow(code, "held"),
		)
		if got := value(t, admin, "the orders table's seats", seatsIn(fmt.Sprintf(`#orders-rows tr[data-code=%q] td:nth-of-type(2)`, code))); got != want {
			t.Errorf("the control room's orders table lists %q, want %q", got, want)
		}
	})
}

// TestBrowserAWideSeatMapSaysItScrolls: on a 320-px phone a row of twenty seats is wider than the screen;
// the seats stay at least 24 × 24 px, the map shows that it scrolls (a scroll bar, a faded edge on the side
// with seats out of view, and a line saying each row has seats 1 to 20), and the screen is drawn over the
// whole map, centred on its seats, not on the part in view.
func TestBrowserAWideSeatMapSaysItScrolls(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, map[string]string{"WAITROOM_ADMIN_KEY": apptest.AdminKey})
		saleScreening(t, srv, "wide", "Wide", 3, 20, 2)
		tab := newTab(t, path)
		step(t, tab, "a 320-px screen", chromedp.EmulateViewport(320, 640))
		openAdmitted(t, tab, srv, "wide")
		type view struct {
			SeatWidth, SeatHeight, ScreenMid, SeatsMid float64
			ScrollWidth, ClientWidth                   int
			Overflow, More, Hint, Scrollbar            string
			HintShown, HintAbove                       bool
		}
		const measure = `(() => {
			const w = document.querySelector('[data-testid="seatmap-wrap"]');
			const hint = document.querySelector('[data-testid="seatmap-hint"]');
			const seats = [...document.querySelectorAll('[data-seat]')].map((s) => s.getBoundingClientRect());
			const screen = document.querySelector('.screen').getBoundingClientRect();
			const left = Math.min(...seats.map((r) => r.left)), right = Math.max(...seats.map((r) => r.right));
			return {
				SeatWidth: Math.min(...seats.map((r) => r.width)), SeatHeight: Math.min(...seats.map((r) => r.height)),
				ScreenMid: (screen.left + screen.right) / 2, SeatsMid: (left + right) / 2,
				ScrollWidth: w.scrollWidth, ClientWidth: w.clientWidth, Scrollbar: getComputedStyle(w).scrollbarWidth,
				Overflow: w.dataset.overflow || '', More: w.dataset.more || '',
				Hint: hint.textContent, HintShown: !hint.hidden && hint.getBoundingClientRect().height > 0,
				HintAbove: hint.getBoundingClientRect().bottom <= w.getBoundingClientRect().top,
			};
		})()`
		got := value(t, tab, "the wide map", chromedp.Evaluate[view](measure))
		if got.SeatWidth < 24 || got.SeatHeight < 24 {
			t.Errorf("smallest seat %.1f × %.1f px, want at least 24 × 24 (WCAG 2.5.8)", got.SeatWidth, got.SeatHeight)
		}
		if got.ScrollWidth <= got.ClientWidth {
			t.Fatalf("a row of 20 seats at 320 px: scroll width %d of %d, want wider than its box (the case under test)", got.ScrollWidth, got.ClientWidth)
		}
		// Headless Chromium hides every scroll bar (--hide-scrollbars), so the test reads the style that keeps
		// this one shown where other pages' bars would be thin overlays or none.
		if got.Overflow != "true" || got.More != "right" || got.Scrollbar != "thin" {
			t.Errorf("the overflowing map = %+v, want it marked as overflowing with more on the right, and its scroll bar shown (thin)", got)
		}
		if !got.HintShown || !got.HintAbove || !strings.Contains(got.Hint, "seats 1 to 20") {
			t.Errorf("the hint = %q (shown %v, above the map %v), want a line above the map saying each row has seats 1 to 20", got.Hint, got.HintShown, got.HintAbove)
		}
		if d := got.ScreenMid - got.SeatsMid; d < -2 || d > 2 {
			t.Errorf("the screen's middle is %.1f px from the seats' middle, want it centred on the whole map", d)
		}
		screenshot(t, tab, "room-seatmap-wide-320.png")
		checkA11y(t, tab, "a wide seat map at 320 px")

		step(t, tab, "scroll to the end of the rows",
			chromedp.Evaluate[chromedp.Void](`(() => { const w = document.querySelector('[data-testid="seatmap-wrap"]'); w.scrollLeft = w.scrollWidth; })()`),
			until(`document.querySelector('[data-testid="seatmap-wrap"]').dataset.more === 'left'`, stepTimeout),
		)

		// Ten seats a row fit: no mark, no hint.
		step(t, tab, "the demo's map", chromedp.Navigate(srv.URL+"/"), chromedp.Evaluate[chromedp.Void](`localStorage.clear()`))
		openAdmitted(t, tab, srv, "demo")
		got = value(t, tab, "the demo's map", chromedp.Evaluate[view](measure))
		if got.Overflow != "false" || got.More != "" || got.HintShown {
			t.Errorf("a map that fits = %+v, want no overflow mark and no hint", got)
		}
		if d := got.ScreenMid - got.SeatsMid; d < -2 || d > 2 {
			t.Errorf("on a map that fits, the screen's middle is %.1f px from the seats' middle, want it centred", d)
		}
	})
}
