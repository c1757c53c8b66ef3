// The box office in Chromium, from the buyer's side: a booking held in hold mode, its demo checkout, and the
// ticket page with its QR code; checked for accessibility with axe-core, at a phone's width, in Korean and
// as printed.

package browser

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// pageAxeSource is axe-core (testdata/axe.min.js, MPL-2.0, its licence beside it), run in the page by the
// accessibility checks.
//
//go:embed testdata/axe.min.js
var pageAxeSource string

// holdSettings start a server whose demo screening holds each order until it is paid on the demo checkout.
func holdSettings() map[string]string {
	return map[string]string{
		"WAITROOM_ADMIN_KEY":             apptest.AdminKey,
		"WAITROOM_ADMISSION_INTERVAL":    "500ms",
		"WAITROOM_BOOKING_CHECKOUT":      "hold",
		"WAITROOM_BOOKING_DEMO_CHECKOUT": "true",
	}
}

// order is the part of the order JSON the tests read.
type order struct {
	Code        string   `json:"code"`
	Status      string   `json:"status"`
	Seats       []string `json:"seats"`
	CheckoutURL string   `json:"checkout_url"`
	CancelledBy string   `json:"cancelled_by"`
}

// TestOrderBrowserPaysTheHoldAndGetsATicket: a buyer joins the line, is admitted, reserves a seat that is
// then held, pays on the demo checkout and lands on the ticket page, which shows the order confirmed with
// its QR image loaded; both pages pass axe-core, fit a 320-px phone, speak Korean and print as a ticket.
func TestOrderBrowserPaysTheHoldAndGetsATicket(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, holdSettings())
		tab := newTab(t, path)

		code, seat := bookHeld(t, tab, srv)
		if o := getOrder(t, srv, code); o.Status != "held" || !strings.Contains(o.CheckoutURL, "/checkout/"+code) {
			t.Fatalf("order %s after reserving in hold mode = %+v, want held with the demo checkout as its checkout_url", code, o)
		}

		// The held order's ticket page: not paid yet, no QR code, a link to its checkout.
		step(t, tab, "the held order's ticket page",
			chromedp.Navigate(srv.URL+"/t/"+code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="held"]`)),
		)
		type heldView struct {
			Status, Text, Pay string
			QRShown, QRSrc    bool
		}
		held := value(t, tab, "held ticket", chromedp.Evaluate[heldView](`(() => {
			const q = (s) => document.querySelector(s);
			return {Status: q('[data-testid="ticket-status"]').textContent, Text: q('[data-testid="status-text"]').textContent,
				Pay: q('[data-testid="pay-link"]').getAttribute('href'), QRShown: !q('#qr-box').hidden, QRSrc: q('[data-testid="qr"]').hasAttribute('src')};
		})()`))
		if held.Status != "Not paid yet" || !strings.Contains(held.Text, "not paid yet") || !strings.HasSuffix(held.Pay, "/checkout/"+code) || held.QRShown || held.QRSrc {
			t.Errorf("held ticket page = %+v, want it to say not paid yet, link to /checkout/%s, and show no QR code", held, code)
		}
		axeClean(t, tab, "held ticket page")

		// The demo checkout: said to be a demo, a named countdown, then Pay.
		step(t, tab, "the checkout link", chromedp.Click(chromedp.CSS(`[data-testid="pay-link"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)))
		type checkoutView struct {
			Banner, Role, Name, Countdown, Seats string
		}
		co := value(t, tab, "checkout", chromedp.Evaluate[checkoutView](`(() => {
			const q = (s) => document.querySelector(s);
			const c = q('[data-testid="countdown"]');
			return {Banner: q('[data-testid="demo-banner"]').textContent, Role: c.getAttribute('role'),
				Name: document.getElementById(c.getAttribute('aria-labelledby')).textContent,
				Countdown: c.textContent, Seats: q('[data-testid="seats"]').textContent};
		})()`))
		if !strings.Contains(co.Banner, "demo checkout") || co.Role != "timer" || co.Name != "Time left to pay" ||
			!strings.Contains(co.Countdown, ":") || co.Countdown == "00:00" || co.Seats != seat {
			t.Errorf("checkout page = %+v, want a demo banner, a timer named \"Time left to pay\" counting down, seat %s", co, seat)
		}
		axeClean(t, tab, "checkout page")
		phoneFits(t, tab, "checkout", 320)
		screenshot(t, tab, "checkout-320.png")

		step(t, tab, "pay", chromedp.Click(chromedp.CSS(`[data-testid="pay"]`)))
		afterNavigation(t, tab, "the ticket after paying",
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.pathname === %q`, "/t/"+code), chromedp.WithPollingTimeout(stepTimeout)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="confirmed"]`)),
			chromedp.Poll[chromedp.Void](`(() => { const i = document.querySelector('[data-testid="qr"]'); return i.complete && i.naturalWidth > 0; })()`,
				chromedp.WithPollingTimeout(stepTimeout)),
		)
		if o := getOrder(t, srv, code); o.Status != "confirmed" {
			t.Errorf("order after paying = %+v, want confirmed", o)
		}
		type ticketView struct {
			Status, Seats, Code, Alt, Src string
			QRWidth                       int
		}
		tv := value(t, tab, "ticket", chromedp.Evaluate[ticketView](`(() => {
			const q = (s) => document.querySelector(s);
			const i = q('[data-testid="qr"]');
			return {Status: q('[data-testid="ticket-status"]').textContent, Seats: q('[data-testid="seats"]').textContent,
				Code: q('[data-testid="order-code"]').textContent, Alt: i.alt, Src: i.getAttribute('src'), QRWidth: i.naturalWidth};
		})()`))
		if tv.Status != "Confirmed" || tv.Seats != seat || tv.Code != code || !strings.Contains(tv.Alt, code) || tv.Src != "/t/"+code+"/qr.png" || tv.QRWidth == 0 {
			t.Errorf("ticket page = %+v, want confirmed, seat %s, code %s, its QR image loaded with a text alternative", tv, seat, code)
		}
		axeClean(t, tab, "ticket page")
		phoneFits(t, tab, "ticket", 320)
		screenshot(t, tab, "ticket-320.png")
		step(t, tab, "desktop width", chromedp.EmulateViewport(1280, 1000))

		// Printed: no buttons or links bar, black on white, the QR code at least 7 cm (265 CSS px) wide.
		printed(t, tab)
		step(t, tab, "back to the screen", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: ""})
			return err
		}))

		// In Korean.
		step(t, tab, "switch to Korean", chromedp.Click(chromedp.ID("lang-switch")))
		type words struct{ Title, Status, Lang string }
		ko := value(t, tab, "Korean words", chromedp.Evaluate[words](`({
			Title: document.querySelector('h1').textContent,
			Status: document.querySelector('[data-testid="ticket-status"]').textContent,
			Lang: document.documentElement.lang,
		})`))
		if want := (words{"내 티켓", "예매 확정", "ko"}); ko != want {
			t.Errorf("ticket in Korean = %+v, want %+v", ko, want)
		}
		axeClean(t, tab, "ticket page in Korean")
	})
}

