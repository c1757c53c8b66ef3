// The waitlist after a sell-out in Chromium: a buyer in line sees the sale sell out and stays on the
// waitlist, with the socket open; seats come back (an order cancelled), the page offers them with a
// countdown, and the buyer books them to a ticket; the control room shows the waitlist's figures and turns
// it off. Without e-mail on the server, the page offers no e-mail notice, and a link from an e-mail it does
// not know is refused in words; with e-mail (Mailpit), a buyer who left an address and closed the page is
// mailed the offer, and the e-mail's link opens the room on it.

package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// offerTTL is how long an offer of seats that came back lasts in these tests: long enough to book through
// the page, short enough to see the countdown run.
const offerTTL = 2 * time.Minute

// waitlistSettings start a server in hold mode with the demo checkout, whose screenings keep a waitlist after
// a sell-out (booking.waitlist), with offers of offerTTL (booking.offer_ttl). No e-mail is configured.
func waitlistSettings() map[string]string {
	return map[string]string{
		"WAITROOM_ADMIN_KEY":             apptest.AdminKey,
		"WAITROOM_ADMISSION_INTERVAL":    "200ms",
		"WAITROOM_BOOKING_CHECKOUT":      "hold",
		"WAITROOM_BOOKING_DEMO_CHECKOUT": "true",
		"WAITROOM_BOOKING_HOLD_TTL":      "1m",
		"WAITROOM_BOOKING_WAITLIST":      "true",
		"WAITROOM_BOOKING_OFFER_TTL":     offerTTL.String(),
	}
}

// smallHouse creates a screening on sale now with one row of seats and its waitlist on, whose line admits one
// buyer at a time, through the admin API.
func smallHouse(t *testing.T, srv *apptest.Server, id string, seats int) {
	t.Helper()
	now := time.Now().UTC()
	var out map[string]any
	if code := srv.Admin(t, http.MethodPost, "/screenings", map[string]any{
		"id": id, "name": "Small house", "starts_at": now.Add(2 * time.Hour), "sale_opens_at": now.Add(-time.Minute),
		"rows": 1, "seats_per_row": seats, "waitlist": true,
		"admission": map[string]any{"interval": "200ms", "batch_size": 1, "max_active": 1},
	}, &out); code != http.StatusCreated {
		t.Fatalf("create screening %s with its waitlist on: %d %v, want 201", id, code, out)
	}
	if on, _ := out["waitlist"].(bool); !on {
		t.Fatalf("screening %s as created = %v, want \"waitlist\": true", id, out)
	}
}

// holdAll holds every seat of the screening with pass (a buyer admitted ahead), in hold mode; it returns the
// order's code.
func holdAll(t *testing.T, srv *apptest.Server, screening, pass string, seats ...string) string {
	t.Helper()
	status, body := srv.Reserve(t, screening, pass, seats...)
	code, _ := body["code"].(string)
	if status != http.StatusCreated || code == "" || body["status"] != "held" {
		t.Fatalf("reserve %v of %s: %d %v, want 201 with a held order", seats, screening, status, body)
	}
	return code
}

// pay confirms the held order code on the demo checkout: its seats are sold, and when they were the last the
// sale is sold out (not only every seat held).
func pay(t *testing.T, srv *apptest.Server, screening, code string) {
	t.Helper()
	if status, body := post(t, srv, "/api/orders/"+code+"/pay"); status != http.StatusOK {
		t.Fatalf("pay order %s: %d %v, want 200", code, status, body)
	}
	var s struct {
		State    string `json:"state"`
		Waitlist bool   `json:"waitlist"`
	}
	if srv.GetJSON(t, "/api/screenings/"+screening, &s); s.State != "sold_out" || !s.Waitlist {
		t.Fatalf("screening %s after selling every seat = %+v, want sold_out with its waitlist on", screening, s)
	}
}

// shown polls until the element sel is shown (not hidden) on the page of tab.
func shown(sel string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !e.hidden && e.getClientRects().length > 0; })()`, sel), stepTimeout)
}

// isHidden reports whether the element sel is hidden on the page of tab.
func isHidden(t *testing.T, tab context.Context, sel string) bool {
	t.Helper()
	return value(t, tab, "hidden "+sel, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !e || e.hidden || e.getClientRects().length === 0; })()`, sel)))
}

