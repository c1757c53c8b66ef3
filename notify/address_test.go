// Addresses: only one plain address is kept, in a language the e-mails are written in; bad input keeps
// nothing; a token forgets its address and its e-mail not yet sent; an ended sale forgets them all.

package notify_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/testenv"
)

func TestParseEmailTakesOnlyOnePlainAddress(t *testing.T) {
	good := map[string]string{
		"a@b.example":                                "a@b.example",
		"Ann.Lee+seats@Mail.Example.co.kr":           "ann.lee+seats@mail.example.co.kr",
		"x@" + strings.Repeat("d", 240) + ".example": "x@" + strings.Repeat("d", 240) + ".example",
	}
	for in, want := range good {
		if got, err := notify.ParseEmail(in); err != nil || got != want {
			t.Errorf("ParseEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"", "a", "a@b", "a@localhost", "@b.example", "a@.example", "a@b.example.", "a@b..example", "a@[127.0.0.1]",
		"Ann <a@b.example>", "<a@b.example>", " a@b.example", "a@b.example ", "a@b.example, c@d.example",
		`"a b"@c.example`, "a@b.example (comment)", "a\n@b.example", "a@b.example\r\nBcc: c@d.example",
		"x@" + strings.Repeat("d", 250) + ".example", "a@@b.example", "\xff@b.example",
	} {
		if got, err := notify.ParseEmail(bad); !errors.Is(err, notify.ErrInvalidEmail) {
			t.Errorf("ParseEmail(%q) = %q, %v; want ErrInvalidEmail", bad, got, err)
		}
	}
}

// Whatever comes in, an address ParseEmail keeps is one net/mail reads back as itself, within bounds, with
// nothing that could break a header.
func FuzzParseEmail(f *testing.F) {
	for _, s := range []string{"a@b.example", "Ann <a@b.example>", "a@b", `"x"@y.example`, "a@b.example\r\nX: y", "한@b.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := notify.ParseEmail(s)
		if err != nil {
			return
		}
		if len(got) > notify.MaxEmailBytes || strings.ContainsAny(got, "\r\n<>, \"") || got != strings.ToLower(s) {
			t.Fatalf("ParseEmail(%q) = %q", s, got)
		}
		if again, err := notify.ParseEmail(got); err != nil || again != got {
			t.Fatalf("ParseEmail(ParseEmail(%q)) = %q, %v", s, again, err)
		}
	})
}

func TestMaskEmailShowsTheFirstCharacterAndTheDomain(t *testing.T) {
	for in, want := range map[string]string{"ann@b.example": "a***@b.example", "한글@b.example": "한***@b.example", "nonsense": "***"} {
		if got := notify.MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSubscribeRefusesBadInputAndKeepsNothing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		svc := newService(t, env.DB, fast(mp, &clock{}))
		id, _ := screening(t, env)
		token := ids.New()
		for _, tc := range []struct {
			email, lang string
			want        error
		}{
			{"Ann <a@b.example>", "en", notify.ErrInvalidEmail},
			{"a@b", "en", notify.ErrInvalidEmail},
			{"a@b.example", "fr", notify.ErrInvalidLang},
			{"a@b.example", "", notify.ErrInvalidLang},
			{"a@b.example", "EN", notify.ErrInvalidLang},
		} {
			if err := svc.Subscribe(t.Context(), id, token, tc.email, tc.lang); !errors.Is(err, tc.want) {
				t.Errorf("Subscribe(%q, %q) = %v, want %v", tc.email, tc.lang, err, tc.want)
			}
		}
		if ok, err := svc.Subscribed(t.Context(), id, token); ok || err != nil {
			t.Errorf("Subscribed after refusals = %v, %v; want false", ok, err)
		}
		off := newService(t, env.DB, notify.Settings{})
		if off.Enabled() {
			t.Errorf("a Service without an SMTP URL is enabled")
		}
		if err := off.Subscribe(t.Context(), id, token, "a@b.example", "en"); !errors.Is(err, notify.ErrOff) {
			t.Errorf("Subscribe with mail off = %v, want ErrOff", err)
		}
		if n, err := off.Due(t.Context(), notify.Notice{Screening: id, Kind: notify.Offer, DedupKey: "k", Tokens: []string{token}}); n != 0 || err != nil {
			t.Errorf("Due with mail off = %d, %v; want 0, nil", n, err)
		}
		var nilService *notify.Service
		if nilService.Enabled() {
			t.Errorf("a nil Service is enabled")
		}
	})
}

