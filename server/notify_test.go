// The buyers' e-mail routes over a real store and a real Mailpit (only the line is a fake): an address kept
// for a token that holds a place and shown masked, forgotten; bad input refused with nothing stored; mail
// off; a mailed link claimed once, then refused as used, expired or unknown.

package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/ids"
	"github.com/waitroom/waitroom/notify"
	"github.com/waitroom/waitroom/testenv"
)

// fakeLines is the line as the routes ask it: the tokens holding a place, and those kept.
type fakeLines struct {
	mu    sync.Mutex
	holds map[string]bool // screening + "/" + token
	kept  map[string]bool
}

func newFakeLines() *fakeLines { return &fakeLines{holds: map[string]bool{}, kept: map[string]bool{}} }

func (f *fakeLines) Holds(_ context.Context, screening, token string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holds[screening+"/"+token], nil
}

func (f *fakeLines) Keep(_ context.Context, screening, token string, keep bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if keep {
		f.kept[screening+"/"+token] = true
	} else {
		delete(f.kept, screening+"/"+token)
	}
	return nil
}

func (f *fakeLines) place(screening string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	token := ids.New()
	f.holds[screening+"/"+token] = true
	return token
}

func (f *fakeLines) isKept(screening, token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kept[screening+"/"+token]
}

// notifyClock is the real time plus what the test added.
type notifyClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *notifyClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *notifyClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// notifyHarness is the routes on an echo of their own, with the server's error handler.
type notifyHarness struct {
	e     *echo.Echo
	svc   *notify.Service
	lines *fakeLines
	mp    *testenv.Mailpit
	clock *notifyClock
	id    string
}

func newNotifyHarness(t *testing.T, env *testenv.Env, mailOn bool) *notifyHarness {
	t.Helper()
	h := &notifyHarness{e: echo.New(), lines: newFakeLines(), clock: &notifyClock{}, id: testenv.Unique("s")}
	env.Demo(t, h.id, 1, 4)
	s := notify.Settings{Now: h.clock.now}
	if mailOn {
		h.mp = testenv.StartMailpit(t, testenv.MailpitOptions{})
		s.SMTPURL, s.From, s.PublicURL = h.mp.URL("smtp+insecure"), "tickets@tickets.example", "https://tickets.example"
	}
	var err error
	if h.svc, err = notify.New(env.DB, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	h.e.HTTPErrorHandler = errorHandler(slog.New(slog.DiscardHandler), time.Second)
	registerNotify(h.e.Group("/api"), h.svc, h.lines)
	return h
}

// do sends method path with body and returns the status and the body read.
func (h *notifyHarness) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.e.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// errorCode is the error code of an answer's body.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error.Code
}

func (h *notifyHarness) path() string { return "/api/screenings/" + h.id + "/notify" }

