// Per-address limits: how many sockets one client address may hold on this instance, and how fast it may
// open new ones (who the client is, the bucket its address is counted in, and the rate per bucket are
// package limit's).

package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/limit"
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
	// Registrations, when set, is that pace, built by the caller to be shared with whatever else registers
	// places for an address (the gate's JSON answers), so that one address has one pace on the instance;
	// nil: built here from RegistrationsPerSecond and RegistrationBurst.
	Registrations *limit.Rate
	// OrdersPerSecond and OrdersBurst pace one address's requests to an order's routes (429 when faster;
	// orders.go).
	OrdersPerSecond float64
	OrdersBurst     int
}

// tooFast answers a request whose address went past one of its paces: 429 RATE_LIMITED, Retry-After
// retryAfterSecs.
func tooFast(c echo.Context, retryAfterSecs, message string) error {
	c.Response().Header().Set("Retry-After", retryAfterSecs)
	return c.JSON(http.StatusTooManyRequests, apiError{Error: apiErrorBody{Code: "RATE_LIMITED", Message: message}})
}

// addressLimits applies Limits per client address. Safe for concurrent use.
type addressLimits struct {
	limits Limits
	rate   *limit.Rate // nil: registrations not paced

	mu      sync.Mutex
	sockets map[string]int
}

func newAddressLimits(l Limits) *addressLimits {
	rate := l.Registrations
	if rate == nil {
		rate = limit.NewRate(l.RegistrationsPerSecond, l.RegistrationBurst)
	}
	return &addressLimits{limits: l, rate: rate, sockets: map[string]int{}}
}

// admit reports whether addr may open one more socket now, and if so counts it: the caller calls release
// with the same addr when the socket is gone. reason says which limit refused. Addresses are counted by
// their bucket (limit.Bucket); a socket refused by the cap spends nothing of the rate.
func (a *addressLimits) admit(addr string, now time.Time) (ok bool, reason string) {
	addr = limit.Bucket(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.limits.SocketsPerAddress > 0 && a.sockets[addr] >= a.limits.SocketsPerAddress {
		return false, "too many sockets from your address"
	}
	if !a.rate.Allow(addr, now) {
		return false, "too many new connections from your address"
	}
	a.sockets[addr]++
	return true, ""
}

// release counts off a socket admit counted.
func (a *addressLimits) release(addr string) {
	addr = limit.Bucket(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sockets[addr] <= 1 {
		delete(a.sockets, addr)
		return
	}
	a.sockets[addr]--
}
