// Tests of the paths an origin may read as a protected one: every form some origin strips, decodes or
// splits is refused or protected, and never reaches the origin without an admission.

package gate_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/testenv"
)

func TestNoFormOfAProtectedPathReachesTheOriginWithoutAnAdmission(t *testing.T) {
	const (
		refused   = "refused"   // 400, for every path: the origin might read it as the protected one
		protected = "protected" // to the line, like /checkout itself
		cleaned   = "cleaned"   // 308 to the clean form first, which is protected
	)
	cases := []struct{ target, want string }{
		// Path parameters: Tomcat, Jetty and Spring read /checkout;jsessionid=x as /checkout.
		{"/checkout;jsessionid=x", refused},
		{"/checkout;", refused},
		{"/CheckOut;x", refused},
		{"/checkout%3Bx", refused},
		{"/checkout%3bx", refused},
		{"/checkout%253Bx", refused}, // for an origin that decodes twice
		{"/static;/../checkout", refused},
		// Backslashes: a separator on Windows and to some routers.
		{`/a\..\checkout`, refused},
		{`/checkout\`, refused},
		{"/a%5C..%5Ccheckout", refused},
		{"/a%5c..%5ccheckout", refused},
		{"/checkout%255C", refused},
		// NUL, the other control characters and DEL, encoded (raw ones the HTTP server refuses itself).
		{"/checkout%00", refused},
		{"/checkout%00.html", refused},
		{"/checkout%2500", refused},
		{"/checkout%7f", refused},
		{"/checkout%7F", refused},
		// Formats and suffixes: Rails routes /checkout.json to /checkout; Windows drops a trailing dot or space.
		{"/checkout.json", protected},
		{"/checkout.html", protected},
		{"/CHECKOUT.JSON", protected},
		{"/checkout.", protected},
		{"/checkout%2Ejson", protected},
		{"/checkout%20", protected},
		{"/checkout%20/cart", protected},
		{"/checkout%23x", protected},
		{"/checkout%3Fx=1", protected},
		{"/checkout~", protected},
		{"/check%6Fut", protected},
		{"/%2563heckout", protected}, // /checkout to an origin that decodes twice
		{"/CheckOut", protected},
		// Dot segments.
		{"/checkout/.", cleaned},
		{"/checkout/./cart", cleaned},
		{"/x/%2e%2e/checkout", cleaned},
	}
	for c := byte(0x01); c < 0x20; c++ {
		cases = append(cases, struct{ target, want string }{fmt.Sprintf("/checkout%%%02x", c), refused})
	}
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateQueueAll)
		for _, c := range cases {
			resp := f.raw(t, "GET "+c.target+" HTTP/1.1\r\nHost: shop.example\r\n\r\n")
			switch c.want {
			case refused:
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("GET %s = %d, want 400", c.target, resp.StatusCode)
				}
			case protected:
				if want := "https://room.example/s/" + room + "?to=" + url.QueryEscape(c.target); resp.StatusCode != http.StatusSeeOther ||
					resp.Header.Get("Location") != want {
					t.Errorf("GET %s = %d to %q, want 303 to the line (%s)", c.target, resp.StatusCode, resp.Header.Get("Location"), want)
				}
			case cleaned:
				if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusPermanentRedirect || !strings.HasPrefix(loc, "/checkout") {
					t.Errorf("GET %s = %d to %q, want 308 to its clean form under /checkout", c.target, resp.StatusCode, loc)
				}
			}
		}
		if reqs := f.origin.requests(); len(reqs) != 0 {
			t.Errorf("the origin saw %d requests, want none; the first: %s", len(reqs), reqs[0].URI)
		}
		// Names that only begin like the prefix, and a ';' in the query, are the site's own.
		for _, target := range []string{"/checkouts", "/checkout-old", "/checkout_v2", "/checkout2", "/about?a=1;b=2"} {
			if resp := f.raw(t, "GET "+target+" HTTP/1.1\r\nHost: shop.example\r\n\r\n"); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s = %d, want 200 from the origin (not under the prefix)", target, resp.StatusCode)
			}
		}
	})
}

// raw sends request as it is written on a connection of its own to the gate and reads the answer (its body
// is read and closed), so that a target no client library would send (a raw backslash) reaches the gate.
func (f *fixture) raw(t *testing.T, request string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", f.gate.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", strings.SplitN(request, "\r\n", 2)[0], err)
	}
	resp.Body.Close()
	return resp
}

// Go takes the host of an absolute-form target over the Host line, and the origin would serve that host:
// the gate, which is no forward proxy, refuses the form.
func TestAnAbsoluteFormRequestIsRefused(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateAuto)
		for _, request := range []string{
			"GET http://internal.example/about HTTP/1.1\r\nHost: shop.example\r\n\r\n",
			"GET http://shop.example/about HTTP/1.1\r\nHost: shop.example\r\n\r\n",
			"GET http://internal.example/checkout/cart HTTP/1.1\r\nHost: shop.example\r\n\r\n",
			"CONNECT internal.example:443 HTTP/1.1\r\nHost: internal.example:443\r\n\r\n",
		} {
			if resp := f.raw(t, request); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%q = %d, want 400", strings.SplitN(request, "\r\n", 2)[0], resp.StatusCode)
			}
		}
		for _, r := range f.origin.requests() {
			t.Errorf("the origin saw %s for host %q", r.URI, r.Header.Get("X-Forwarded-Host"))
		}
	})
}
