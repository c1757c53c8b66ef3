// Package limit owns who a client is and how fast one client may go: its address (the TCP peer, or behind
// trusted proxies the address they forwarded), the bucket an address is counted in (an IPv6 client's whole
// /64), and a rate per bucket. The server's per-address limits and the gate's direct admissions use it.
//
// Files: limit.go.
package limit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// idle is how long a bucket's limiter is kept after its last use: long enough for a full bucket to mean
// nothing is lost by forgetting it.
const idle = time.Minute

// Rate paces one client address (its Bucket): perSecond on average, bursts of burst. Safe for concurrent
// use; a nil *Rate allows everything.
type Rate struct {
	perSecond rate.Limit
	burst     int

	mu       sync.Mutex
	limiters map[string]*limiter
	sweptAt  time.Time
}

type limiter struct {
	*rate.Limiter
	usedAt time.Time
}

// NewRate paces each address to perSecond with bursts of burst (at least 1); nil when perSecond is 0 (no
// limit).
func NewRate(perSecond float64, burst int) *Rate {
	if perSecond <= 0 {
		return nil
	}
	return &Rate{perSecond: rate.Limit(perSecond), burst: max(burst, 1), limiters: map[string]*limiter{}}
}

// Allow reports whether addr may go once more at now, and if so counts it.
func (r *Rate) Allow(addr string, now time.Time) bool {
	if r == nil {
		return true
	}
	addr = Bucket(addr)
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.limiters[addr]
	if l == nil {
		r.sweepLocked(now)
		l = &limiter{Limiter: rate.NewLimiter(r.perSecond, r.burst)}
		r.limiters[addr] = l
	}
	l.usedAt = now
	return l.AllowN(now, 1)
}

// Spent reports whether addr has used up its bursts at now: Allow would refuse it. It counts nothing.
func (r *Rate) Spent(addr string, now time.Time) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.limiters[Bucket(addr)]
	return l != nil && l.TokensAt(now) < 1
}

// sweepLocked forgets the limiters idle for idle, at most once per idle, so the map holds the addresses of
// the last minute or two, not every address ever seen.
func (r *Rate) sweepLocked(now time.Time) {
	if now.Sub(r.sweptAt) < idle {
		return
	}
	r.sweptAt = now
	for addr, l := range r.limiters {
		if now.Sub(l.usedAt) >= idle {
			delete(r.limiters, addr)
		}
	}
}

// Peer is the host part of a "host:port" remote address.
func Peer(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}

// ipv6Bucket is the prefix length an IPv6 client is counted by: a subscriber is routed a /64 (or more), so
// counting each of its 2^64 addresses apart would let one client be as many as it likes.
const ipv6Bucket = 64

// Bucket is the key an address is limited by: an IPv4 address itself (an IPv4-mapped IPv6 address
// as the IPv4 one), an IPv6 address its /64 ("2001:db8:1:2::/64"), and anything that is not an address as
// it is.
func Bucket(addr string) string {
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

// ClientAddress returns how the client of a request is found. Without trusted proxies it is the TCP peer.
// With them, X-Forwarded-For is believed only when the peer is one of them, and then the client is the
// right-most address of the chain that is not a trusted proxy: each trusted hop appended the address it
// saw, and everything left of the first untrusted one was written by the client, who may write anything.
// A chain of trusted proxies only is its left-most address; a hop that is not an address stops the walk at
// the trusted hop right of it.
func ClientAddress(trusted []netip.Prefix) func(*http.Request) string {
	if len(trusted) == 0 {
		return func(r *http.Request) string { return Peer(r.RemoteAddr) }
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
		peer := Peer(r.RemoteAddr)
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

// Reached is the scheme and host (with its port, if any) by which r reached this server, as far as it may
// believe them, for the absolute URLs an answer names. From a trusted proxy (a peer in trusted) they are
// the request's Host and X-Forwarded-Proto; from anyone else, who may write any Host, the connection's own
// scheme and the address of the listener it came in on. So a Host line cannot make an answer, or a cache
// that keeps it, name another host.
func Reached(r *http.Request, trusted []netip.Prefix) (scheme, host string) {
	scheme = "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if fromTrusted(r, trusted) {
		first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		if p := strings.ToLower(strings.TrimSpace(first)); p == "http" || p == "https" {
			scheme = p
		}
		return scheme, r.Host
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return scheme, local.String()
	}
	return scheme, r.Host // not served by a net/http server: nothing else to go by
}

// fromTrusted reports whether r's TCP peer is in trusted.
func fromTrusted(r *http.Request, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	peer, err := netip.ParseAddr(Peer(r.RemoteAddr))
	if err != nil {
		return false
	}
	peer = peer.Unmap().WithZone("")
	for _, p := range trusted {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}
