// Seats as a buyer and an operator read them: in seat order on every page (D9 before D10), and a seat map
// that a 320-px phone can tap and scroll.

package browser

import (
	"fmt"
	"net/http"
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
