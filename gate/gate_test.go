// Tests of the gate against a real origin and the real queue: straight through below max_active, the line
// when full, every refused cookie back to the line unseen by the origin, the release, queue_all and
// passthrough, the JSON answer, the enter form, what is stripped, and a WebSocket through the proxy.

package gate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/testenv"
)

func TestBelowMaxActiveAVisitorGoesStraightThroughWithAnAdmissionCookie(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 2, booking.GateAuto)
		resp, _ := f.get(t, "/checkout/cart", "")
		cookie, c := gateCookie(resp, room)
		if resp.StatusCode != http.StatusOK || c == nil {
			t.Fatalf("GET /checkout/cart = %d, cookie %v, want 200 and the gate's cookie", resp.StatusCode, c)
		}
		if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Expires.Before(time.Now().Add(50*time.Second)) {
			t.Errorf("cookie %+v, want HttpOnly, Secure, SameSite=Lax, Path=/, expiring with the slot (1m)", c)
		}
		claims, err := f.passes.Verify(c.Value, room)
		if err != nil {
			t.Fatalf("the cookie's pass does not verify for %s: %v", room, err)
		}
		if err := f.q.CheckPass(t.Context(), claims); err != nil {
			t.Errorf("the cookie's slot: %v, want active", err)
		}
		// With the cookie: through, no new cookie; and the origin's own attempt to set the gate's cookie is dropped.
		resp, body := f.get(t, "/checkout/pay?x=1", cookie)
		if resp.StatusCode != http.StatusOK || body != "origin /checkout/pay" || len(resp.Cookies()) != 0 {
			t.Errorf("GET with the cookie = %d %q, cookies %v, want 200 from the origin, no cookie", resp.StatusCode, body, resp.Cookies())
		}
		if resp.Header.Get("X-Waitroom-Internal") != "" {
			t.Errorf("the origin's X-Waitroom-Internal reached the client")
		}
		if got := f.count(t, room, "admitted_direct"); got != 1 {
			t.Errorf("admitted_direct = %v, want 1", got)
		}
		if got := f.count(t, room, "passed"); got != 1 {
			t.Errorf("passed = %v, want 1", got)
		}
	})
}

// A client that throws its cookie away after each visit gets a new direct admission each time; the pace
// per address (limits.registrations_per_second) stops it taking every free slot: beyond it, the line.
func TestDirectAdmissionsArePacedPerClientAddress(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 10, booking.GateAuto, func(s *gate.Settings) {
			s.Direct = limit.NewRate(0.001, 2) // two at once, then one in about 17 minutes
			s.ClientAddress = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
		})
		for i := range 2 {
			resp, _ := f.get(t, "/checkout/cart", "", "X-Test-Client", "198.51.100.7")
			if c, _ := gateCookie(resp, room); resp.StatusCode != http.StatusOK || c == "" {
				t.Fatalf("cookieless visit %d from one address = %d, cookie %q, want 200 with a cookie (within the burst)", i+1, resp.StatusCode, c)
			}
		}
		resp, _ := f.get(t, "/checkout/cart", "", "X-Test-Client", "198.51.100.7")
		wantLine(t, "a third cookieless visit from the address, the room still with space", resp, "/checkout/cart")
		if resp, _ := f.get(t, "/checkout/cart", "", "X-Test-Client", "203.0.113.9"); resp.StatusCode != http.StatusOK {
			t.Errorf("a visit from another address = %d, want 200: the pace is per address", resp.StatusCode)
		}
		if n := len(f.origin.requests()); n != 3 {
			t.Errorf("the origin saw %d requests, want the 3 admitted ones", n)
		}
		if got := f.count(t, room, "direct_limited"); got != 1 {
			t.Errorf("direct_limited = %v, want 1", got)
		}
	})
}

func TestAFullRoomSendsTheVisitorToTheLineAndTheOriginNeverSeesIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		f.admitDirect(t)
		resp, _ := f.get(t, "/checkout/cart?item=7", "")
		wantLine(t, "GET with the room full", resp, "/checkout/cart?item=7")
		if n := len(f.origin.requests()); n != 1 {
			t.Errorf("the origin saw %d requests, want only the first visitor's", n)
		}
	})
}