// textOf is the text of the element sel on the page of tab.
func textOf(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	return value(t, tab, "text of "+sel, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel)))
}

// adminFigure polls until the control room shows the figure testid with the value want.
func adminFigure(testid, want string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`(document.querySelector('[data-testid=%q]') || {dataset: {}}).dataset.value === %q`, testid, want), stepTimeout)
}

// waitSockets waits until the server's instances hold n open sockets of the screening.
func waitSockets(t *testing.T, srv *apptest.Server, screening string, n int) {
	t.Helper()
	var got int
	for deadline := time.Now().Add(stepTimeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var instances []struct {
			Sockets map[string]int `json:"sockets"`
		}
		if status := srv.Admin(t, http.MethodGet, "/instances", nil, &instances); status != http.StatusOK {
			t.Fatalf("GET /api/admin/instances: %d, want 200", status)
		}
		got = 0
		for _, in := range instances {
			got += in.Sockets[screening]
		}
		if got == n {
			return
		}
	}
	t.Fatalf("open sockets of %s: %d after %v, want %d", screening, got, stepTimeout, n)
}

// countdownText is what the room's countdowns show: mm:ss, or h:mm:ss from an hour up.
var countdownText = regexp.MustCompile(`^(\d+:)?\d\d:\d\d$`)

// TestWaitlistBrowserStaysIsOfferedSeatsAndBooks: a buyer waits in the line of a two-seat screening while the
// buyer ahead holds both seats (the page says the seats held are offered in the line's order, and asks the
// party size) and pays; the page says the sale is sold out for now and keeps its socket, the buyer stays on
// the waitlist (its place shown as "1 of 1") and says how many seats they want; the operator
// cancels the order, the page offers the seats with a countdown, and the buyer books them, pays and reaches
// the ticket. The control room shows the waitlist's figures as they change, and turns the waitlist off. The
// waitlist and the offer pass axe-core, in English and Korean.
func TestWaitlistBrowserStaysIsOfferedSeatsAndBooks(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, waitlistSettings())
		const id = "wl"
		smallHouse(t, srv, id, 2)
		buyer := newTab(t, path)
		// The control room asks whether the admin API is on before it has the key (401).
		admin := newTab(t, path, networkStatus(http.StatusUnauthorized))

		// The buyer ahead holds the line's only slot; the browser waits behind it.
		pass, _ := admittedPass(t, srv, id)
		step(t, buyer, "join the line",
			chromedp.Navigate(srv.URL+"/s/"+id),
			until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="status"][data-conn="open"]`)),
		)

		// Every seat held (hold mode): the line is a waitlist already, and asks how many seats the buyer wants.
		code := holdAll(t, srv, id, pass, "A1", "A2")
		step(t, buyer, "every seat held", shown(`[data-testid="all-held"]`), shown(`[data-testid="party"]`))
		if text := textOf(t, buyer, "#all-held-text"); !strings.Contains(text, "offered to this line in its order") {
			t.Errorf("every seat held on a screening with a waitlist: the page says %q, want that seats coming back are offered in order", text)
		}

		// Every seat sold: sold out for now, the waitlist, the socket still open.
		pay(t, srv, id, code)
		step(t, buyer, "the waitlist", shown(`[data-testid="waitlist"]`),
			until(`document.querySelector('[data-testid="waitlist-place"]').dataset.rank === '1'`, stepTimeout))
		time.Sleep(time.Second) // a socket the server closed would show by now
		type waitlistView struct {
			Heading, Text, Place, Conn, Title, Party string
			Options                                  []string
		}
		wv := value(t, buyer, "waitlist view", chromedp.Evaluate[waitlistView](`(() => {
			const q = (s) => document.querySelector(s);
			return {Heading: q('#waitlist-heading').textContent.trim(), Text: q('#waitlist-text').textContent,
				Place: q('[data-testid="waitlist-place"]').textContent, Conn: q('[data-testid="status"]').dataset.conn,
				Title: document.title, Options: [...q('[data-testid="party-size"]').options].map((o) => o.value),
				Party: q('[data-testid="party-size"]').value};
		})()`))
		if wv.Heading != "Sold out for now" ||
			wv.Text != "Stay on the waitlist: if seats come back, you are offered them in your order." ||
			wv.Place != "Your place on the waitlist: 1 of 1" || wv.Conn != "open" || !strings.HasPrefix(wv.Title, "Waitlist") ||
			strings.Join(wv.Options, ",") != "1,2,3,4" || wv.Party != "1" {
			t.Errorf("waitlist view = %+v, want sold out for now, the place 1 of 1, the socket open, a party size of 1 to 4 at 1", wv)
		}
		if !isHidden(t, buyer, `[data-testid="notify"]`) {
			t.Error("the e-mail notice is shown on a server that sends no e-mail")
		}
		screenshot(t, buyer, "waitlist.png")
		checkA11y(t, buyer, "the waitlist view")

		// Stay (nothing sent), then the party size.
		step(t, buyer, "stay",
			chromedp.Click(chromedp.CSS(`[data-testid="waitlist-stay"]`)),
			shown(`[data-testid="waitlist-stayed"]`),
			chromedp.SetValue(chromedp.CSS(`[data-testid="party-size"]`), "2"),
			chromedp.Click(chromedp.CSS(`[data-testid="party-submit"]`)),
			until(`document.querySelector('[data-testid="party-status"]').dataset.state === 'ok'`, stepTimeout),
		)
		if msg := textOf(t, buyer, `[data-testid="party-status"]`); msg != "Saved: you wait for 2 seats." {
			t.Errorf("after saving the party size the page says %q, want it saved for 2 seats", msg)
		}
		if got := textOf(t, buyer, `[data-testid="status"]`); !strings.Contains(got, "Connected") {
			t.Errorf("connection line on the waitlist = %q, want it connected", got)
		}

		// In Korean too.
		step(t, buyer, "switch to Korean", chromedp.Click(chromedp.ID("lang-switch")))
		if h, p := textOf(t, buyer, "#waitlist-heading"), textOf(t, buyer, `[data-testid="waitlist-place"]`); strings.TrimSpace(h) != "지금은 매진입니다" || p != "대기자 명단 순번: 1명 중 1번째" {
			t.Errorf("waitlist in Korean: heading %q, place %q", h, p)
		}
		checkA11y(t, buyer, "the waitlist view in Korean")
		step(t, buyer, "back to English", chromedp.Click(chromedp.ID("lang-switch")))

		// The control room: the waitlist on, one on it.
		step(t, admin, "sign in to the control room",
			chromedp.Navigate(srv.URL+"/admin#"+id),
			chromedp.WaitVisible(chromedp.ID("admin-key")),
			chromedp.SendKeys(chromedp.ID("admin-key"), apptest.AdminKey),
			chromedp.Click(chromedp.ID("login-submit")),
			chromedp.WaitVisible(chromedp.ID("view-console")),
			adminFigure("current-waitlist", "true"),
			shown(`[data-testid="waitlist-figures"]`),
			adminFigure("wl-length", "1"),
			adminFigure("wl-offers_out", "0"),
		)
		if label := textOf(t, admin, `[data-testid="waitlist-toggle"]`); label != "Turn the waitlist off" {
			t.Errorf("waitlist toggle = %q, want \"Turn the waitlist off\"", label)
		}
		if !isHidden(t, admin, `[data-testid="notify-figures"]`) || isHidden(t, admin, `[data-testid="notify-off"]`) {
			t.Error("the control room shows e-mail figures on a server that sends no e-mail, or does not say it sends none")
		}

		// The order is cancelled: its seats come back and are offered to the browser, with a countdown.
		if status := srv.Admin(t, http.MethodPost, "/orders/"+code+"/cancel", nil, nil); status != http.StatusOK {
			t.Fatalf("cancel order %s: %d, want 200", code, status)
		}
		step(t, buyer, "the offer", shown(`[data-testid="admitted"][data-offer="true"]`),
			chromedp.WaitVisible(chromedp.CSS(`#view-admitted [data-seat]:not([disabled])`)))
		type offerView struct {
			Heading, Timer, TimerRole, TimerName, Note string
			Seats                                      int
		}
		ov := value(t, buyer, "offer view", chromedp.Evaluate[offerView](`(() => {
			const q = (s) => document.querySelector(s);
			const timer = q('#timer');
			return {Heading: q('#admitted-heading').textContent, Timer: timer.textContent, TimerRole: timer.getAttribute('role'),
				TimerName: document.getElementById(timer.getAttribute('aria-labelledby')).textContent,
				Note: q('[data-testid="offer-text"]').textContent,
				Seats: document.querySelectorAll('#view-admitted [data-seat]:not([disabled])').length};
		})()`))
		if !strings.HasPrefix(ov.Heading, "Seats came back: you may book") || !countdownText.MatchString(ov.Timer) || ov.Timer == "00:00" ||
			ov.TimerRole != "timer" || ov.TimerName != "Time left to take the offer" || !strings.Contains(ov.Note, "next in line") || ov.Seats != 2 {
			t.Errorf("offer view = %+v, want the seats came back, a named timer counting down, the two seats free", ov)
		}
		first := ov.Timer
		step(t, buyer, "the countdown runs", until(fmt.Sprintf(`document.querySelector('#timer').textContent !== %q`, first), 5*time.Second))
		step(t, admin, "an offer out", adminFigure("wl-offers_out", "1"))
		screenshot(t, buyer, "waitlist-offer.png")
		checkA11y(t, buyer, "the offer view")

		// Book the seats offered, pay, and reach the ticket.
		step(t, buyer, "reserve the seats offered",
			chromedp.Click(chromedp.CSS(`[data-seat="A1"]`)),
			chromedp.Click(chromedp.CSS(`[data-seat="A2"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="reserve"][aria-disabled="false"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"][data-status="held"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout-link"]`)),
		)
		checkout := value(t, buyer, "checkout link", chromedp.Evaluate[string](`document.querySelector('[data-testid="checkout-link"]').href`))
		step(t, buyer, "pay",
			chromedp.Navigate(checkout),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="pay"]`)),
		)
		afterNavigation(t, buyer, "the ticket", chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="confirmed"]`)))
		if seats := textOf(t, buyer, `[data-testid="seats"]`); !strings.Contains(seats, "A1") || !strings.Contains(seats, "A2") {
			t.Errorf("ticket seats = %q, want A1 and A2", seats)
		}
		step(t, admin, "the offer taken", adminFigure("wl-offers_taken", "1"), adminFigure("wl-offers_out", "0"))
		screenshot(t, admin, "waitlist-control-room.png")

		// The operator turns the waitlist off.
		step(t, admin, "turn the waitlist off",
			chromedp.Click(chromedp.CSS(`[data-testid="waitlist-toggle"]`)),
			adminFigure("current-waitlist", "false"),
			until(`document.querySelector('[data-testid="waitlist-toggle"]').textContent === 'Turn the waitlist on'`, stepTimeout),
		)
		var s struct {
			Waitlist bool `json:"waitlist"` // absent when false
		}
		if srv.Admin(t, http.MethodGet, "/screenings/"+id, nil, &s); s.Waitlist {
			t.Errorf("screening %s after turning its waitlist off in the control room: waitlist still on", id)
		}
		checkA11y(t, admin, "the control room's waitlist panel")
	})
}