func (h *notifyHarness) subscribed(t *testing.T, token string) bool {
	t.Helper()
	ok, err := h.svc.Subscribed(t.Context(), h.id, token)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

var mailedClaim = regexp.MustCompile(`\?claim=([A-Za-z0-9_-]{43})`)

// mail writes and sends an admission to token, whose address is email, and returns the nonce of its link.
func (h *notifyHarness) mail(t *testing.T, token, email string) string {
	t.Helper()
	if _, err := h.svc.Due(t.Context(), notify.Notice{Screening: h.id, Kind: notify.Admission, DedupKey: "admit:" + token, Tokens: []string{token}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range h.mp.Mails(t) {
			if len(m.To) == 1 && m.To[0].Address == email {
				if link := mailedClaim.FindStringSubmatch(m.Text); link != nil {
					return link[1]
				}
				t.Fatalf("the e-mail to %s carries no link:\n%s", email, m.Text)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no e-mail to %s", email)
	return ""
}

func TestNotifyKeepsTheAddressOfAHeldTokenAndItsLinkOpensOnce(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		h := newNotifyHarness(t, env, true)
		token := h.lines.place(h.id)
		status, body := h.do(t, http.MethodPut, h.path(), `{"token":"`+token+`","email":"Ann@Buyer.example","lang":"ko"}`)
		if status != http.StatusOK || body != `{"email":"a***@buyer.example","lang":"ko"}`+"\n" {
			t.Fatalf("PUT notify = %d %s, want 200 with the address masked", status, body)
		}
		if !h.subscribed(t, token) || !h.lines.isKept(h.id, token) {
			t.Errorf("after the PUT: subscribed %v, kept %v; want both", h.subscribed(t, token), h.lines.isKept(h.id, token))
		}
		nonce := h.mail(t, token, "ann@buyer.example")

		status, body = h.do(t, http.MethodPost, "/api/notify/claim", `{"claim":"`+nonce+`"}`)
		var got struct{ Screening, Token string }
		if status != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.Screening != h.id || got.Token != token {
			t.Fatalf("claim = %d %s, want 200 with %s and the token", status, body, h.id)
		}
		if status, body = h.do(t, http.MethodPost, "/api/notify/claim", `{"claim":"`+nonce+`"}`); status != http.StatusGone || errorCode(t, body) != "LINK_USED" {
			t.Errorf("a second claim = %d %s, want 410 LINK_USED", status, body)
		}
		forged := []byte(nonce)
		forged[5] ^= 1
		if status, body = h.do(t, http.MethodPost, "/api/notify/claim", `{"claim":"`+string(forged)+`"}`); status != http.StatusNotFound || errorCode(t, body) != "LINK_UNKNOWN" {
			t.Errorf("a forged claim = %d %s, want 404 LINK_UNKNOWN", status, body)
		}

		// Another token's link, clicked after link_ttl.
		late := h.lines.place(h.id)
		if status, _ := h.do(t, http.MethodPut, h.path(), `{"token":"`+late+`","email":"bo@buyer.example"}`); status != http.StatusOK {
			t.Fatalf("PUT notify without lang = %d, want 200 (English)", status)
		}
		expired := h.mail(t, late, "bo@buyer.example")
		h.clock.advance(notify.DefaultLinkTTL + time.Second)
		if status, body = h.do(t, http.MethodPost, "/api/notify/claim", `{"claim":"`+expired+`"}`); status != http.StatusGone || errorCode(t, body) != "LINK_EXPIRED" {
			t.Errorf("an expired claim = %d %s, want 410 LINK_EXPIRED", status, body)
		}
		if status, body = h.do(t, http.MethodPost, "/api/notify/claim", `{"claim":"`+nonce+`","more":1}`); status != http.StatusBadRequest || errorCode(t, body) != "BAD_REQUEST" {
			t.Errorf("a claim with an unknown field = %d %s, want 400 BAD_REQUEST", status, body)
		}
	})
}

func TestNotifyRefusesBadInputAndStoresNothing(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		h := newNotifyHarness(t, env, true)
		token := h.lines.place(h.id)
		stranger := ids.New()
		for _, tc := range []struct {
			body   string
			status int
			code   string
		}{
			{`{"token":"` + token + `","email":"Ann <ann@buyer.example>","lang":"en"}`, http.StatusBadRequest, "INVALID_EMAIL"},
			{`{"token":"` + token + `","email":"ann@localhost","lang":"en"}`, http.StatusBadRequest, "INVALID_EMAIL"},
			{`{"token":"` + token + `","email":"ann@buyer.example, bo@buyer.example","lang":"en"}`, http.StatusBadRequest, "INVALID_EMAIL"},
			{`{"token":"` + token + `","email":"` + strings.Repeat("a", 250) + `@b.example","lang":"en"}`, http.StatusBadRequest, "INVALID_EMAIL"},
			{`{"token":"` + token + `","email":"","lang":"en"}`, http.StatusBadRequest, "INVALID_EMAIL"},
			{`{"token":"` + token + `","email":"ann@buyer.example","lang":"fr"}`, http.StatusBadRequest, "INVALID_LANG"},
			{`{"token":"` + token + `","email":"ann@buyer.example","lang":"en","name":"Ann"}`, http.StatusBadRequest, "BAD_REQUEST"},
			{`{"token":"` + token + `","email":"ann@buyer.example"}{}`, http.StatusBadRequest, "BAD_REQUEST"},
			{`["ann@buyer.example"]`, http.StatusBadRequest, "BAD_REQUEST"},
			{`not json`, http.StatusBadRequest, "BAD_REQUEST"},
			{``, http.StatusBadRequest, "BAD_REQUEST"},
			{`{"token":"` + stranger + `","email":"ann@buyer.example","lang":"en"}`, http.StatusNotFound, "NOT_IN_LINE"},
			{`{"token":"not-a-token","email":"ann@buyer.example","lang":"en"}`, http.StatusBadRequest, "BAD_TOKEN"},
		} {
			status, body := h.do(t, http.MethodPut, h.path(), tc.body)
			if status != tc.status || errorCode(t, body) != tc.code {
				t.Errorf("PUT %s = %d %s, want %d %s", tc.body, status, body, tc.status, tc.code)
			}
		}
		if status, body := h.do(t, http.MethodPut, h.path(), `{"token":"`+token+`","email":"`+strings.Repeat("a", 2000)+`"}`); status != http.StatusRequestEntityTooLarge {
			t.Errorf("PUT with a 2 kB body = %d %s, want 413", status, body)
		}
		if h.subscribed(t, token) || h.subscribed(t, stranger) || h.lines.isKept(h.id, token) {
			t.Errorf("a refused PUT stored an address or kept a token")
		}
		if c, err := h.svc.Counts(t.Context(), h.id); err != nil || c != (notify.Counts{}) {
			t.Errorf("Counts after the refusals = %+v, %v; want nothing", c, err)
		}
	})
}

func TestNotifyDeleteForgetsTheAddress(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		h := newNotifyHarness(t, env, true)
		token := h.lines.place(h.id)
		if status, body := h.do(t, http.MethodPut, h.path(), `{"token":"`+token+`","email":"ann@buyer.example","lang":"en"}`); status != http.StatusOK {
			t.Fatalf("PUT = %d %s", status, body)
		}
		if status, body := h.do(t, http.MethodDelete, h.path(), `{"token":"`+token+`"}`); status != http.StatusNoContent {
			t.Fatalf("DELETE = %d %s, want 204", status, body)
		}
		if h.subscribed(t, token) || h.lines.isKept(h.id, token) {
			t.Errorf("after DELETE: subscribed %v, kept %v; want neither", h.subscribed(t, token), h.lines.isKept(h.id, token))
		}
		if status, _ := h.do(t, http.MethodDelete, h.path(), `{"token":"`+token+`"}`); status != http.StatusNoContent {
			t.Errorf("a second DELETE = %d, want 204", status)
		}
		if status, body := h.do(t, http.MethodDelete, h.path(), `{"token":"`+token+`","email":"x"}`); status != http.StatusBadRequest || errorCode(t, body) != "BAD_REQUEST" {
			t.Errorf("DELETE with an unknown field = %d %s, want 400 BAD_REQUEST", status, body)
		}
	})
}

