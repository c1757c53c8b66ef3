// The deliverer's promises, against a real Mailpit: one e-mail per notice and token, in the buyer's
// language, with a link and nothing else of the place; never twice, from one instance or two; retried
// with back-off while the server is down and sent when it is back; given up after the last attempt; at
// most per_address e-mails to one address an hour, the rest waiting; TLS when the URL asks for it.

package notify_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/testenv"
)

func TestOneEmailPerNoticeInTheBuyersLanguage(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		c := &clock{}
		svc := newService(t, env.DB, fast(mp, c))
		id, name := screening(t, env)
		en := subscribed(t, svc, id, "Ann@Buyer.Example", "en")
		ko := subscribed(t, svc, id, "minji@buyer.example", "ko")
		deadline := c.Now().Add(10 * time.Minute).Truncate(time.Minute)
		offer := notify.Notice{Screening: id, Kind: notify.Offer, DedupKey: "offer:" + id + ":1",
			Tokens: []string{en, ko, "0123456789abcdef0123456789abcdef"}, Deadline: deadline}
		if n := due(t, svc, offer); n != 2 {
			t.Fatalf("Due = %d, want 2 (the token without an address gets none)", n)
		}
		if n := due(t, svc, offer); n != 0 {
			t.Errorf("Due again with the same key = %d, want 0", n)
		}
		svc.run(t)
		mails := mp.WaitMails(t, 2, 10*time.Second)
		eventually(t, 5*time.Second, func() bool {
			rows := outbox(t, env.DB, id)
			return len(rows) == 2 && rows[1].State == "sent" && rows[0].State == "sent"
		},
			func() string { return fmt.Sprintf("outbox = %+v, want both sent", outbox(t, env.DB, id)) })

		english := to(mails, "ann@buyer.example")
		korean := to(mails, "minji@buyer.example")
		if len(english) != 1 || len(korean) != 1 || len(mails) != 2 {
			t.Fatalf("got %d e-mails (%d to ann, %d to minji), want one each", len(mails), len(english), len(korean))
		}
		if want := "Your turn: seats for " + name + " are yours to book"; english[0].Subject != want {
			t.Errorf("English subject = %q, want %q", english[0].Subject, want)
		}
		if want := "차례가 되었습니다: " + name + " 좌석을 지금 예매하실 수 있습니다"; korean[0].Subject != want {
			t.Errorf("Korean subject = %q, want %q", korean[0].Subject, want)
		}
		if !strings.Contains(english[0].Text, "The offer holds until "+deadline.UTC().Format("Mon 2 Jan 2006, 15:04 UTC")) {
			t.Errorf("the English e-mail does not give the deadline in UTC:\n%s", english[0].Text)
		}
		kst := deadline.In(time.FixedZone("KST", 9*3600)).Format("2006년 1월 2일 15:04")
		if !strings.Contains(korean[0].Text, "이 기회는 "+kst+" (한국 시간)까지 유효합니다.") {
			t.Errorf("the Korean e-mail does not give the deadline in Korea's time (%s):\n%s", kst, korean[0].Text)
		}
		nonces := map[string]bool{}
		for _, m := range mails {
			if m.From.Address != "tickets@tickets.example" || m.From.Name != "Waitroom" {
				t.Errorf("From = %+v, want Waitroom <tickets@tickets.example>", m.From)
			}
			screening, nonce := link(t, m)
			if screening != id {
				t.Errorf("the link opens screening %q, want %q", screening, id)
			}
			nonces[nonce] = true
			for _, tok := range []string{en, ko} {
				if strings.Contains(m.Text, tok) || strings.Contains(m.MessageID, tok) {
					t.Errorf("an e-mail carries a queue token:\n%s", m.Text)
				}
			}
		}
		if len(nonces) != 2 {
			t.Errorf("the two e-mails carry %d distinct links, want 2", len(nonces))
		}
		for _, r := range outbox(t, env.DB, id) {
			if r.Nonce != nil {
				t.Errorf("a sent e-mail's row still holds its nonce")
			}
		}

		// The same notice from another instance, later: still one e-mail each.
		other := newService(t, env.DB, fast(mp, c))
		if n := due(t, other, offer); n != 0 {
			t.Errorf("Due on another instance with the same key = %d, want 0", n)
		}
		if n := svc.poll(t); n != 0 {
			t.Errorf("a poll after the sends claimed %d e-mails, want none", n)
		}
		if got := len(mp.Mails(t)); got != 2 {
			t.Errorf("Mailpit holds %d e-mails, want 2", got)
		}
		if n := int(testutil.ToFloat64(svc.metrics.Sent)); n != 2 {
			t.Errorf("waitroom_notify_sent_total = %d, want 2", n)
		}
		counts, err := svc.Counts(t.Context(), id)
		if err != nil || counts != (notify.Counts{Addresses: 2, Sent: 2}) {
			t.Errorf("Counts = %+v, %v; want 2 addresses, 2 sent", counts, err)
		}
	})
}