// TestWaitlistBrowserHidesTheEmailFieldWithoutMail: on a server that sends no e-mail (notify false), the
// page offers no e-mail notice in the line or on the waitlist; a link from an e-mail it does not know is
// refused in words, leaves the address bar, and connects nothing until the buyer asks to join.
func TestWaitlistBrowserHidesTheEmailFieldWithoutMail(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, waitlistSettings())
		const id = "wl1"
		smallHouse(t, srv, id, 1)
		// The unknown link is a 404 on purpose.
		tab := newTab(t, path, networkStatus(http.StatusNotFound))

		var info struct {
			Notify   bool `json:"notify"`
			Waitlist bool `json:"waitlist"`
		}
		if srv.GetJSON(t, "/api/screenings/"+id, &info); info.Notify || !info.Waitlist {
			t.Fatalf("GET /api/screenings/%s on a server without mail = %+v, want no notify, the waitlist on", id, info)
		}

		// A link the server does not know: said in words, the claim gone from the address, no socket.
		step(t, tab, "open a link that is not known",
			chromedp.Navigate(srv.URL+"/s/"+id+"?claim=not-a-claim-of-this-server"),
			shown(`[data-testid="final"][data-kind="link_unknown"]`),
		)
		type linkView struct{ Title, Rejoin, Search string }
		lv := value(t, tab, "refused link", chromedp.Evaluate[linkView](`({Title: document.querySelector('#final-title').textContent,
			Rejoin: document.querySelector('#rejoin').textContent, Search: location.search})`))
		if lv.Title != "This link is not valid" || lv.Rejoin != "Join the line" || lv.Search != "" {
			t.Errorf("refused link = %+v, want it said, \"Join the line\" offered and the claim out of the address", lv)
		}
		if got := textOf(t, tab, `[data-testid="status"]`); !isHidden(t, tab, `[data-testid="status"]`) {
			t.Errorf("after a refused link the connection line shows %q, want no connection made", got)
		}
		checkA11y(t, tab, "a refused link")

		// Joining: the line, with no e-mail field.
		pass, _ := admittedPass(t, srv, id)
		step(t, tab, "join the line",
			chromedp.Click(chromedp.ID("rejoin")),
			until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout),
		)
		if !isHidden(t, tab, `[data-testid="notify"]`) {
			t.Error("the e-mail notice is shown in the line on a server that sends no e-mail")
		}

		// Sold out: the waitlist, with no e-mail field either.
		pay(t, srv, id, holdAll(t, srv, id, pass, "A1"))
		step(t, tab, "the waitlist", shown(`[data-testid="waitlist"]`))
		if !isHidden(t, tab, `[data-testid="notify"]`) {
			t.Error("the e-mail notice is shown on the waitlist on a server that sends no e-mail")
		}
	})
}

