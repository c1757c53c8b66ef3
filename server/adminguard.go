// The admin key's guard: each client address may try the admin key adminAttempts times per
// adminAttemptWindow; past that it is answered 429 with Retry-After, without its key being compared, until
// its bucket refills. A right key gives its attempt back, so an operator is never slowed by their own calls.

package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitroom/waitroom/limit"
)

const (
	// adminAttempts wrong admin keys an address may send in adminAttemptWindow (a full bucket: a burst of
	// them, then one per adminAttemptWindow/adminAttempts).
	adminAttempts      = 10
	adminAttemptWindow = time.Minute
	// maxGuardedAddresses bounds the addresses the guard remembers at once; past it, the new ones share one
	// bucket (overflowBucket) until the idle ones are forgotten, so a flood of addresses cannot grow the map
	// without end, only slow the other newcomers.
	maxGuardedAddresses = 1 << 16
	overflowBucket      = "overflow"
)

// adminGuard counts the attempts at the admin key per address bucket (limit.Bucket). Safe for concurrent
// use.
type adminGuard struct {
	mu      sync.Mutex
	buckets map[string]*attempts
	sweptAt time.Time
}

// attempts is one address's bucket: left attempts at the key, refilled at adminAttempts per
// adminAttemptWindow up to adminAttempts.
type attempts struct {
	left float64
	at   time.Time // when left was counted
}

// refillLocked counts the attempts regained since b.at.
func (b *attempts) refillLocked(now time.Time) {
	if now.After(b.at) {
		b.left = min(adminAttempts, b.left+now.Sub(b.at).Seconds()*adminAttempts/adminAttemptWindow.Seconds())
		b.at = now
	}
}

func newAdminGuard() *adminGuard { return &adminGuard{buckets: map[string]*attempts{}} }

// attempt takes one of addr's attempts at the key. When none is left it returns how long until one is
// (and takes nothing); otherwise it returns 0 and giveBack, to call if the key was right. Each attempt is
// taken before the key is compared, so parallel guesses are counted as surely as sequential ones.
func (g *adminGuard) attempt(addr string, now time.Time) (wait time.Duration, giveBack func()) {
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
			b = &attempts{left: adminAttempts, at: now}
			g.buckets[key] = b
		}
	}
	b.refillLocked(now)
	if b.left < 1 {
		return time.Duration((1 - b.left) * float64(adminAttemptWindow) / adminAttempts), nil
	}
	b.left--
	return 0, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		b.left = min(adminAttempts, b.left+1)
	}
}

// sweepLocked forgets the buckets idle for a whole window (they are full again: nothing is lost), at most
// once per window.
func (g *adminGuard) sweepLocked(now time.Time) {
	if now.Sub(g.sweptAt) < adminAttemptWindow {
		return
	}
	g.sweptAt = now
	for key, b := range g.buckets {
		if now.Sub(b.at) >= adminAttemptWindow {
			delete(g.buckets, key)
		}
	}
}

// refuseAttempts answers an address that has tried too many wrong keys: 429, Retry-After in whole seconds.
func refuseAttempts(c echo.Context, wait time.Duration) error {
	secs := int(math.Ceil(wait.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return c.JSON(http.StatusTooManyRequests, apiError{Error: apiErrorBody{Code: "TOO_MANY_ATTEMPTS",
		Message: fmt.Sprintf("too many wrong admin keys from your address; retry in %d s", secs)}})
}
