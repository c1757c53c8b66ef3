// Who the client is behind trusted proxies, and the bucket an address is counted in, case by case.

package server

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientAddressWalksTheChainFromTheRight(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ff::/48")}
	cases := []struct {
		peer string
		xff  []string // one header each
		want string
	}{
		{"203.0.113.5:1234", []string{"10.0.0.1, 192.168.1.1"}, "203.0.113.5"}, // untrusted peer: the chain is not read
		{"10.0.0.9:1234", nil, "10.0.0.9"},                                     // trusted peer, no chain: the peer
		{"10.0.0.9:1234", []string{"198.51.100.1"}, "198.51.100.1"},
		{"10.0.0.9:1234", []string{"1.1.1.1, 198.51.100.1, 10.0.0.3"}, "198.51.100.1"},
		{"10.0.0.9:1234", []string{"1.1.1.1, 198.51.100.1", "10.0.0.3"}, "198.51.100.1"}, // across headers
		{"10.0.0.9:1234", []string{"10.0.0.2, 10.0.0.3"}, "10.0.0.2"},                    // all trusted: the left-most
		{"10.0.0.9:1234", []string{"198.51.100.1, garbage, 10.0.0.3"}, "10.0.0.3"},       // stops at what it cannot read
		{"10.0.0.9:1234", []string{"[2001:db8::1]:443, 10.0.0.3"}, "2001:db8::1"},
		{"10.0.0.9:1234", []string{"198.51.100.1:8080"}, "198.51.100.1"},
		{"[2001:db8:ff::1]:1234", []string{"::ffff:198.51.100.2"}, "198.51.100.2"},
		{"[::ffff:10.0.0.9]:1234", []string{"198.51.100.3"}, "198.51.100.3"},
	}
	clientOf := clientAddress(trusted)
	for _, tc := range cases {
		r := &http.Request{RemoteAddr: tc.peer, Header: http.Header{}}
		for _, h := range tc.xff {
			r.Header.Add("X-Forwarded-For", h)
		}
		if got := clientOf(r); got != tc.want {
			t.Errorf("client of peer %s via %q = %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
	r := &http.Request{RemoteAddr: "10.0.0.9:1234", Header: http.Header{"X-Forwarded-For": {"198.51.100.1"}}}
	if got := clientAddress(nil)(r); got != "10.0.0.9" {
		t.Errorf("client with no trusted proxies = %s, want the peer 10.0.0.9", got)
	}
}

func TestAddressBucketIsTheIPv4AddressOrTheIPv6Slash64(t *testing.T) {
	for addr, want := range map[string]string{
		"198.51.100.7":          "198.51.100.7",
		"::ffff:198.51.100.7":   "198.51.100.7",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::/64",
		"2001:db8:1:2::1":       "2001:db8:1:2::/64",
		"fe80::1%eth0":          "fe80::/64",
		"not an address at all": "not an address at all",
	} {
		if got := addressBucket(addr); got != want {
			t.Errorf("addressBucket(%q) = %q, want %q", addr, got, want)
		}
	}
}