// TestCheckoutBrowserSaysWhyItCannotPay: a buyer who cancels on the checkout is asked first and then told
// the seats are back on sale; one who cancelled in another tab is told so when paying, not shown a ticket;
// a hold that runs out stops the countdown and says the seats went back on sale.
func TestCheckoutBrowserSaysWhyItCannotPay(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		settings := holdSettings()
		settings["WAITROOM_BOOKING_HOLD_TTL"] = "8s"
		srv := apptest.Start(t, env, settings)
		tab := newTab(t, path, networkStatus(http.StatusConflict))

		// Cancelled on the checkout, after a confirmation: the seat is on sale again.
		code, seat := bookHeld(t, tab, srv)
		step(t, tab, "cancel on the checkout",
			chromedp.Navigate(srv.URL+"/checkout/"+code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="cancel"]`)),
			chromedp.WaitVisible(chromedp.ID("cancel-dialog")),
		)
		axeClean(t, tab, "checkout's cancel confirmation")
		step(t, tab, "confirm the cancel",
			chromedp.Click(chromedp.CSS(`[data-testid="cancel-confirm"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="cancelled"]`)),
		)
		if msg := value(t, tab, "message", chromedp.Text(chromedp.CSS(`[data-testid="checkout-message"]`))); !strings.Contains(msg, "back on sale") {
			t.Errorf("after cancelling the page says %q, want that the seats are back on sale", msg)
		}
		if o := getOrder(t, srv, code); o.Status != "cancelled" || o.CancelledBy != "buyer" {
			t.Errorf("order after the buyer's cancel = %+v, want cancelled by the buyer", o)
		}
		var seats []struct{ ID, Status string }
		srv.GetJSON(t, "/api/screenings/demo/seats", &seats)
		for _, s := range seats {
			if s.ID == seat && s.Status != "available" {
				t.Errorf("seat %s after the buyer's cancel: %s, want available", seat, s.Status)
			}
		}

		// Cancelled behind the page's back: Pay says ORDER_CANCELLED in words.
		code, _ = bookHeld(t, tab, srv)
		step(t, tab, "open the checkout",
			chromedp.Navigate(srv.URL+"/checkout/"+code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)),
		)
		if status, body := post(t, srv, "/api/orders/"+code+"/cancel"); status != http.StatusOK {
			t.Fatalf("the buyer's cancel of %s = %d %v, want 200", code, status, body)
		}
		step(t, tab, "pay a cancelled order",
			chromedp.Click(chromedp.CSS(`[data-testid="pay"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout-message"][data-code="ORDER_CANCELLED"]`)),
		)
		if msg := value(t, tab, "message", chromedp.Text(chromedp.CSS(`[data-testid="checkout-message"]`))); !strings.Contains(msg, "cancelled") {
			t.Errorf("after paying a cancelled order the page says %q, want that it was cancelled", msg)
		}
		if loc := value(t, tab, "location", chromedp.Location()); !strings.Contains(loc, "/checkout/") {
			t.Errorf("after paying a cancelled order the page went to %s, want it to stay on the checkout", loc)
		}

		// A hold that runs out: the countdown reaches zero, Pay is off, and the page says why.
		code, _ = bookHeld(t, tab, srv)
		step(t, tab, "open the second checkout",
			chromedp.Navigate(srv.URL+"/checkout/"+code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)),
		)
		step(t, tab, "the hold runs out", chromedp.Poll[chromedp.Void](
			`document.querySelector('[data-testid="pay"]').disabled && document.querySelector('[data-testid="checkout-message"]').textContent !== ''`,
			chromedp.WithPollingTimeout(stepTimeout)))
		if msg := value(t, tab, "message", chromedp.Text(chromedp.CSS(`[data-testid="checkout-message"]`))); !strings.Contains(msg, "back on sale") {
			t.Errorf("after the hold ran out the page says %q, want that the seats went back on sale", msg)
		}
		axeClean(t, tab, "checkout after the hold ran out")
	})
}