// With mail off (no SMTP URL) the routes answer NOTIFY_OFF and keep nothing; with no service at all,
// every route does.
func TestNotifyOffAnswersNotifyOff(t *testing.T) {
	env := testenv.New(t, testenv.Embedded)
	h := newNotifyHarness(t, env, false)
	token := h.lines.place(h.id)
	if status, body := h.do(t, http.MethodPut, h.path(), `{"token":"`+token+`","email":"ann@buyer.example","lang":"en"}`); status != http.StatusConflict || errorCode(t, body) != "NOTIFY_OFF" {
		t.Errorf("PUT with mail off = %d %s, want 409 NOTIFY_OFF", status, body)
	}
	if h.subscribed(t, token) || h.lines.isKept(h.id, token) {
		t.Errorf("PUT with mail off stored the address")
	}
	none := echo.New()
	none.HTTPErrorHandler = errorHandler(slog.New(slog.DiscardHandler), time.Second)
	registerNotify(none.Group("/api"), nil, h.lines)
	h.e = none
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPut, h.path(), `{"token":"` + token + `","email":"ann@buyer.example","lang":"en"}`},
		{http.MethodDelete, h.path(), `{"token":"` + token + `"}`},
		{http.MethodPost, "/api/notify/claim", `{"claim":"x"}`},
	} {
		if status, body := h.do(t, r.method, r.path, r.body); status != http.StatusConflict || errorCode(t, body) != "NOTIFY_OFF" {
			t.Errorf("%s %s without a service = %d %s, want 409 NOTIFY_OFF", r.method, r.path, status, body)
		}
	}
}