// TestWaitlistBrowserMailsTheOfferAndItsLinkBringsThePlaceBack: on a server that sends e-mail (Mailpit), the
// page offers the e-mail field in the line and on the waitlist; a buyer leaves an address and closes the
// page; a seat comes back and the offer is mailed; the e-mail's link opens the room on the offer, the claim
// out of the address bar and the token never in a URL. Clicked again, the link is refused in words, and
// the button there leads back to the place this browser keeps.
func TestWaitlistBrowserMailsTheOfferAndItsLinkBringsThePlaceBack(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		const publicURL = "https://tickets.example.com"
		settings := waitlistSettings()
		settings["WAITROOM_NOTIFY_SMTP_URL"] = mp.URL("smtp+insecure")
		settings["WAITROOM_NOTIFY_FROM"] = "Box office <tickets@example.com>"
		settings["WAITROOM_NOTIFY_PUBLIC_URL"] = publicURL
		srv := apptest.Start(t, env, settings)
		const id = "wlmail"
		smallHouse(t, srv, id, 1)
		// The link clicked twice is a 410 on purpose.
		tab := newTab(t, path, networkStatus(http.StatusGone))

		// In line, with the e-mail field; an address left.
		pass, _ := admittedPass(t, srv, id)
		step(t, tab, "join the line",
			chromedp.Navigate(srv.URL+"/s/"+id),
			until(`document.querySelector('[data-testid="rank"]').dataset.rank === '1'`, stepTimeout),
			shown(`[data-testid="notify-form"]`),
		)
		if name := accessibleName(t, tab, `[data-testid="notify-email"]`); name != "Notify me by e-mail when it is my turn" {
			t.Errorf("the e-mail field is named %q, want \"Notify me by e-mail when it is my turn\"", name)
		}
		checkA11y(t, tab, "the e-mail field in the line")
		step(t, tab, "leave an address",
			fill(`[data-testid="notify-email"]`, "ann@example.com"),
			chromedp.Click(chromedp.CSS(`[data-testid="notify-submit"]`)),
			shown(`[data-testid="notify-set"]`),
		)
		if said := textOf(t, tab, `[data-testid="notify-address"]`); !strings.HasPrefix(said, "We will e-mail a") || !strings.Contains(said, "***@example.com") {
			t.Errorf("after leaving an address the page says %q, want the masked address", said)
		}

		// Sold out: on the waitlist, the address still there.
		pay(t, srv, id, holdAll(t, srv, id, pass, "A1"))
		step(t, tab, "the waitlist", shown(`[data-testid="waitlist"]`), shown(`[data-testid="notify-set"]`))
		token := value(t, tab, "the token kept", chromedp.Evaluate[string](fmt.Sprintf(`JSON.parse(localStorage.getItem('waitroom:room:%s') || '{}').token || ''`, id)))
		checkA11y(t, tab, "the waitlist with an address left")

		// The buyer closes the page; the seat comes back, and the offer goes by e-mail.
		// (The browser keeps the page in its back-forward cache: the page lets its socket go on pagehide.)
		step(t, tab, "close the page", chromedp.Navigate("about:blank"))
		waitSockets(t, srv, id, 1) // the buyer ahead's, still open
		var sold struct {
			Orders []order `json:"orders"`
		}
		if status := srv.Admin(t, http.MethodGet, "/screenings/"+id+"/orders?status=confirmed", nil, &sold); status != http.StatusOK || len(sold.Orders) != 1 {
			t.Fatalf("confirmed orders of %s: %d %+v, want one", id, status, sold.Orders)
		}
		if status := srv.Admin(t, http.MethodPost, "/orders/"+sold.Orders[0].Code+"/cancel", nil, nil); status != http.StatusOK {
			t.Fatalf("cancel order %s: %d, want 200", sold.Orders[0].Code, status)
		}
		mails := mp.WaitMails(t, 1, stepTimeout)
		if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0].Address != "ann@example.com" || strings.Contains(mails[0].Text, token) {
			t.Fatalf("e-mails = %+v, want one to ann@example.com, without the token", mails)
		}
		link := regexp.MustCompile(regexp.QuoteMeta(publicURL) + `/s/` + id + `\?claim=[A-Za-z0-9_-]+`).FindString(mails[0].Text)
		if link == "" {
			t.Fatalf("no link back to the room in the e-mail:\n%s", mails[0].Text)
		}
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		local := srv.URL + u.RequestURI() // the server's public address stands for this test's

		// The link: the room on the offer, the claim gone from the address.
		step(t, tab, "open the e-mail's link", chromedp.Navigate(local), shown(`[data-testid="admitted"][data-offer="true"]`))
		type opened struct{ Search, Token, Heading string }
		got := value(t, tab, "the room opened by the link", chromedp.Evaluate[opened](fmt.Sprintf(`({Search: location.search,
			Token: JSON.parse(localStorage.getItem('waitroom:room:%s') || '{}').token || '',
			Heading: document.querySelector('#admitted-heading').textContent})`, id)))
		if got.Search != "" || got.Token != token || got.Heading != "Seats came back: you may book 1 seat" {
			t.Errorf("the room opened by the e-mail's link = %+v, want no claim in the address, the place's token %s kept, the offer of 1 seat", got, token)
		}
		checkA11y(t, tab, "the offer opened by the e-mail's link")

		// Clicked again: refused in words; the button goes back to the place kept here.
		step(t, tab, "the link again", chromedp.Navigate(local), shown(`[data-testid="final"][data-kind="link_used"]`))
		if text, button := textOf(t, tab, "#final-text"), textOf(t, tab, "#rejoin"); !strings.HasPrefix(text, "This link was already used.") || button != "Back to my place" {
			t.Errorf("the link clicked again: %q, button %q; want it said used, and the way back to the place", text, button)
		}
		checkA11y(t, tab, "the link clicked again")
		step(t, tab, "back to the place", chromedp.Click(chromedp.ID("rejoin")), shown(`[data-testid="admitted"][data-offer="true"]`))
	})
}