// bookHeld joins the demo screening's line in tab, waits to be admitted, reserves the first available seat
// and returns the order's code and the seat. The room page may take the buyer to the checkout itself or
// link to it; else the order is found in the operator's list of held orders. The room's memory of an
// earlier booking is forgotten first, so each call is a new turn in line.
func bookHeld(t *testing.T, tab context.Context, srv *apptest.Server) (code, seat string) {
	t.Helper()
	step(t, tab, "open the waiting room",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.Evaluate[chromedp.Void](`localStorage.removeItem('waitroom:room:demo')`),
		chromedp.Navigate(srv.URL+"/s/demo"),
		chromedp.WaitVisible(chromedp.CSS(`[data-seat]:not([disabled])`)),
	)
	seat = value(t, tab, "an available seat", chromedp.Evaluate[string](`document.querySelector('[data-seat]:not([disabled])').dataset.seat`))
	step(t, tab, "reserve "+seat,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-seat=%q]`, seat))),
		chromedp.WaitEnabled(chromedp.CSS(`[data-testid="reserve"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
		chromedp.Poll[chromedp.Void](`location.pathname.startsWith('/checkout/') || document.querySelector('a[href*="/checkout/"]') !== null ||
			!document.querySelector('[data-testid="confirmation"]').hidden`, chromedp.WithPollingTimeout(stepTimeout)),
	)
	href := value(t, tab, "the way to the checkout", chromedp.Evaluate[string](`location.pathname.startsWith('/checkout/') ? location.pathname :
		(document.querySelector('a[href*="/checkout/"]') || {}).href || ''`))
	if _, after, ok := strings.Cut(href, "/checkout/"); ok {
		code = strings.Trim(after, "/")
	} else {
		var list struct {
			Orders []order `json:"orders"`
		}
		if status := srv.Admin(t, http.MethodGet, "/screenings/demo/orders?status=held", nil, &list); status != http.StatusOK {
			t.Fatalf("held orders of demo: %d, want 200", status)
		}
		for _, o := range list.Orders {
			if len(o.Seats) == 1 && o.Seats[0] == seat {
				code = o.Code
			}
		}
	}
	if code == "" {
		t.Fatalf("no held order of seat %s after reserving it", seat)
	}
	return code, seat
}