func TestAnAdmissionSaysSoAndNamesNoDeadlineUnlessGiven(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		svc := newService(t, env.DB, fast(mp, &clock{}))
		id, name := screening(t, env)
		tok := subscribed(t, svc, id, "ann@buyer.example", "en")
		due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id + ":7", Tokens: []string{tok}})
		svc.poll(t)
		mails := mp.WaitMails(t, 1, 5*time.Second)
		text := mails[0].Text
		if !strings.Contains(text, "It is your turn in the line for "+name) || strings.Contains(text, "holds until") {
			t.Errorf("the admission's e-mail reads:\n%s\nwant the line's words and no deadline", text)
		}
		if !strings.Contains(text, "The link opens once, until ") {
			t.Errorf("the e-mail does not say how long its link opens:\n%s", text)
		}
	})
}

// Two instances on one database, each with its own pool, both running: every e-mail is sent once.
func TestTwoInstancesSendEachEmailOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		c := &clock{}
		s := fast(mp, c)
		s.PerAddress = 1000
		a := newService(t, env.DB, s)
		db2, err := booking.Open(context.Background(), env.DatabaseURL, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db2.Close() })
		b := newService(t, db2, s)
		id, _ := screening(t, env)
		const n = 30
		tokens := make([]string, n)
		for i := range tokens {
			tokens[i] = subscribed(t, a, id, fmt.Sprintf("buyer%d@buyer.example", i), "en")
		}
		a.run(t)
		b.run(t)
		var wg sync.WaitGroup
		for _, svc := range []*service{a, b} {
			wg.Go(func() {
				if _, err := svc.Due(context.Background(), notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: tokens}); err != nil {
					t.Errorf("Due: %v", err)
				}
			})
		}
		wg.Wait()
		mp.WaitMails(t, n, 20*time.Second)
		eventually(t, 10*time.Second, func() bool {
			counts, err := a.Counts(t.Context(), id)
			return err == nil && counts.Sent == n
		}, func() string { c, _ := a.Counts(t.Context(), id); return fmt.Sprintf("counts %+v, want %d sent", c, n) })
		mails := mp.Mails(t)
		byRecipient := map[string]int{}
		for _, m := range mails {
			byRecipient[m.To[0].Address]++
		}
		if len(mails) != n || len(byRecipient) != n {
			t.Errorf("Mailpit took %d e-mails for %d recipients, want %d and %d: %v", len(mails), len(byRecipient), n, n, byRecipient)
		}
		if sent := a.attempts("sent") + b.attempts("sent"); sent != n {
			t.Errorf("the instances sent %d e-mails between them, want %d", sent, n)
		}
	})
}

