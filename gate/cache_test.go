// Tests of what caches may keep: every answer under a protected prefix is one visitor's (private, no-store,
// Vary: Cookie, and none of the headers that tell a CDN or nginx to cache it anyway), passthrough included;
// unprotected paths keep the origin's headers. A prefix that opts out: cacheable_test.go.

package gate_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

// wantPrivate checks resp is marked for no cache to keep, and to be told apart by cookie.
func wantPrivate(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Values("Cache-Control"); len(got) != 1 || got[0] != "private, no-store" {
		t.Errorf("%s: Cache-Control %q, want only \"private, no-store\"", what, got)
	}
	if !varies(resp, "Cookie") {
		t.Errorf("%s: Vary %q, want Cookie among them", what, resp.Header.Values("Vary"))
	}
	for _, name := range []string{"CDN-Cache-Control", "Surrogate-Control", "X-Accel-Expires"} {
		if v := resp.Header.Get(name); v != "" {
			t.Errorf("%s: %s %q, want none (a CDN or nginx would cache by it)", what, name, v)
		}
	}
}

// wantOrigins checks resp carries the origin's own caching headers, untouched.
func wantOrigins(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for name, v := range cacheable {
		if got := resp.Header.Values(name); len(got) != 1 || got[0] != v {
			t.Errorf("%s: %s %q, want the origin's %q alone", what, name, got, v)
		}
	}
}

func varies(resp *http.Response, name string) bool {
	for _, v := range resp.Header.Values("Vary") {
		for n := range strings.SplitSeq(v, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(n)) == name {
				return true
			}
		}
	}
	return false
}

func TestEveryProtectedAnswerIsKeptOutOfCaches(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		resp, _ := f.get(t, "/checkout/cart", "")
		cookie, _ := gateCookie(resp, room)
		if resp.StatusCode != http.StatusOK || cookie == "" {
			t.Fatalf("the first visitor = %d, cookie %q, want 200 and the gate's cookie", resp.StatusCode, cookie)
		}
		wantPrivate(t, "a direct admission's page", resp)
		resp, _ = f.get(t, "/checkout/pay", cookie)
		wantPrivate(t, "an admitted visitor's page", resp)
		resp, _ = f.get(t, "/CHECKOUT.json", cookie)
		wantPrivate(t, "an admitted visitor's /CHECKOUT.json", resp)

		// The room is full: the line, as a redirect and as JSON.
		resp, _ = f.get(t, "/checkout/cart", "")
		wantLine(t, "a visitor with the room full", resp, "/checkout/cart")
		wantPrivate(t, "the redirect to the line", resp)
		resp, _ = f.get(t, "/checkout/cart", "", "Accept", "application/json")
		wantPrivate(t, "the JSON answer", resp)

		// The enter form's answer, which sets the cookie.
		d, err := f.q.AdmitDirect(t.Context(), other, time.Time{}, queue.Settings{MaxActive: 5, ActiveTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		pass, _ := f.passes.Issue(other, d.Token, d.ExpiresAt)
		resp, _ = postEnter(t, f, url.Values{"pass": {pass}, "room": {other}, "to": {"/tickets"}})
		if c, _ := gateCookie(resp, other); c == "" {
			t.Fatalf("enter = %d without the cookie, want it set", resp.StatusCode)
		}
		wantPrivate(t, "the enter form's answer", resp)

		// The release, which expires the cookie: after it the browser must not show the page from its cache.
		resp, _ = f.get(t, "/checkout/done", cookie)
		if _, c := gateCookie(resp, room); c == nil || c.MaxAge >= 0 {
			t.Fatalf("the release = %d, cookie %+v, want the cookie expired", resp.StatusCode, c)
		}
		wantPrivate(t, "the release's page", resp)

		resp, _ = f.get(t, "/about", "")
		wantOrigins(t, "an unprotected page", resp)
	})
}

// A room in passthrough is still a protected path: what a cache kept while it was off would be served
// past the gate once it is on.
func TestAPassthroughRoomsAnswersAreKeptOutOfCachesToo(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GatePassthrough)
		resp, _ := f.get(t, "/checkout/cart", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET under passthrough = %d, want 200", resp.StatusCode)
		}
		wantPrivate(t, "a page under passthrough", resp)
		resp, _ = f.get(t, "/about", "")
		wantOrigins(t, "an unprotected page", resp)
	})
}
