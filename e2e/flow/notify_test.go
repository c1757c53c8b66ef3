// E-mail for buyers who left the page, against a real SMTP server (Mailpit): an offer to a buyer with no
// socket open sends one e-mail, in the buyer's language, whose one-time link gives the place back; a buyer
// with a socket open gets none.

package flow

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/app/apptest"
	"github.com/waitroom/waitroom/testenv"
)

func TestAnOfferToABuyerWhoLeftThePageIsMailedOnceWithALinkBackToThePlace(t *testing.T) {
	mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
	env := testenv.New(t, testenv.Real)
	env.Demo(t, "mail", 1, 2)
	settings := map[string]string{
		"WAITROOM_ADMISSION_INTERVAL":   "200ms",
		"WAITROOM_ADMISSION_BATCH_SIZE": "10",
		"WAITROOM_ADMISSION_MAX_ACTIVE": "100",
		"WAITROOM_BOOKING_CHECKOUT":     "hold",
		"WAITROOM_BOOKING_HOLD_TTL":     "1h",
		"WAITROOM_BOOKING_WAITLIST":     "true",
		"WAITROOM_ADMIN_KEY":            apptest.AdminKey,
		"WAITROOM_BOOKING_CHECKOUT_URL": "https://shop.example/pay?order={code}",
		"WAITROOM_DEMO_ENABLED":         "false",
		"WAITROOM_NOTIFY_SMTP_URL":      mp.URL("smtp+insecure"),
		"WAITROOM_NOTIFY_FROM":          "Box office <tickets@example.com>",
		"WAITROOM_NOTIFY_PUBLIC_URL":    "https://tickets.example.com",
	}
	a, b := apptest.Start(t, env, settings), apptest.Start(t, env, settings)
	var screening struct{ Notify, Waitlist bool }
	if a.GetJSON(t, "/api/screenings/mail", &screening); !screening.Notify || !screening.Waitlist {
		t.Fatalf("the screening says notify %v, waitlist %v; want both", screening.Notify, screening.Waitlist)
	}
	// Both seats are held.
	var codes []string
	for _, srv := range []*apptest.Server{a, b} {
		_, p := admitted(t, srv, "mail")
		code, o := srv.ReserveCount(t, "mail", p, 1)
		if code != http.StatusCreated {
			t.Fatalf("hold = %d %v", code, o)
		}
		codes = append(codes, o["code"].(string))
	}
	// Two wait and leave an address each; the first, in Korean, closes the page.
	gone := a.Dial(t, "mail", "")
	first, _ := gone.Until(t, "queued", 5*time.Second)
	stays := b.Dial(t, "mail", "")
	second, _ := stays.Until(t, "queued", 5*time.Second)
	for _, sub := range []struct{ token, email, lang string }{{first.Token, "gone@example.com", "ko"}, {second.Token, "stays@example.com", "en"}} {
		var out map[string]any
		if st := a.Put(t, "/api/screenings/mail/notify", map[string]string{"token": sub.token, "email": sub.email, "lang": sub.lang}, &out); st != http.StatusOK {
			t.Fatalf("notify %s = %d %v", sub.email, st, out)
		}
	}
	// Bad input changes nothing: a malformed address, a token not in line.
	for _, bad := range []struct {
		body map[string]string
		code string
	}{
		{map[string]string{"token": first.Token, "email": "not an address", "lang": "en"}, "INVALID_EMAIL"},
		{map[string]string{"token": "0123456789abcdef0123456789abcdef", "email": "x@example.com", "lang": "en"}, "NOT_IN_LINE"},
	} {
		var out map[string]any
		if st := b.Put(t, "/api/screenings/mail/notify", bad.body, &out); st < 400 || apptest.ErrorCode(out) != bad.code {
			t.Errorf("notify %v = %d %v, want %s", bad.body, st, out, bad.code)
		}
	}
	gone.Close()
	// A seat comes back: the first is offered it, with no socket open: one e-mail, in Korean.
	var out map[string]any
	if st := a.Admin(t, http.MethodPost, "/orders/"+codes[0]+"/cancel", nil, &out); st != http.StatusOK {
		t.Fatalf("cancel = %d %v", st, out)
	}
	mp.WaitMails(t, 1, 20*time.Second)
	// The second seat comes back to the second, whose socket is open: it is told there, and not mailed.
	if st := b.Admin(t, http.MethodPost, "/orders/"+codes[1]+"/cancel", nil, &out); st != http.StatusOK {
		t.Fatalf("cancel = %d %v", st, out)
	}
	if m, _ := stays.Until(t, "offered", 10*time.Second); m.SeatCount() != 1 {
		t.Fatalf("the second's offer = %+v", m)
	}
	// Nothing can be awaited for an e-mail that must not come: the first one took well under this.
	time.Sleep(2 * time.Second)
	mails := mp.Mails(t)
	if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0].Address != "gone@example.com" {
		t.Fatalf("e-mails = %+v; want exactly one, to the buyer who left", mails)
	}
	text := mails[0].Text
	if strings.Contains(text, first.Token) || !strings.ContainsAny(mails[0].Subject+text, "좌석차례") {
		t.Fatalf("the e-mail (subject %q) carries the token or is not in Korean:\n%s", mails[0].Subject, text)
	}
	link := regexp.MustCompile(`https://tickets\.example\.com/s/mail\?claim=[A-Za-z0-9_-]+`).FindString(text)
	if link == "" {
		t.Fatalf("no link back to the room in:\n%s", text)
	}
	u, _ := url.Parse(link)
	claim := u.Query().Get("claim")
	// The link gives the place back once: the token, and on the socket the offer that waits for it.
	var got struct{ Screening, Token string }
	if st := b.PostJSON(t, "/api/notify/claim", map[string]string{"claim": claim}, &got); st != http.StatusOK || got.Token != first.Token || got.Screening != "mail" {
		t.Fatalf("claim = %d %+v, want the first's token", st, got)
	}
	back := a.Dial(t, "mail", got.Token)
	if m := back.Next(t, 5*time.Second); m.Type != "offered" || m.SeatCount() != 1 {
		t.Fatalf("the place opened by the link got %+v, want its offer", m)
	}
	var refused map[string]any
	if st := a.PostJSON(t, "/api/notify/claim", map[string]string{"claim": claim}, &refused); st != http.StatusGone || apptest.ErrorCode(refused) != "LINK_USED" {
		t.Fatalf("a second click = %d %v, want 410 LINK_USED", st, refused)
	}
	if st := a.PostJSON(t, "/api/notify/claim", map[string]string{"claim": claim + "x"}, &refused); st != http.StatusNotFound || apptest.ErrorCode(refused) != "LINK_UNKNOWN" {
		t.Fatalf("a forged link = %d %v, want 404 LINK_UNKNOWN", st, refused)
	}
}
