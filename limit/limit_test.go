// Who the client is behind trusted proxies, and the bucket an address is counted in, case by case.

package limit

import (
	"net/http"
	"net/netip"
	"testing"
	"time"
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
	clientOf := ClientAddress(trusted)
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
	if got := ClientAddress(nil)(r); got != "10.0.0.9" {
		t.Errorf("client with no trusted proxies = %s, want the peer 10.0.0.9", got)
	}
}

func TestBucketIsTheIPv4AddressOrTheIPv6Slash64(t *testing.T) {
	for addr, want := range map[string]string{
		"198.51.100.7":          "198.51.100.7",
		"::ffff:198.51.100.7":   "198.51.100.7",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::/64",
		"2001:db8:1:2::1":       "2001:db8:1:2::/64",
		"fe80::1%eth0":          "fe80::/64",
		"not an address at all": "not an address at all",
	} {
		if got := Bucket(addr); got != want {
			t.Errorf("Bucket(%q) = %q, want %q", addr, got, want)
		}
	}
}

func TestRatePacesEachBucketApartAndForgetsTheIdle(t *testing.T) {
	r := NewRate(1, 2)
	now := time.Unix(1_000_000, 0)
	for i, want := range []bool{true, true, false} {
		if got := r.Allow("198.51.100.7", now); got != want {
			t.Errorf("Allow #%d of one address within a second = %v, want %v (burst 2)", i+1, got, want)
		}
	}
	// Another address of the same /64 shares the bucket; another /64 does not.
	if !r.Allow("2001:db8:1:2::1", now) || !r.Allow("2001:db8:1:2::2", now) || r.Allow("2001:db8:1:2::ffff", now) {
		t.Error("two addresses of one IPv6 /64 were paced apart, want one bucket")
	}
	if !r.Allow("2001:db8:1:3::1", now) {
		t.Error("an address of another /64 was refused, want a bucket of its own")
	}
	if !r.Allow("198.51.100.7", now.Add(time.Second)) {
		t.Error("a second later the address was still refused, want one more (1 per second)")
	}
	later := now.Add(2 * idle)
	r.Allow("192.0.2.1", later) // a new bucket sweeps the idle ones
	r.mu.Lock()
	n := len(r.limiters)
	r.mu.Unlock()
	if n != 1 {
		t.Errorf("limiters after every other address was idle for %v = %d, want 1", 2*idle, n)
	}
	if var0 := NewRate(0, 10); var0 != nil || !var0.Allow("x", now) {
		t.Error("NewRate(0, …) = a limit, want nil, which allows everything")
	}
}

func TestSpentTellsAnAddressThatUsedUpItsBurstsWithoutCountingIt(t *testing.T) {
	r := NewRate(1, 3)
	now := time.Now()
	for i := range 3 {
		if r.Spent("192.0.2.1", now) {
			t.Fatalf("spent after %d of a burst of 3", i)
		}
		if !r.Allow("192.0.2.1", now) {
			t.Fatalf("refused the %d. of a burst of 3", i+1)
		}
	}
	if !r.Spent("192.0.2.1", now) {
		t.Fatal("not spent after its burst of 3")
	}
	if !r.Spent("192.0.2.1", now) {
		t.Fatal("asking Spent counted one more use: spent once, then not")
	}
	if r.Spent("192.0.2.2", now) {
		t.Error("an address never seen is spent")
	}
	if r.Spent("192.0.2.1", now.Add(1500*time.Millisecond)) {
		t.Error("still spent after a second and a half at 1/s")
	}
	if (*Rate)(nil).Spent("192.0.2.1", now) {
		t.Error("a nil Rate spent an address")
	}
}
