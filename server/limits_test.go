// The per-address limits and the bad-message rules on the socket route.

package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/waitroom/waitroom/config"
	"github.com/waitroom/waitroom/testenv"
)

// queuedSocket opens a socket to s1 and reads its first message, which must be queued.
func (a *testServer) queuedSocket(t *testing.T) *testenv.Socket {
	t.Helper()
	conn, res, err := a.dial(t, "/ws/screenings/s1", "")
	if err != nil {
		t.Fatalf("socket = %v (%v), want it open", status(res), err)
	}
	if m := conn.Next(t, readWait); m.Type != "queued" {
		t.Fatalf("first message = %+v, want queued", m)
	}
	return conn
}

// One address holds at most limits.sockets_per_address sockets; the next is told why and closed with 1013,
// and a place frees up when one of its sockets closes.
func TestSocketsPerAddressAreCapped(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) { c.Limits = config.Limits{SocketsPerAddress: 2} })
		first := a.queuedSocket(t)
		a.queuedSocket(t)

		conn, res, err := a.dial(t, "/ws/screenings/s1", "")
		if err != nil {
			t.Fatalf("third socket = %v (%v), want it open, then refused", status(res), err)
		}
		defer conn.Close()
		if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "RATE_LIMITED" {
			t.Errorf("third socket's message = %+v, want error RATE_LIMITED", m)
		}
		if code := conn.CloseCode(t, readWait); code != 1013 {
			t.Errorf("third socket closed with %d, want 1013", code)
		}

		first.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			conn, _, err := a.dial(t, "/ws/screenings/s1", "")
			if err != nil {
				t.Fatal(err)
			}
			m := conn.Next(t, readWait)
			conn.Close()
			if m.Type == "queued" {
				break // the closed socket's place was given back
			}
			if time.Now().After(deadline) {
				t.Fatalf("after one of its sockets closed, the address still gets %+v, want queued", m)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// New sockets from one address beyond the burst and rate are refused with 1013 and RATE_LIMITED.
func TestRegistrationsPerAddressAreRateLimited(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			c.Limits = config.Limits{RegistrationsPerSecond: 0.1, RegistrationBurst: 3}
		})
		for range 3 {
			a.queuedSocket(t).Close()
		}
		conn, res, err := a.dial(t, "/ws/screenings/s1", "")
		if err != nil {
			t.Fatalf("fourth socket = %v (%v), want it open, then refused", status(res), err)
		}
		defer conn.Close()
		if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "RATE_LIMITED" {
			t.Errorf("fourth socket within the burst's second = %+v, want error RATE_LIMITED", m)
		}
		if code := conn.CloseCode(t, readWait); code != 1013 {
			t.Errorf("fourth socket closed with %d, want 1013", code)
		}
	})
}