// The server down (nothing listens): each attempt fails and is tried again later, until the server is
// back and takes it.
func TestRetriedWithBackOffWhileTheServerIsDownThenSent(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		mp.Stop()
		svc := newService(t, env.DB, fast(mp, &clock{}))
		id, _ := screening(t, env)
		tok := subscribed(t, svc, id, "ann@buyer.example", "en")
		due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: []string{tok}})
		svc.run(t)
		eventually(t, 10*time.Second, func() bool { return svc.attempts("failed_attempt") >= 3 },
			func() string { return fmt.Sprintf("%d failed attempts, want 3", svc.attempts("failed_attempt")) })
		r := outbox(t, env.DB, id)[0]
		if r.State != "pending" || r.Nonce == nil || r.LastError == nil || *r.LastError == "" {
			t.Errorf("while the server is down the row is %+v, want pending, its nonce kept, the last error said", r)
		}
		mp.Start()
		mails := mp.WaitMails(t, 1, 10*time.Second)
		eventually(t, 5*time.Second, func() bool { return outbox(t, env.DB, id)[0].State == "sent" },
			func() string { return fmt.Sprintf("row = %+v, want sent", outbox(t, env.DB, id)[0]) })
		if len(mails) != 1 {
			t.Errorf("Mailpit took %d e-mails, want 1", len(mails))
		}
		if got := svc.attempts("sent"); got != 1 {
			t.Errorf("attempts_total{outcome=sent} = %d, want 1", got)
		}
	})
}

func TestGivenUpAfterTheLastAttempt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		mp.Stop()
		s := fast(mp, &clock{})
		s.MaxAttempts = 3
		svc := newService(t, env.DB, s)
		id, _ := screening(t, env)
		tok := subscribed(t, svc, id, "ann@buyer.example", "en")
		due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: []string{tok}})
		svc.run(t)
		eventually(t, 10*time.Second, func() bool { return outbox(t, env.DB, id)[0].State == "failed" },
			func() string { return fmt.Sprintf("row = %+v, want failed", outbox(t, env.DB, id)[0]) })
		r := outbox(t, env.DB, id)[0]
		if r.Attempts != 3 || r.Nonce != nil {
			t.Errorf("given up row = %+v, want 3 attempts and its nonce blanked", r)
		}
		if n := int(testutil.ToFloat64(svc.metrics.Failed)); n != 1 {
			t.Errorf("waitroom_notify_failed_total = %d, want 1", n)
		}
		if !strings.Contains(svc.log.String(), "notify: given up") {
			t.Errorf("nothing logged of the e-mail given up:\n%s", svc.log.String())
		}
	})
}

// Three e-mails to one address with per_address 2: two go, the third waits for the hour to free a place,
// and then goes, its link still good for link_ttl from then.
func TestPerAddressLimitHoldsAndTheRestWait(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		c := &clock{}
		s := fast(mp, c)
		s.PerAddress = 2
		svc := newService(t, env.DB, s)
		id, _ := screening(t, env)
		var tokens []string
		for range 3 {
			tokens = append(tokens, subscribed(t, svc, id, "ann@buyer.example", "en"))
		}
		other := subscribed(t, svc, id, "bo@buyer.example", "en")
		due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: append(tokens, other)})
		for range 3 {
			svc.poll(t)
		}
		mails := mp.Mails(t)
		if got := len(to(mails, "ann@buyer.example")); got != 2 {
			t.Errorf("ann got %d e-mails in the hour, want 2", got)
		}
		if got := len(to(mails, "bo@buyer.example")); got != 1 {
			t.Errorf("bo got %d e-mails, want 1 (the limit is per address)", got)
		}
		counts, _ := svc.Counts(t.Context(), id)
		if counts.Pending != 1 || counts.Failed != 0 {
			t.Errorf("counts = %+v, want the third e-mail pending, not dropped", counts)
		}
		if n := int(testutil.ToFloat64(svc.metrics.Deferred)); n < 1 {
			t.Errorf("waitroom_notify_deferred_total = %d, want at least 1", n)
		}

		c.Advance(time.Hour + time.Second)
		svc.poll(t)
		mails = mp.WaitMails(t, 4, 5*time.Second)
		if got := len(to(mails, "ann@buyer.example")); got != 3 {
			t.Fatalf("ann got %d e-mails once the hour passed, want 3", got)
		}
		// The links sent an hour ago have expired; the one that waited is good for link_ttl from its sending.
		opened, expired := 0, 0
		for _, m := range to(mails, "ann@buyer.example") {
			_, nonce := link(t, m)
			switch _, _, err := svc.Claim(t.Context(), nonce); {
			case err == nil:
				opened++
			case errors.Is(err, notify.ErrLinkExpired):
				expired++
			default:
				t.Errorf("Claim of a link to ann: %v", err)
			}
		}
		if opened != 1 || expired != 2 {
			t.Errorf("of ann's links %d opened and %d had expired, want the one that waited to open and the two older expired", opened, expired)
		}
	})
}