// A second Subscribe replaces the token's address; Unsubscribe forgets it and gives up its e-mail not yet
// sent, which is then never sent.
func TestUnsubscribeForgetsTheAddressAndItsUnsentEmail(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		svc := newService(t, env.DB, fast(mp, &clock{}))
		id, _ := screening(t, env)
		token := subscribed(t, svc, id, "old@buyer.example", "en")
		if err := svc.Subscribe(t.Context(), id, token, "new@buyer.example", "ko"); err != nil {
			t.Fatal(err)
		}
		if c, _ := svc.Counts(t.Context(), id); c.Addresses != 1 {
			t.Errorf("two Subscribes of one token keep %d addresses, want 1", c.Addresses)
		}
		due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: []string{token}})
		if err := svc.Unsubscribe(t.Context(), id, token); err != nil {
			t.Fatal(err)
		}
		if ok, _ := svc.Subscribed(t.Context(), id, token); ok {
			t.Errorf("Subscribed after Unsubscribe = true")
		}
		svc.poll(t)
		if n := len(mp.Mails(t)); n != 0 {
			t.Errorf("Mailpit took %d e-mails after the unsubscribe, want none", n)
		}
		if r := outbox(t, env.DB, id); len(r) != 1 || r[0].State != "failed" || r[0].Nonce != nil {
			t.Errorf("outbox = %+v, want the e-mail given up, its nonce blanked", r)
		}
		if err := svc.Unsubscribe(t.Context(), id, token); err != nil {
			t.Errorf("a second Unsubscribe = %v, want nil", err)
		}
	})
}

// Once a sale ends (closed, archived, or its show started) the sweep forgets its addresses and unused
// links, and gives up its e-mails not yet sent; an open sale keeps them. Forget does it at once.
func TestAnEndedSaleForgetsItsAddresses(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		c := &clock{}
		svc := newService(t, env.DB, fast(mp, c))
		closed, _ := screening(t, env)
		archived, _ := screening(t, env)
		open, _ := screening(t, env)
		forgotten, _ := screening(t, env)
		for _, id := range []string{closed, archived, open, forgotten} {
			tok := subscribed(t, svc, id, "ann@buyer.example", "en")
			subscribed(t, svc, id, "bo@buyer.example", "ko")
			due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: []string{tok}})
		}
		store := booking.NewStore(env.DB)
		if err := store.CloseSale(t.Context(), closed, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := env.DB.Exec(env.DB.Rebind(`UPDATE screenings SET archived_at = ? WHERE id = ?`), time.Now().UTC(), archived); err != nil {
			t.Fatal(err)
		}
		if err := svc.Forget(t.Context(), forgotten); err != nil {
			t.Fatal(err)
		}
		if err := svc.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]notify.Counts{
			closed: {Failed: 1}, archived: {Failed: 1}, forgotten: {Failed: 1}, open: {Addresses: 2, Pending: 1},
		} {
			if got, err := svc.Counts(t.Context(), id); err != nil || got != want {
				t.Errorf("Counts(%s) = %+v, %v; want %+v", id, got, err, want)
			}
			if n := len(links(t, env.DB, id)); (n == 0) != (want.Pending == 0) {
				t.Errorf("%s keeps %d unused links", id, n)
			}
		}
		// The show starts (an hour after the screenings were made): the open sale ends too.
		c.Advance(time.Hour + time.Minute)
		if err := svc.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, _ := svc.Counts(t.Context(), open); got != (notify.Counts{Failed: 1}) {
			t.Errorf("Counts after the show started = %+v, want the addresses gone and the e-mail given up", got)
		}
		// A day later the finished rows and the old links go too.
		c.Advance(25 * time.Hour)
		if err := svc.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{closed, archived, open, forgotten} {
			if got, _ := svc.Counts(t.Context(), id); got != (notify.Counts{}) {
				t.Errorf("Counts(%s) a day after = %+v, want nothing kept", id, got)
			}
		}
	})
}
