// Tests of the hosts the gate's answers name without gate.room_url and gate.public_url: the Host line and
// X-Forwarded-Proto of a trusted proxy, and otherwise the gate's own listener, whatever a client writes.

package gate_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/waitroom/waitroom/booking"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/testenv"
)

// links are the URLs of the gate's answers to a request: the redirect's, and the JSON answer's.
type links struct{ location, roomURL, socket, enter string }

func (f *fixture) links(t *testing.T, host string, headers ...string) links {
	t.Helper()
	var l links
	for _, accept := range []string{"text/html", "application/json"} {
		req, err := http.NewRequest(http.MethodGet, f.gate.URL+"/checkout/cart", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Accept", accept)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, body := do(t, req)
		if accept == "text/html" {
			l.location = resp.Header.Get("Location")
			continue
		}
		var a struct {
			RoomURL       string `json:"room_url"`
			Socket, Enter string
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("JSON answer %q: %v", body, err)
		}
		l.roomURL, l.socket, l.enter = a.RoomURL, a.Socket, a.Enter
	}
	return l
}

// noURLs leaves gate.room_url and gate.public_url empty, the waiting room on port 8080.
func noURLs(s *gate.Settings) { s.RoomURL, s.PublicURL, s.RoomPort = "", "", "8080" }

var to = "?to=" + url.QueryEscape("/checkout/cart")

func TestAClientsHostLineNeverNamesTheGatesLinks(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateQueueAll, noURLs)
		listener := f.gate.Listener.Addr().String()
		ip, _, _ := net.SplitHostPort(listener)
		got := f.links(t, "evil.example", "X-Forwarded-Proto", "https")
		want := links{
			location: "http://" + ip + ":8080/s/" + room + to, roomURL: "http://" + ip + ":8080/s/" + room + to,
			socket: "ws://" + ip + ":8080/ws/screenings/" + room + "?auth=message", enter: "http://" + listener + gate.EnterPath,
		}
		if got != want {
			t.Errorf("links for a client's Host evil.example and X-Forwarded-Proto https =\n%+v, want the listener's own\n%+v", got, want)
		}
	})
}

func TestATrustedProxysHostAndProtoNameTheGatesLinks(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		f := newFixture(t, env, 1, booking.GateQueueAll, noURLs, func(s *gate.Settings) {
			s.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		})
		got := f.links(t, "shop.example", "X-Forwarded-Proto", "https")
		want := links{
			location: "https://shop.example:8080/s/" + room + to, roomURL: "https://shop.example:8080/s/" + room + to,
			socket: "wss://shop.example:8080/ws/screenings/" + room + "?auth=message", enter: "https://shop.example" + gate.EnterPath,
		}
		if got != want {
			t.Errorf("links through a trusted proxy for shop.example over https =\n%+v, want\n%+v", got, want)
		}
		if got := f.links(t, "shop.example:8443", "X-Forwarded-Proto", "gopher"); got.enter != "http://shop.example:8443"+gate.EnterPath {
			t.Errorf("enter through a trusted proxy with an unknown X-Forwarded-Proto = %q, want the connection's scheme, http", got.enter)
		}
	})
}