func TestEveryRefusedCookieGoesBackToTheLineUnseenByTheOrigin(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		valid := f.admitDirect(t) // the room is full from here on
		_, validPass, _ := strings.Cut(valid, "=")
		expired, err := f.passes.Issue(room, queue.NewToken(), time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		// A real admission of the other room, and an admission of shop whose slot is not held (never admitted).
		d, err := f.q.AdmitDirect(t.Context(), other, time.Time{}, queue.Settings{MaxActive: 5, ActiveTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		otherPass, _ := f.passes.Issue(other, d.Token, d.ExpiresAt)
		unheld, _ := f.passes.Issue(room, queue.NewToken(), time.Now().Add(time.Minute))
		forger := pass.NewSecretIssuer([]byte("not the server's secret, 32 byte"))
		forged, _ := forger.Issue(room, queue.NewToken(), time.Now().Add(time.Minute))
		name := gate.CookiePrefix + room
		for _, c := range []struct{ what, cookie string }{
			{"no cookie", ""},
			{"a forged cookie", name + "=" + forged},
			{"a tampered cookie", name + "=" + tampered(validPass)},
			{"garbage", name + "=not-a-pass"},
			{"an expired cookie", name + "=" + expired},
			{"a cookie for another path's room", name + "=" + otherPass},
			{"another room's cookie under its own name", gate.CookiePrefix + other + "=" + otherPass},
			{"a pass whose slot is not held", name + "=" + unheld},
		} {
			before := len(f.origin.requests())
			resp, _ := f.get(t, "/checkout/cart", c.cookie)
			wantLine(t, c.what, resp, "/checkout/cart")
			if n := len(f.origin.requests()); n != before {
				t.Errorf("%s: the origin saw the request", c.what)
			}
		}
		// The admitted one still passes.
		if resp, _ := f.get(t, "/checkout/cart", valid); resp.StatusCode != http.StatusOK {
			t.Errorf("the admitted visitor = %d, want 200", resp.StatusCode)
		}
		if got := f.count(t, room, "refused"); got != 6 {
			t.Errorf("refused = %v, want 6 (every cookie under shop's name)", got)
		}
	})
}

func TestTheReleaseHeaderFreesTheSlotAndTheNextInLineIsAdmittedThroughTheEnterForm(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		first := f.admitDirect(t)

		// The next visitor is a JSON client: it gets a place in line and how to follow it.
		resp, body := f.get(t, "/checkout/cart", "", "Accept", "application/json")
		var w struct {
			Error              struct{ Code string }
			Room, Token, State string
			Position           int64
			Socket, Enter      string
			RoomURLJSON        string `json:"room_url"`
		}
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			t.Fatalf("JSON answer %q: %v", body, err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || w.Error.Code != "WAITING_ROOM" {
			t.Errorf("JSON answer = %d Retry-After %q code %q, want 429, 1, WAITING_ROOM", resp.StatusCode, resp.Header.Get("Retry-After"), w.Error.Code)
		}
		if w.Room != room || w.State != "waiting" || w.Position != 1 || !queue.ValidToken(w.Token) ||
			w.Socket != "wss://room.example/ws/screenings/"+room+"?auth=message" || w.Enter != f.gate.URL+gate.EnterPath ||
			w.RoomURLJSON != "https://room.example/s/"+room+"?to="+url.QueryEscape("/checkout/cart") {
			t.Errorf("JSON answer = %s", body)
		}

		// The origin ends the first visitor's admission after checkout.
		resp, _ = f.get(t, "/checkout/done", first)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(gate.ReleaseHeader) != "" {
			t.Errorf("GET /checkout/done = %d, %s %q, want 200 with the header stripped", resp.StatusCode, gate.ReleaseHeader, resp.Header.Get(gate.ReleaseHeader))
		}
		if _, c := gateCookie(resp, room); c == nil || c.MaxAge >= 0 {
			t.Errorf("release cookie = %+v, want it expired (Max-Age=0)", c)
		}
		if n, _ := env.Redis.ZCard(t.Context(), queue.Key(env.Prefix, room, "active")).Result(); n != 0 {
			t.Errorf("active after the release = %d, want 0", n)
		}
		if resp, _ := f.get(t, "/checkout/cart", first); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the released cookie = %d, want 303 back to the line", resp.StatusCode)
		}

		// The freed slot goes to the one who waited (a tick), never to a newcomer.
		tick, err := f.q.Admit(t.Context(), room, time.Now(), queue.Settings{BatchSize: 10, MaxActive: 1, ActiveTTL: time.Minute})
		if err != nil || len(tick.Admitted) != 1 || tick.Admitted[0] != w.Token {
			t.Fatalf("Admit = %+v, %v, want the JSON client's token admitted", tick, err)
		}
		pass, err := f.passes.Issue(room, w.Token, tick.ExpiresAt) // as the hub hands it over the socket
		if err != nil {
			t.Fatal(err)
		}
		resp, _ = postEnter(t, f, url.Values{"pass": {pass}, "room": {room}, "to": {"/checkout/cart?step=2"}})
		cookie, _ := gateCookie(resp, room)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/checkout/cart?step=2" || cookie == "" {
			t.Fatalf("POST enter = %d to %q, cookie %q, want 303 to /checkout/cart?step=2 with the cookie", resp.StatusCode, resp.Header.Get("Location"), cookie)
		}
		if resp, body := f.get(t, "/checkout/cart?step=2", cookie); resp.StatusCode != http.StatusOK || body != "origin /checkout/cart" {
			t.Errorf("the admitted visitor = %d %q, want the origin's page", resp.StatusCode, body)
		}
		if got := f.count(t, room, "released"); got != 1 {
			t.Errorf("released = %v, want 1", got)
		}
	})
}

