// Times as the pages write them: one format per language with the time zone, the same on the room, the
// checkout and the ticket, and one countdown format.

package browser

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

// inTimeZone makes the tab's clock that of zone, an IANA name.
func inTimeZone(zone string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	})
}

// countdownFormat is the one countdown of every page: mm:ss, h:mm:ss from an hour up.
var countdownFormat = regexp.MustCompile(`^(\d+:)?\d\d:\d\d$`)

// TestBrowserTimesReadTheSameEverywhere: a buyer in Seoul holds a seat; the room, the checkout and the
// ticket give the hold's end in the same words, with the time zone, and the screening's start with it too;
// the room and the checkout count down in the same format.
func TestBrowserTimesReadTheSameEverywhere(t *testing.T) {
	path := chromium(t)
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		srv := apptest.Start(t, env, holdSettings())
		tab := newTab(t, path)
		// Not the machine's zone (UTC here), so a page that leaves the zone out cannot pass by chance.
		const zone = "GMT+9"
		step(t, tab, "a buyer in Seoul", inTimeZone("Asia/Seoul"))
		openAdmitted(t, tab, srv, "demo")
		step(t, tab, "hold A1",
			chromedp.Click(chromedp.CSS(`[data-seat="A1"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="reserve"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="confirmation"][data-status="held"]`)),
		)
		type roomView struct{ Heading, Text, Timer, For, Code string }
		room := value(t, tab, "the room's hold", chromedp.Evaluate[roomView](`(() => {
			const q = (s) => document.querySelector(s);
			return {
				Heading: q('#confirmed-title').textContent, Text: q('[data-testid="hold-text"]').textContent,
				Timer: q('[data-testid="hold-timer"]').textContent, For: q('#confirmed-for').textContent,
				Code: (JSON.parse(localStorage.getItem('waitroom:room:demo') || '{}').reservation || {}).code || '',
			};
		})()`))
		until, ok := strings.CutPrefix(room.Heading, "Seats held — pay before ")
		if !ok || !strings.HasSuffix(until, " "+zone) || !strings.Contains(room.Text, until) {
			t.Fatalf("the room's hold = %+v, want \"Seats held — pay before {time} %s\" and the same time in its text", room, zone)
		}
		if !countdownFormat.MatchString(room.Timer) {
			t.Errorf("the room's countdown = %q, want mm:ss", room.Timer)
		}
		if !strings.HasSuffix(room.For, zone) {
			t.Errorf("the room's booking is for %q, want the start with its zone %s", room.For, zone)
		}

		step(t, tab, "the checkout", chromedp.Navigate(srv.URL+"/checkout/"+room.Code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="checkout"][data-status="held"]`)))
		type pageView struct{ Hold, Timer, Starts string }
		checkout := value(t, tab, "the checkout's times", chromedp.Evaluate[pageView](`({
			Hold: document.querySelector('#f-hold').textContent,
			Timer: document.querySelector('[data-testid="countdown"]').textContent,
			Starts: document.querySelector('#order-starts').textContent,
		})`))
		if checkout.Hold != until {
			t.Errorf("the checkout holds until %q, the room said %q: want the same words", checkout.Hold, until)
		}
		if !countdownFormat.MatchString(checkout.Timer) {
			t.Errorf("the checkout's countdown = %q, want mm:ss as the room's (%q)", checkout.Timer, room.Timer)
		}
		if !strings.HasSuffix(checkout.Starts, zone) {
			t.Errorf("the checkout's start = %q, want it with its zone %s", checkout.Starts, zone)
		}
		checkA11y(t, tab, "the checkout with its times")

		step(t, tab, "the ticket page", chromedp.Navigate(srv.URL+"/t/"+room.Code),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="ticket"][data-status="held"]`)))
		ticket := value(t, tab, "the ticket's times", chromedp.Evaluate[pageView](`({
			Hold: document.querySelector('#f-hold').textContent,
			Starts: document.querySelector('#ticket-starts').textContent,
		})`))
		if ticket.Hold != until || !strings.HasSuffix(ticket.Starts, zone) {
			t.Errorf("the ticket page = %+v, want held until %q and the start with its zone %s", ticket, until, zone)
		}
	})
}
