// Per-address limits: how many sockets one client address may hold on this instance, and how fast it may
// open new ones; who the client is (the TCP peer, or behind trusted proxies the address they forwarded),
// and the bucket an address is counted in (an IPv6 client's whole /64).

package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bounds what one client address may hold and open on this instance: a bot hammering the enqueue
// is slowed and capped, while the many users behind one NAT or office address still get in (the defaults
// are generous; docs/operations.md). Zero turns a limit off.
type Limits struct {
	// SocketsPerAddress caps the open sockets of one address (close 1013 beyond it).
	SocketsPerAddress int
	// RegistrationsPerSecond and RegistrationBurst pace new sockets from one address (close 1013 when
	// faster).
	RegistrationsPerSecond float64
	RegistrationBurst      int
}

// limiterIdle is how long an address's registration limiter is kept after its last use: long enough for
// a full bucket to mean nothing is lost by forgetting it.
const limiterIdle = time.Minute

// addressLimits applies Limits per client address. Safe for concurrent use.
type addressLimits struct {
	limits Limits

	mu       sync.Mutex
	sockets  map[string]int
	limiters map[string]*addrLimiter
	sweptAt  time.Time
}

type addrLimiter struct {
	*rate.Limiter
	usedAt time.Time
}

func newAddressLimits(l Limits) *addressLimits {
	return &addressLimits{limits: l, sockets: map[string]int{}, limiters: map[string]*addrLimiter{}}
}

// admit reports whether addr may open one more socket now, and if so counts it: the caller calls release
// with the same addr when the socket is gone. reason says which limit refused. Addresses are counted by
// their bucket (addressBucket).
func (a *addressLimits) admit(addr string, now time.Time) (ok bool, reason string) {
	addr = addressBucket(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.limits.SocketsPerAddress > 0 && a.sockets[addr] >= a.limits.SocketsPerAddress {
		return false, "too many sockets from your address"
	}
	if a.limits.RegistrationsPerSecond > 0 {
		l := a.limiters[addr]
		if l == nil {
			a.sweepLocked(now)
			l = &addrLimiter{Limiter: rate.NewLimiter(rate.Limit(a.limits.RegistrationsPerSecond), max(a.limits.RegistrationBurst, 1))}
			a.limiters[addr] = l
		}
		l.usedAt = now
		if !l.AllowN(now, 1) {
			return false, "too many new connections from your address"
		}
	}
	a.sockets[addr]++
	return true, ""
}

// release counts off a socket admit counted.
func (a *addressLimits) release(addr string) {
	addr = addressBucket(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sockets[addr] <= 1 {
		delete(a.sockets, addr)
		return
	}
	a.sockets[addr]--
}

// sweepLocked forgets the limiters idle for limiterIdle, at most once per limiterIdle, so the map holds the
// addresses of the last minute or two, not every address ever seen.
func (a *addressLimits) sweepLocked(now time.Time) {
	if now.Sub(a.sweptAt) < limiterIdle {
		return
	}
	a.sweptAt = now
	for addr, l := range a.limiters {
		if now.Sub(l.usedAt) >= limiterIdle {
			delete(a.limiters, addr)
		}
	}
}

// peerAddress is the host part of a "host:port" remote address.
func peerAddress(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}

// ipv6Bucket is the prefix length an IPv6 client is counted by: a subscriber is routed a /64 (or more), so
// counting each of its 2^64 addresses apart would let one client be as many as it likes.
const ipv6Bucket = 64

// addressBucket is the key an address is limited by: an IPv4 address itself (an IPv4-mapped IPv6 address
// as the IPv4 one), an IPv6 address its /64 ("2001:db8:1:2::/64"), and anything that is not an address as
// it is.
func addressBucket(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(ipv6Bucket)
	return p.String()
}

// clientAddress returns how the client of a request is found. Without trusted proxies it is the TCP peer.
// With them, X-Forwarded-For is believed only when the peer is one of them, and then the client is the
// right-most address of the chain that is not a trusted proxy: each trusted hop appended the address it
// saw, and everything left of the first untrusted one was written by the client, who may write anything.
// A chain of trusted proxies only is its left-most address; a hop that is not an address stops the walk at
// the trusted hop right of it.
func clientAddress(trusted []netip.Prefix) func(*http.Request) string {
	if len(trusted) == 0 {
		return func(r *http.Request) string { return peerAddress(r.RemoteAddr) }
	}
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		peer := peerAddress(r.RemoteAddr)
		client, err := netip.ParseAddr(peer)
		if err != nil || !isTrusted(client.Unmap().WithZone("")) {
			return peer
		}
		client = client.Unmap().WithZone("")
		hops := r.Header.Values("X-Forwarded-For")
		for i := len(hops) - 1; i >= 0; i-- {
			for rest := hops[i]; ; {
				comma := strings.LastIndexByte(rest, ',')
				hop, ok := parseHop(rest[comma+1:])
				if !ok {
					return client.String()
				}
				client = hop
				if !isTrusted(hop) {
					return hop.String()
				}
				if comma < 0 {
					break
				}
				rest = rest[:comma]
			}
		}
		return client.String()
	}
}

// parseHop reads one address of X-Forwarded-For: an IPv4 or IPv6 address, bracketed or not, with or
// without a port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}