// postEnter posts form to the gate's enter path, with the extra headers given (name, value...).
func postEnter(t *testing.T, f *fixture, form url.Values, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.gate.URL+gate.EnterPath, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return do(t, req)
}

// A page of another site that posts its own visitor's pass to the enter form would push that admission
// onto whoever opens the page (login CSRF): the form is taken from the waiting room's page only.
func TestTheEnterFormIsTakenFromTheRoomsPageOnly(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 5, booking.GateAuto) // the room's page is at https://room.example
		d, err := f.q.AdmitDirect(t.Context(), room, time.Time{}, queue.Settings{MaxActive: 5, ActiveTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		pass, _ := f.passes.Issue(room, d.Token, d.ExpiresAt)
		form := url.Values{"pass": {pass}, "room": {room}, "to": {"/checkout"}}
		for _, c := range []struct {
			what    string
			headers []string
			want    int
		}{
			{"another site's page", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
			{"a page of the site behind the gate", []string{"Origin", f.gate.URL}, http.StatusForbidden},
			{"the room's host over http", []string{"Origin", "http://room.example"}, http.StatusForbidden},
			{"the room's host on another port", []string{"Origin", "https://room.example:8443"}, http.StatusForbidden},
			{"an opaque origin", []string{"Origin", "null"}, http.StatusForbidden},
			{"a cross-site form without Origin", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
			{"a form of no site", []string{"Sec-Fetch-Site", "none"}, http.StatusForbidden},
			{"the room's page", []string{"Origin", "https://room.example"}, http.StatusSeeOther},
			{"the room's page, its origin spelt otherwise", []string{"Origin", "https://ROOM.example:443"}, http.StatusSeeOther},
			{"the room's page on another site", []string{"Origin", "https://room.example", "Sec-Fetch-Site", "cross-site"}, http.StatusSeeOther},
			{"a same-site form without Origin", []string{"Sec-Fetch-Site", "same-site"}, http.StatusSeeOther},
			{"a client that is not a browser", nil, http.StatusSeeOther},
		} {
			resp, _ := postEnter(t, f, form, c.headers...)
			cookie, _ := gateCookie(resp, room)
			if resp.StatusCode != c.want || (cookie != "") != (c.want == http.StatusSeeOther) {
				t.Errorf("enter from %s = %d, with a cookie %v, want %d and a cookie only with 303", c.what, resp.StatusCode, cookie != "", c.want)
			}
		}
	})
}

func TestTheEnterFormRefusesBadPassesAndOffSiteReturns(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 5, booking.GateAuto)
		d, err := f.q.AdmitDirect(t.Context(), room, time.Time{}, queue.Settings{MaxActive: 5, ActiveTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		pass, _ := f.passes.Issue(room, d.Token, d.ExpiresAt)
		for _, to := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", ""} {
			resp, _ := postEnter(t, f, url.Values{"pass": {pass}, "room": {room}, "to": {to}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
				t.Errorf("enter to %q = %d to %q, want 303 to /", to, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		resp, _ := postEnter(t, f, url.Values{"pass": {tampered(pass)}, "room": {room}, "to": {"/checkout"}})
		if c, _ := gateCookie(resp, room); c != "" {
			t.Errorf("a tampered pass got a cookie")
		}
		wantLine(t, "enter with a tampered pass", resp, "/checkout")
		if resp, _ := postEnter(t, f, url.Values{"pass": {pass}, "room": {other}, "to": {"/tickets"}}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("enter with shop's pass for other = %d, want 303 back to the line", resp.StatusCode)
		} else if c, _ := gateCookie(resp, other); c != "" {
			t.Errorf("shop's pass got a cookie for other")
		}
		if resp, _ := postEnter(t, f, url.Values{"pass": {pass}, "room": {"nowhere"}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("enter for a room the gate does not protect = %d, want 400", resp.StatusCode)
		}
		if resp, _ := f.get(t, gate.EnterPath, ""); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET enter = %d, want 405 (a pass never travels in a URL)", resp.StatusCode)
		}
		if resp, _ := f.get(t, "/.waitroom/anything", ""); resp.StatusCode != http.StatusNotFound || len(f.origin.requests()) != 0 {
			t.Errorf("GET /.waitroom/anything = %d, want 404 and never proxied", resp.StatusCode)
		}
	})
}

func TestQueueAllSendsEveryoneToTheLineEvenWithRoom(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 100, booking.GateQueueAll)
		advance := f.movableClock()
		resp, _ := f.get(t, "/checkout", "")
		wantLine(t, "GET under queue_all", resp, "/checkout")
		// A room's own mode wins over gate.mode: auto lets the next one through (read again after roomTTL).
		if err := f.store.SetGateMode(t.Context(), room, booking.GateAuto); err != nil {
			t.Fatal(err)
		}
		advance(gate.RoomTTL)
		if resp, _ := f.get(t, "/checkout", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET after the room's mode became auto = %d, want 200", resp.StatusCode)
		}
		if n := len(f.origin.requests()); n != 1 {
			t.Errorf("the origin saw %d requests, want 1", n)
		}
	})
}