// afterNavigation runs actions once the page a click started loading is there: a wait begun on the page
// that navigates away fails (chromedp says the target navigated; Chromium, evaluating in the page's
// JavaScript context as it is torn down, that it cannot find or lost that context), so it is tried again
// until stepTimeout.
func afterNavigation(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		ctx, cancel := context.WithTimeout(tab, time.Until(deadline))
		err := chromedp.Do(ctx, actions...)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !navigatedAway(err) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// navigatedAway tells whether err is a wait that failed because its page went away under it.
func navigatedAway(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated") || strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed")
}

// getOrder reads an order through the public API.
func getOrder(t *testing.T, srv *apptest.Server, code string) order {
	t.Helper()
	var o order
	if status := srv.GetJSON(t, "/api/orders/"+url.PathEscape(code), &o); status != http.StatusOK {
		t.Fatalf("GET /api/orders/%s = %d, want 200", code, status)
	}
	return o
}

// post sends a POST without a body and returns the status and the decoded answer.
func post(t *testing.T, srv *apptest.Server, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// axeFinding is one rule axe-core found broken, with the elements that break it.
type axeFinding struct {
	ID, Impact, Help string
	Targets          []string
}

// axeClean runs axe-core in the tab's page and fails the test on any serious or critical violation.
func axeClean(t *testing.T, tab context.Context, what string) {
	t.Helper()
	step(t, tab, "load axe-core", chromedp.Evaluate[chromedp.Void](`window.axe ? undefined : (0, eval)(`+jsString(pageAxeSource)+`)`))
	found := value(t, tab, "axe "+what, chromedp.Evaluate[[]axeFinding](`axe.run(document, {resultTypes: ['violations']}).then((r) =>
		r.violations.map((v) => ({ID: v.id, Impact: v.impact || '', Help: v.help, Targets: v.nodes.map((n) => String(n.target))})))`,
		chromedp.EvalAwaitPromise))
	for _, v := range found {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("axe on the %s: %s (%s): %s, at %v", what, v.ID, v.Impact, v.Help, v.Targets)
		} else {
			t.Logf("axe on the %s: %s (%s): %s, at %v", what, v.ID, v.Impact, v.Help, v.Targets)
		}
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// phoneFits shows the page at width CSS pixels and fails the test if it scrolls sideways.
func phoneFits(t *testing.T, tab context.Context, what string, width int64) {
	t.Helper()
	step(t, tab, "phone width", chromedp.EmulateViewport(width, 700))
	if w := value(t, tab, what+" width", chromedp.Evaluate[int64](`document.documentElement.scrollWidth`)); w > width {
		t.Errorf("%s page at a %d-px viewport is %d px wide, want no sideways scroll", what, width, w)
	}
}

// printed emulates print media on the ticket page: no button or bar shows, the text is black on white, and
// the QR code is large.
func printed(t *testing.T, tab context.Context) {
	t.Helper()
	step(t, tab, "print media", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
		return err
	}))
	type print struct {
		Visible         []string
		Color, Bg, Card string
		QRWidth         float64
	}
	p := value(t, tab, "printed ticket", chromedp.Evaluate[print](`(() => {
		const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
		return {
			Visible: [...document.querySelectorAll('button, .btn, header.bar, .skip')].filter(shown).map((e) => e.id || e.className || e.tagName),
			Color: getComputedStyle(document.querySelector('[data-testid="ticket"] h2')).color,
			Bg: getComputedStyle(document.body).backgroundColor,
			Card: getComputedStyle(document.querySelector('[data-testid="ticket"]')).backgroundColor,
			QRWidth: document.querySelector('[data-testid="qr"]').getBoundingClientRect().width,
		};
	})()`))
	if len(p.Visible) > 0 || p.Color != "rgb(0, 0, 0)" || p.Bg != "rgb(255, 255, 255)" || p.Card != "rgb(255, 255, 255)" || p.QRWidth < 265 {
		t.Errorf("printed ticket = %+v, want no buttons, black on white, the QR code at least 265 px (7 cm) wide", p)
	}
}
