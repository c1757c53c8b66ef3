// The box office in the control room, in Chromium: the checkout mode set with the admission settings, the
// seats available, held and sold as they change, a screening's orders by status, their CSV export, and an
// operator's cancel of a paid ticket that puts its seat back on sale.

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

// TestAdminOrdersBrowserCancelsAPaidTicket: the operator switches the demo screening to hold mode in the
// control room; a buyer in another browser holds a seat (the control room counts it held), pays (sold), and
// gets a ticket; the operator finds the order among the confirmed ones, exports them as CSV, and cancels it
// after confirming; the ticket says so, and the seat is available again to the API and the control room.
func TestAdminOrdersBrowserCancelsAPaidTicket(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		// The demo checkout, as make run has it: the control room may switch a screening to hold mode.
		srv := apptest.Start(t, env, map[string]string{
			"WAITROOM_ADMIN_KEY":             apptest.AdminKey,
			"WAITROOM_ADMISSION_INTERVAL":    "500ms",
			"WAITROOM_BOOKING_DEMO_CHECKOUT": "true",
		})
		// The page asks whether the admin API is on before it has the key (401).
		admin := newTab(t, path, networkStatus(http.StatusUnauthorized))
		buyer := newTab(t, path)

		step(t, admin, "sign in",
			chromedp.Navigate(srv.URL+"/admin#demo"),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
			countIs("available", 100), countIs("held", 0), countIs("sold", 0),
		)
		if mode := value(t, admin, "checkout mode", chromedp.Evaluate[string](`document.querySelector('[data-testid="current-checkout"]').dataset.value`)); mode == "hold" {
			t.Fatalf("checkout mode of demo on a server started without one = %q, want not hold", mode)
		}

		// Hold mode, set with the other admission settings.
		step(t, admin, "checkout: hold",
			chromedp.Click(chromedp.ID("adm-checkout-hold")),
			chromedp.Click(chromedp.CSS(`[data-testid="admission-submit"]`)),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="current-checkout"]').dataset.value === 'hold'`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)
		var demo struct {
			Checkout  string `json:"checkout"`
			Admission struct {
				Checkout string `json:"checkout"`
			} `json:"admission"`
		}
		if srv.Admin(t, http.MethodGet, "/screenings/demo", nil, &demo); demo.Checkout != "hold" && demo.Admission.Checkout != "hold" {
			t.Fatalf("demo after choosing hold in the control room = %+v, want checkout hold", demo)
		}
		if msg := value(t, admin, "admission message", chromedp.Text(chromedp.CSS(`[data-testid="admission-message"]`))); !strings.Contains(msg, "checkout Hold until paid") {
			t.Errorf("after applying, the page says %q, want the checkout mode among the effective settings", msg)
		}

		// The buyer holds a seat: counted held, live, and listed.
		code, seat := bookHeld(t, buyer, srv)
		step(t, admin, "counted held", countIs("available", 99), countIs("held", 1), countIs("sold", 0),
			orderRow(code, "held"))

		// The buyer pays: counted sold, and listed among the confirmed orders.
		step(t, buyer, "pay",
			chromedp.Navigate(srv.URL+"/checkout/"+code),
			chromedp.Click(chromedp.CSS(`[data-testid="pay"]`)),
		)
		afterNavigation(t, buyer, "the ticket", chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="confirmed"]`)))
		step(t, admin, "counted sold", countIs("available", 99), countIs("held", 0), countIs("sold", 1),
			chromedp.SetValue(chromedp.ID("orders-status"), "confirmed"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#orders-status').dispatchEvent(new Event('change', {bubbles: true}))`),
			orderRow(code, "confirmed"),
			chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#orders-rows tr')].every((tr) => tr.dataset.status === 'confirmed')`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)
		axeClean(t, admin, "control room with its orders")
		screenshot(t, admin, "admin-orders.png")

		// The CSV export: fetched with the key and handed to the browser as a file.
		step(t, admin, "export CSV",
			chromedp.Evaluate[chromedp.Void](`(() => {
				window.exported = null;
				const make = URL.createObjectURL;
				URL.createObjectURL = (b) => { b.text().then((s) => { window.exported = s; }); return make.call(URL, b); };
			})()`),
			chromedp.Click(chromedp.CSS(`[data-testid="orders-export"]`)),
			chromedp.Poll[chromedp.Void](`window.exported !== null`, chromedp.WithPollingTimeout(stepTimeout)),
		)
		csv := value(t, admin, "exported CSV", chromedp.Evaluate[string](`window.exported`))
		lines := strings.Split(strings.TrimSpace(csv), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "id,code,status,seats,") || !strings.Contains(lines[1], code) || !strings.Contains(lines[1], "confirmed") {
			t.Errorf("exported CSV = %q, want the header and the one confirmed order %s", csv, code)
		}
		if msg := value(t, admin, "export message", chromedp.Text(chromedp.CSS(`[data-testid="orders-message"]`))); !strings.Contains(msg, "orders-demo-confirmed.csv") {
			t.Errorf("after the export the page says %q, want the file's name", msg)
		}

		// Cancel: asked first; keeping it changes nothing, confirming cancels.
		cancelButton := chromedp.CSS(fmt.Sprintf(`#orders-rows tr[data-code=%q] button[data-cancel]`, code))
		step(t, admin, "ask, then keep",
			chromedp.Click(cancelButton),
			chromedp.WaitVisible(chromedp.ID("order-dialog")),
		)
		if text := value(t, admin, "confirmation", chromedp.Text(chromedp.ID("order-dialog-text"))); !strings.Contains(text, code) || !strings.Contains(text, seat) || !strings.Contains(text, "paid") {
			t.Errorf("confirmation = %q, want it to name order %s, seat %s, and that it was paid", text, code, seat)
		}
		step(t, admin, "keep it", chromedp.Click(chromedp.ID("order-dialog-keep")), chromedp.WaitNotVisible(chromedp.ID("order-dialog")))
		if o := getOrder(t, srv, code); o.Status != "confirmed" {
			t.Fatalf("order after keeping it = %+v, want still confirmed", o)
		}
		step(t, admin, "cancel it",
			chromedp.Click(cancelButton),
			chromedp.WaitVisible(chromedp.ID("order-dialog")),
			chromedp.Click(chromedp.CSS(`[data-testid="order-cancel-confirm"]`)),
			chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="orders-message"]').classList.contains('ok')`,
				chromedp.WithPollingTimeout(stepTimeout)),
			countIs("available", 100), countIs("sold", 0),
		)
		if o := getOrder(t, srv, code); o.Status != "cancelled" || o.CancelledBy != "admin" {
			t.Errorf("order after the operator's cancel = %+v, want cancelled by admin", o)
		}

		// The seat is on sale again, and the ticket says it was cancelled, without its QR code.
		var seats []struct{ ID, Status string }
		srv.GetJSON(t, "/api/screenings/demo/seats", &seats)
		for _, s := range seats {
			if s.ID == seat && s.Status != "available" {
				t.Errorf("seat %s after the cancel: %s, want available", seat, s.Status)
			}
		}
		step(t, buyer, "the ticket after the cancel",
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="cancelled"]`)),
		)
		type cancelled struct {
			Text   string
			QRShow bool
		}
		c := value(t, buyer, "cancelled ticket", chromedp.Evaluate[cancelled](`({
			Text: document.querySelector('[data-testid="status-text"]').textContent,
			QRShow: !document.querySelector('#qr-box').hidden,
		})`))
		if !strings.Contains(c.Text, "organiser cancelled") || c.QRShow {
			t.Errorf("ticket after the operator's cancel = %+v, want it to say the organiser cancelled it, with no QR code", c)
		}

		// Another buyer sees the seat available on the seat map.
		other := newTab(t, path)
		step(t, other, "another buyer's seat map",
			chromedp.Navigate(srv.URL+"/s/demo"),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-seat=%q]:not([disabled])`, seat))),
		)
	})
}

// countIs polls until the control room shows n seats of the selected screening as kind (available, held,
// sold).
func countIs(kind string, n int) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('[data-testid="count-%s"]').dataset.value === '%d'`, kind, n),
		chromedp.WithPollingTimeout(stepTimeout))
}

// orderRow polls until the orders panel lists the order with code in status.
func orderRow(code, status string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const tr = document.querySelector('#orders-rows tr[data-code=%q]'); return tr !== null && tr.dataset.status === %q; })()`, code, status),
		chromedp.WithPollingTimeout(stepTimeout))
}