// An offer whose deadline passed before its e-mail could be sent is given up, not sent.
func TestAnEmailPastItsDeadlineIsGivenUpUnsent(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		mp := testenv.StartMailpit(t, testenv.MailpitOptions{})
		c := &clock{}
		svc := newService(t, env.DB, fast(mp, c))
		id, _ := screening(t, env)
		tok := subscribed(t, svc, id, "ann@buyer.example", "en")
		due(t, svc, notify.Notice{Screening: id, Kind: notify.Offer, DedupKey: "offer:" + id, Tokens: []string{tok}, Deadline: c.Now().Add(time.Minute)})
		c.Advance(2 * time.Minute)
		svc.poll(t)
		r := outbox(t, env.DB, id)[0]
		if r.State != "failed" || r.Nonce != nil || r.LastError == nil || !strings.Contains(*r.LastError, "deadline") {
			t.Errorf("row = %+v, want failed for its deadline, its nonce blanked", r)
		}
		if n := len(mp.Mails(t)); n != 0 {
			t.Errorf("Mailpit took %d e-mails, want none", n)
		}
	})
}

// smtp:// requires STARTTLS and checks the certificate; smtps:// speaks TLS at once; neither sends in
// clear to a server that offers no TLS.
func TestTLSWhenTheURLAsksForIt(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	cases := []struct {
		name    string
		opts    testenv.MailpitOptions
		scheme  string
		trusted bool
		sent    bool
	}{
		{"smtp with STARTTLS", testenv.MailpitOptions{STARTTLS: true}, "smtp", true, true},
		{"smtps", testenv.MailpitOptions{ImplicitTLS: true}, "smtps", true, true},
		{"smtp to a server without STARTTLS", testenv.MailpitOptions{}, "smtp", true, false},
		{"smtps to a server without TLS", testenv.MailpitOptions{}, "smtps", true, false},
		{"smtp with an untrusted certificate", testenv.MailpitOptions{STARTTLS: true}, "smtp", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mp := testenv.StartMailpit(t, tc.opts)
			s := fast(mp, &clock{})
			s.SMTPURL = mp.URL(tc.scheme)
			s.SendTimeout = 2 * time.Second
			if tc.trusted && mp.RootCAs != nil {
				s.TLSConfig = &tls.Config{RootCAs: mp.RootCAs}
			}
			svc := newService(t, env.DB, s)
			id, _ := screening(t, env)
			tok := subscribed(t, svc, id, "ann@buyer.example", "en")
			due(t, svc, notify.Notice{Screening: id, Kind: notify.Admission, DedupKey: "admit:" + id, Tokens: []string{tok}})
			svc.poll(t)
			r := outbox(t, env.DB, id)[0]
			got := len(mp.Mails(t))
			if tc.sent && (r.State != "sent" || got != 1) {
				t.Errorf("row %+v, %d e-mails in Mailpit; want sent, 1 (last error: %v)", r, got, deref(r.LastError))
			}
			if !tc.sent && (r.State != "pending" || got != 0 || r.LastError == nil) {
				t.Errorf("row %+v, %d e-mails in Mailpit; want a failed attempt, nothing sent", r, got)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
