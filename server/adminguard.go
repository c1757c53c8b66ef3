// The bearer keys' guard: each client address may try a key (the admin key, the confirm key: each its own
// keyGuard) keyAttempts times per keyAttemptWindow; past that it is answered 429 with Retry-After, without
// its key being compared, until its bucket refills. A right key gives its attempt back, so an operator or
// the payment backend is never slowed by their own calls.

package server

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/limit"
)

const (
	// keyAttempts wrong keys an address may send in keyAttemptWindow (a full bucket: a burst of them, then
	// one per keyAttemptWindow/keyAttempts).
	keyAttempts      = 10
	keyAttemptWindow = time.Minute
	// maxGuardedAddresses bounds the addresses a guard remembers at once; past it, the new ones share one
	// bucket (overflowBucket) until the idle ones are forgotten, so a flood of addresses cannot grow the map
	// without end, only slow the other newcomers.
	maxGuardedAddresses = 1 << 16
	overflowBucket      = "overflow"
)

// The keys' names: in a guard's refusal, its realm, and the label of its metrics.
const (
	adminKeyName   = "admin"
	confirmKeyName = "confirm"
)

// keyGuard counts the attempts at one key per address bucket (limit.Bucket). Safe for concurrent use.
type keyGuard struct {
	name    string // adminKeyName, confirmKeyName
	mu      sync.Mutex
	buckets map[string]*attempts
	sweptAt time.Time
}

// attempts is one address's bucket: left attempts at the key, refilled at keyAttempts per
// keyAttemptWindow up to keyAttempts.
type attempts struct {
	left float64
	at   time.Time // when left was counted
}

// refillLocked counts the attempts regained since b.at.
func (b *attempts) refillLocked(now time.Time) {
	if now.After(b.at) {
		b.left = min(keyAttempts, b.left+now.Sub(b.at).Seconds()*keyAttempts/keyAttemptWindow.Seconds())
		b.at = now
	}
}

func newKeyGuard(name string) *keyGuard {
	return &keyGuard{name: name, buckets: map[string]*attempts{}}
}

// attempt takes one of addr's attempts at the key. When none is left it returns how long until one is
// (and takes nothing); otherwise it returns 0 and giveBack, to call if the key was right. Each attempt is
// taken before the key is compared, so parallel guesses are counted as surely as sequential ones.
func (g *keyGuard) attempt(addr string, now time.Time) (wait time.Duration, giveBack func()) {
	key := limit.Bucket(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.buckets[key]
	if b == nil {
		g.sweepLocked(now)
		if len(g.buckets) >= maxGuardedAddresses {
			key = overflowBucket
		}
		if b = g.buckets[key]; b == nil {
			b = &attempts{left: keyAttempts, at: now}
			g.buckets[key] = b
		}
	}
	b.refillLocked(now)
	if b.left < 1 {
		return time.Duration((1 - b.left) * float64(keyAttemptWindow) / keyAttempts), nil
	}
	b.left--
	return 0, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		b.left = min(keyAttempts, b.left+1)
	}
}

// sweepLocked forgets the buckets idle for a whole window (they are full again: nothing is lost), at most
// once per window.
func (g *keyGuard) sweepLocked(now time.Time) {
	if now.Sub(g.sweptAt) < keyAttemptWindow {
		return
	}
	g.sweptAt = now
	for key, b := range g.buckets {
		if now.Sub(b.at) >= keyAttemptWindow {
			delete(g.buckets, key)
		}
	}
}

// checkBearer lets a request through (nil) when its Authorization is "Bearer <want>", compared in constant
// time, from an address that has not used up its attempts at g's key; otherwise it refuses it with wrong
// (401), or 429 while the address is locked out. A request with no Authorization tries no key: it is
// refused with wrong without using an attempt (the control room asks so whether the admin API is on).
func (s *Server) checkBearer(c echo.Context, g *keyGuard, want string, wrong error) error {
	auth := c.Request().Header.Get("Authorization")
	if auth == "" {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="waitroom `+g.name+`"`)
		return wrong
	}
	wait, giveBack := g.attempt(s.clientIP(c.Request()), s.now())
	if wait > 0 {
		s.metrics.keyRefusals.WithLabelValues(g.name, "locked_out").Inc()
		return refuseAttempts(c, g.name, wait)
	}
	got, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		s.metrics.keyRefusals.WithLabelValues(g.name, "wrong_key").Inc()
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="waitroom `+g.name+`"`)
		return wrong
	}
	giveBack()
	return nil
}

// refuseAttempts answers an address that has tried too many wrong keys of the name: 429, Retry-After in
// whole seconds.
func refuseAttempts(c echo.Context, name string, wait time.Duration) error {
	secs := retrySeconds(wait)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return c.JSON(http.StatusTooManyRequests, apiError{Error: apiErrorBody{Code: "TOO_MANY_ATTEMPTS",
		Message: fmt.Sprintf("too many wrong %s keys from your address; retry in %d s", name, secs)}})
}
