// Per-address limits: how many sockets one client address may hold on this instance, and how fast it may
// open new ones.

package server

import (
	"net"
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
// when the socket is gone. reason says which limit refused.
func (a *addressLimits) admit(addr string, now time.Time) (ok bool, reason string) {
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