// A malformed or unknown message is answered with an error; a second one closes the socket with 1008.
// A frame larger than the protocol allows closes it with 1009.
func TestBadClientMessages(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, nil)
		for _, c := range []struct {
			name  string
			frame string
		}{
			{"not JSON", "hello"},
			{"unknown type", `{"type":"jump"}`},
			{"no type", `{}`},
		} {
			t.Run(c.name, func(t *testing.T) {
				conn := a.queuedSocket(t)
				if err := conn.WriteMessage(websocket.TextMessage, []byte(c.frame)); err != nil {
					t.Fatal(err)
				}
				if m := conn.Next(t, readWait); m.Type != "error" || m.Code != "BAD_MESSAGE" {
					t.Errorf("answer to %q = %+v, want error BAD_MESSAGE", c.frame, m)
				}
				if err := conn.WriteMessage(websocket.TextMessage, []byte(c.frame)); err != nil {
					t.Fatal(err)
				}
				if code := conn.CloseCode(t, readWait); code != websocket.ClosePolicyViolation {
					t.Errorf("after a second %q: close %d, want 1008", c.frame, code)
				}
			})
		}
		t.Run("oversized frame", func(t *testing.T) {
			conn := a.queuedSocket(t)
			if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"leave","x":"`+strings.Repeat("a", 4096)+`"}`)); err != nil {
				t.Fatal(err)
			}
			if code := conn.CloseCode(t, readWait); code != websocket.CloseMessageTooBig {
				t.Errorf("after a 4 KiB frame: close %d, want 1009", code)
			}
		})
	})
}

// Behind a trusted proxy (http.behind_proxy, the test's loopback peer in http.trusted_proxies) the limits
// count the client's address from X-Forwarded-For, not the proxy's: two clients behind one proxy are capped
// apart.
func TestBehindProxyCountsTheForwardedAddress(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) {
			c.Limits = config.Limits{SocketsPerAddress: 1}
			c.HTTP.BehindProxy, c.HTTP.TrustedProxies = true, []string{"127.0.0.1"}
		})
		open := func(client string) testenv.Message {
			t.Helper()
			h := http.Header{}
			h.Set("X-Forwarded-For", client)
			conn, res, err := testenv.DialHeader(t, a.ts.URL+"/ws/screenings/s1", h)
			if err != nil {
				t.Fatalf("socket from %s = %v (%v), want it open", client, status(res), err)
			}
			return conn.Next(t, readWait)
		}
		if m := open("203.0.113.1"); m.Type != "queued" {
			t.Fatalf("first client's socket = %+v, want queued", m)
		}
		if m := open("203.0.113.2"); m.Type != "queued" {
			t.Errorf("a second client behind the same proxy = %+v, want queued (its own address)", m)
		}
		if m := open("203.0.113.1"); m.Type != "error" || m.Code != "RATE_LIMITED" {
			t.Errorf("the first client's second socket = %+v, want error RATE_LIMITED", m)
		}
	})
}

// behindProxyApp is a server behind a proxy at trusted, capping each client at one socket, and open dials
// s1 with the X-Forwarded-For chain xff and returns its first message.
func behindProxyApp(t *testing.T, env *testenv.Env, trusted ...string) (open func(xff string) testenv.Message) {
	a := newApp(t, env, func(c *config.Config) {
		c.Limits = config.Limits{SocketsPerAddress: 1}
		c.HTTP.BehindProxy, c.HTTP.TrustedProxies = true, trusted
	})
	return func(xff string) testenv.Message {
		t.Helper()
		h := http.Header{}
		h.Set("X-Forwarded-For", xff)
		conn, res, err := testenv.DialHeader(t, a.ts.URL+"/ws/screenings/s1", h)
		if err != nil {
			t.Fatalf("socket via %s = %v (%v), want it open", xff, status(res), err)
		}
		return conn.Next(t, readWait)
	}
}

// A peer that is not a trusted proxy is its own client, whatever chain it sends: forged private addresses
// do not make it anyone else.
func TestForgedChainFromAnUntrustedPeerCountsAsThePeer(t *testing.T) {
	open := behindProxyApp(t, testenv.New(t, testenv.Embedded), "10.0.0.0/8")
	if m := open("10.1.1.1, 192.168.0.1"); m.Type != "queued" {
		t.Fatalf("first socket = %+v, want queued", m)
	}
	if m := open("10.2.2.2, 172.16.0.9"); m.Type != "error" || m.Code != "RATE_LIMITED" {
		t.Errorf("second socket with another forged chain = %+v, want error RATE_LIMITED (the same peer)", m)
	}
}

// Through two trusted proxies the client is the address left of them; addresses the client wrote further
// left change nothing.
func TestChainThroughTwoTrustedProxiesGivesTheClient(t *testing.T) {
	open := behindProxyApp(t, testenv.New(t, testenv.Embedded), "127.0.0.1", "10.0.0.0/8")
	if m := open("198.51.100.7, 10.0.0.2"); m.Type != "queued" {
		t.Fatalf("first socket of 198.51.100.7 = %+v, want queued", m)
	}
	if m := open("203.0.113.9, 198.51.100.7, 10.0.0.2"); m.Type != "error" || m.Code != "RATE_LIMITED" {
		t.Errorf("198.51.100.7 with a forged address in front = %+v, want error RATE_LIMITED", m)
	}
	if m := open("198.51.100.8, 10.0.0.2"); m.Type != "queued" {
		t.Errorf("another client through the same proxies = %+v, want queued", m)
	}
}

// The addresses of one IPv6 /64 are one client to the limits; another /64 is another.
func TestTwoAddressesOfOneIPv6Slash64ShareABucket(t *testing.T) {
	open := behindProxyApp(t, testenv.New(t, testenv.Embedded), "127.0.0.1")
	if m := open("2001:db8:1:2::1"); m.Type != "queued" {
		t.Fatalf("first socket = %+v, want queued", m)
	}
	if m := open("2001:db8:1:2:ffff:ffff:ffff:ffff"); m.Type != "error" || m.Code != "RATE_LIMITED" {
		t.Errorf("another address of the same /64 = %+v, want error RATE_LIMITED", m)
	}
	if m := open("2001:db8:1:3::1"); m.Type != "queued" {
		t.Errorf("an address of the next /64 = %+v, want queued", m)
	}
}

// The address's limits are checked before the screening is read: a socket over them is told RATE_LIMITED
// even to a screening that does not exist, and one within them that is refused for its screening gives its
// count back.
func TestASocketOverItsLimitIsRefusedBeforeItsScreeningIsRead(t *testing.T) {
	testenv.Each(t, func(t *testing.T, env *testenv.Env) {
		a := newApp(t, env, func(c *config.Config) { c.Limits = config.Limits{SocketsPerAddress: 1} })
		open := func(path string) testenv.Message {
			conn, res, err := a.dial(t, path, "")
			if err != nil {
				t.Fatalf("socket to %s = %v (%v), want it open", path, status(res), err)
			}
			defer conn.Close()
			return conn.Next(t, readWait)
		}
		if m := open("/ws/screenings/nope"); m.Type != "error" || m.Code != "UNKNOWN_SCREENING" {
			t.Fatalf("a socket to an unknown screening = %+v, want error UNKNOWN_SCREENING", m)
		}
		held := a.queuedSocket(t) // the refused socket gave its count back: the address's one socket opens
		defer held.Close()
		if m := open("/ws/screenings/nope"); m.Type != "error" || m.Code != "RATE_LIMITED" {
			t.Errorf("a socket over the limit to an unknown screening = %+v, want error RATE_LIMITED", m)
		}
	})
}