func TestPassthroughLetsEveryoneThroughAndStillCounts(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GatePassthrough)
		for range 3 {
			resp, _ := f.get(t, "/checkout", "")
			if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 0 {
				t.Errorf("GET under passthrough = %d, cookies %v, want 200 and no cookie", resp.StatusCode, resp.Cookies())
			}
		}
		if got := f.count(t, room, "passthrough"); got != 3 {
			t.Errorf("passthrough = %v, want 3", got)
		}
		if n, _ := env.Redis.ZCard(context.Background(), queue.Key(env.Prefix, room, "active")).Result(); n != 0 {
			t.Errorf("active under passthrough = %d, want 0 (no slot taken)", n)
		}
	})
}

func TestUnprotectedPathsReachTheOriginUntouchedButStripped(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 0+1, booking.GateQueueAll)
		resp, body := f.get(t, "/checkouts/x?q=a%20b", "session=abc; "+gate.CookiePrefix+room+"=stolen; theme=dark",
			"X-Waitroom-Release", "1", "X-Waitroom-Token", "forged", "X-Other", "kept")
		if resp.StatusCode != http.StatusOK || body != "origin /checkouts/x" {
			t.Fatalf("GET /checkouts/x = %d %q, want the origin's page (not a protected prefix)", resp.StatusCode, body)
		}
		reqs := f.origin.requests()
		got := reqs[len(reqs)-1]
		if got.URI != "/checkouts/x?q=a%20b" || got.Header.Get("X-Other") != "kept" || got.Header.Get("Cookie") != "session=abc; theme=dark" {
			t.Errorf("origin saw %s, X-Other %q, Cookie %q, want the URI as sent, X-Other kept, only the site's cookies", got.URI, got.Header.Get("X-Other"), got.Header.Get("Cookie"))
		}
		for name := range got.Header {
			if strings.HasPrefix(name, "X-Waitroom-") {
				t.Errorf("origin saw the client's %s", name)
			}
		}
		// Matching ignores case and resolves dot segments before deciding, so neither goes around the gate.
		resp, _ = f.get(t, "/CheckOut/cart", "")
		wantLine(t, "GET /CheckOut/cart", resp, "/CheckOut/cart")
		resp, _ = f.get(t, "/static/../checkout/cart", "")
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != "/checkout/cart" {
			t.Errorf("GET /static/../checkout/cart = %d to %q, want 308 to /checkout/cart", resp.StatusCode, resp.Header.Get("Location"))
		}
		if n := len(f.origin.requests()); n != 1 {
			t.Errorf("the origin saw %d requests, want 1", n)
		}
	})
}

// nginx (underscores_in_headers on), CGI and PHP read X-Waitroom_Token as X-Waitroom-Token: the gate's
// namespace is stripped in every spelling, both ways.
func TestTheGatesHeadersInAnySpellingNeitherReachTheOriginNorComeBack(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateQueueAll)
		req, err := http.NewRequest(http.MethodGet, f.gate.URL+"/about", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"X-Waitroom_token", "x_waitroom_release", "X_WAITROOM_PASS", "x-waitroom-admitted"} {
			req.Header[name] = []string{"forged"} // as written, not canonicalized
		}
		req.Header.Set("X-Waitroomer", "kept")
		resp, _ := do(t, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /about = %d, want 200", resp.StatusCode)
		}
		reqs := f.origin.requests()
		got := reqs[len(reqs)-1].Header
		for name := range got {
			if n := strings.ToLower(strings.ReplaceAll(name, "_", "-")); strings.HasPrefix(n, "x-waitroom-") {
				t.Errorf("the origin saw the client's %s", name)
			}
		}
		if got.Get("X-Waitroomer") != "kept" {
			t.Errorf("the origin did not see X-Waitroomer, outside the namespace")
		}
		for name := range resp.Header {
			if n := strings.ToLower(strings.ReplaceAll(name, "_", "-")); strings.HasPrefix(n, "x-waitroom-") {
				t.Errorf("the client saw the origin's %s", name)
			}
		}
	})
}

func TestAWebSocketGoesThroughTheGateWithAnAdmission(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		cookie := f.admitDirect(t)
		wsURL := strings.Replace(f.gate.URL, "http://", "ws://", 1)
		for _, c := range []struct{ path, cookie string }{{"/checkout/ws", cookie}, {"/ws", ""}} {
			h := http.Header{}
			if c.cookie != "" {
				h.Set("Cookie", c.cookie)
			}
			conn, resp, err := websocket.DefaultDialer.Dial(wsURL+c.path, h)
			if err != nil {
				t.Fatalf("dial %s through the gate: %v (%v)", c.path, err, resp)
			}
			if err := conn.WriteMessage(websocket.TextMessage, []byte("ping "+c.path)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, msg, err := conn.ReadMessage()
			if err != nil || string(msg) != "ping "+c.path {
				t.Errorf("echo through the gate on %s = %q, %v", c.path, msg, err)
			}
			conn.Close()
		}
		if _, resp, err := websocket.DefaultDialer.Dial(wsURL+"/checkout/ws", nil); err == nil || resp == nil || resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a WebSocket to a protected path without a cookie: err %v, want refused with 303", err)
		}
	})
}

func TestARoomTheStoreDoesNotKnowFailsClosedAndTheOriginNeverSeesIt(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		if _, err := env.DB.Exec(env.DB.Rebind(`DELETE FROM screenings WHERE id = ?`), other); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if resp, _ := f.get(t, "/tickets/seat", ""); resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("GET under an unknown room = %d, want 503", resp.StatusCode)
			}
		}
		if n := len(f.origin.requests()); n != 0 {
			t.Errorf("the origin saw %d requests, want none", n)
		}
		if resp, body := f.get(t, "/about", ""); resp.StatusCode != http.StatusOK || body != "origin /about" {
			t.Errorf("an unprotected path = %d %q, want the origin's page", resp.StatusCode, body)
		}
	})
}

// Without gate.room_url the gate names the room by its listener's address; on loopback a room page the
// browser opened as localhost (make run prints http://localhost:8080) is the same page, and its form is
// taken, while another host's page on the room's port, or the site's own pages, still are not.
func TestTheEnterFormTakesTheRoomOpenedAsLocalhost(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 10, booking.GateAuto, func(s *gate.Settings) { s.RoomURL, s.RoomPort = "", "8080" })
		u, _ := url.Parse(f.gate.URL)
		for _, c := range []struct {
			what, origin string
			want         int
		}{
			{"the room's page, by the listener's address", "http://" + u.Hostname() + ":8080", http.StatusSeeOther},
			{"the room's page, opened as localhost", "http://localhost:8080", http.StatusSeeOther},
			{"the room's page, opened as [::1]", "http://[::1]:8080", http.StatusSeeOther},
			{"another host on the room's port", "http://evil.example:8080", http.StatusForbidden},
			{"a page of the site behind the gate", "http://localhost:" + u.Port(), http.StatusForbidden},
			{"localhost over https", "https://localhost:8080", http.StatusForbidden},
		} {
			d, err := f.q.AdmitDirect(t.Context(), room, time.Time{}, queue.Settings{MaxActive: 10, ActiveTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			pass, _ := f.passes.Issue(room, d.Token, d.ExpiresAt)
			form := url.Values{"pass": {pass}, "room": {room}, "to": {"/checkout"}}
			if resp, _ := postEnter(t, f, form, "Origin", c.origin); resp.StatusCode != c.want {
				t.Errorf("enter from %s (%s) = %d, want %d", c.what, c.origin, resp.StatusCode, c.want)
			}
		}
	})
}
